"""API.md Standings and Lists: a member's ledger "lists the transfers and scores behind a
member's row", and every list answers {"items", "next"} with ?limit= and ?cursor=. The
member ledger answered one whole object (transfers, scores, starts) and refused ?limit=: a
client paging it as API.md says got a 422, and one reading `items` got nothing. It keeps
those three lists whole and adds `items` (the same entries, each with its `kind`) paged as
every list is."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.club import Club
from tests.e2e.test_api_clubs import RESULT_A, RESULT_B, League

POINTS_RESULT = {"decisions": {"0": "play", "1": "play"}, "tricks": {"0": 3, "1": 2}}


def _league_with_entries(club: Club) -> tuple[League, list[str], Any, Any]:
    """Ann at a pool table of four hands (the last voided) and a Loo-for-points table of two."""
    lg = League(club)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")]
    pool = lg.table(ms, deal="results", options={"auto_deal": False})
    points = lg.table(ms[:2], scoring="points", deal="results", options={"auto_deal": False})
    for t, result in ((pool, RESULT_A), (points, POINTS_RESULT), (pool, RESULT_B),
                      (points, POINTS_RESULT), (pool, RESULT_A), (pool, RESULT_B)):
        r = club.start(t, {"result": result})
        assert r.status_code == 200, r.get_json()
    r = club.post(pool, "/hands/4/void", {"reason": "entered twice"}, lg.scorer)
    assert r.status_code == 200, r.get_json()
    return lg, ms, pool, points


def _follow(lg: League, path: str, limit: int) -> list[dict[str, Any]]:
    """Every page of `path`, following `next` (bounded: a cursor that loops fails)."""
    sep = "&" if "?" in path else "?"
    page = lg.get(f"{path}{sep}limit={limit}").get_json()
    got = list(page["items"])
    for _ in range(1000):
        assert len(page["items"]) <= limit
        if page["next"] is None:
            return got
        assert page["items"], "a page with a next cursor holds items"
        page = lg.get(f"{path}{sep}limit={limit}&cursor={page['next']}").get_json()
        got += page["items"]
    raise AssertionError("the cursors did not end")


def _key(entry: dict[str, Any]) -> str:
    return json.dumps(entry, sort_keys=True)


def test_standings_member_ledger_pages_its_items_like_every_list_each_entry_once_in_order(
        club: Club):
    lg, ms, pool, points = _league_with_entries(club)
    path = f"/members/{ms[0]}/ledger"
    whole = lg.get(f"{path}?limit=500").get_json()
    items = whole["items"]
    assert whole["next"] is None
    # The whole lists are as they were, whatever the limit.
    for limit in (1, 2, 500):
        book = lg.get(f"{path}?limit={limit}").get_json()
        for name in ("member", "mixed_points", "transfers", "scores", "starts"):
            assert book[name] == whole[name], name
    # items are the transfers, scores and starts, each once, with its kind.
    for kind, name in (("transfer", "transfers"), ("score", "scores"), ("start", "starts")):
        mine = [{k: v for k, v in x.items() if k != "kind"} for x in items if x["kind"] == kind]
        assert sorted(map(_key, mine)) == sorted(map(_key, whole[name])), kind
    assert len(items) == len(whole["transfers"]) + len(whole["scores"]) + len(whole["starts"])
    assert {x["kind"] for x in items} == {"transfer", "score", "start"}
    assert any(x.get("reason") == "void" for x in items)
    assert len(items) > 8  # more than a page at every limit below
    # In the order they came in: a table's entries by version (its start first), and the
    # tables' hands as they were entered, interleaved (pool 1, points 1, pool 2, ...).
    for table in (pool.id, points.id):
        versions = [x.get("version", 0) for x in items if x["table"] == table]
        assert versions == sorted(versions), table
    hands = [(x["table"], x["hand"]) for x in items if x["kind"] != "start"]
    firsts = list(dict.fromkeys(hands))
    assert firsts[:4] == [(pool.id, 1), (points.id, 1), (pool.id, 2), (points.id, 2)]
    # Followed page by page at any limit: exactly the whole list, once each, in order.
    for limit in (1, 2, 3, 7, len(items) - 1, len(items)):
        assert _follow(lg, path, limit) == items, limit
    # The default page is the first 50 (here all of them).
    default = lg.get(path).get_json()
    assert default["items"] == items[:50] and default["next"] is None
    # The filters still apply to items, and page the same way.
    for view, kinds in (("scoring=pool", {"transfer"}), ("scoring=points", {"score", "start"})):
        book = lg.get(f"{path}?{view}&limit=500").get_json()
        assert {x["kind"] for x in book["items"]} == kinds
        assert book["items"] == [x for x in items if x["kind"] in kinds]
        assert _follow(lg, f"{path}?{view}", 2) == book["items"]


def test_standings_member_ledger_pages_skip_nothing_while_hands_are_entered(club: Club):
    """The cursor is a place in a list that only appends: hands entered (and voided) between
    two pages, at either of the member's tables, come after everything already listed, also
    once the pages have passed both tables' entries (listed table by table, a new hand at the
    first table would have gone in before the cursor, and been skipped)."""
    lg, ms, pool, points = _league_with_entries(club)
    path = f"/members/{ms[0]}/ledger"
    before = len(lg.get(f"{path}?limit=500").get_json()["items"])
    page = lg.get(f"{path}?limit=2").get_json()
    seen = list(page["items"])
    writes = [lambda: club.start(pool, {"result": RESULT_B}),
              lambda: club.start(points, {"result": POINTS_RESULT}),
              lambda: club.post(pool, "/hands/5/void", {"reason": "typo"}, lg.scorer),
              lambda: club.start(pool, {"result": RESULT_A})]
    while page["next"] is not None:
        if len(seen) >= before - 3:  # among the last entries: enter the hands once
            for write in writes:
                r = write()
                assert r.status_code == 200, r.get_json()
            writes = []
        page = lg.get(f"{path}?limit=2&cursor={page['next']}").get_json()
        seen += page["items"]
    assert not writes, "the writes fell between two pages"
    whole = lg.get(f"{path}?limit=500").get_json()["items"]
    assert len(whole) > before and seen == whole


def test_lists_member_ledger_refuses_a_bad_limit_or_cursor(club: Club):
    lg, ms, _pool, _points = _league_with_entries(club)
    path = f"/members/{ms[0]}/ledger"
    for bad, code in (("limit=0", "invalid_filter"), ("limit=501", "invalid_filter"),
                      ("limit=two", "invalid_filter"), ("limit=%C2%B2", "invalid_filter"),
                      ("cursor=zz", "invalid_cursor"), ("cursor=", "invalid_cursor"),
                      ("foo=1", "unknown_filter"), ("variant=chess", "invalid_filter")):
        club.problem(lg.get(f"{path}?{bad}"), 422, code)
    first = lg.get(f"{path}?limit=2").get_json()["next"]
    assert first
    # A cursor pages only the ledger and filters that gave it out (the limit may change).
    assert lg.get(f"{path}?limit=5&cursor={first}").status_code == 200
    for other in (f"/members/{ms[1]}/ledger?cursor={first}",
                  f"{path}?scoring=pool&cursor={first}", f"/members?cursor={first}"):
        club.problem(lg.get(other), 422, "invalid_cursor")
    members = lg.get("/members?limit=1").get_json()["next"]
    club.problem(lg.get(f"{path}?cursor={members}"), 422, "invalid_cursor")


def test_lists_the_spec_declares_the_member_ledgers_paging_and_typed_items(club: Club):
    jsonschema_rs = pytest.importorskip("jsonschema_rs")
    from tests.e2e.test_api_contract_reads import _json_schema

    spec = club.c.get("/openapi.json").get_json()
    op = spec["paths"]["/v1/clubs/{club_id}/members/{member_id}/ledger"]["get"]
    params = {p["name"]: p for p in op["parameters"] if p["in"] == "query"}
    assert set(params) == {"season", "variant", "scoring", "limit", "cursor"}
    assert params["limit"]["schema"] == {"type": "integer", "minimum": 1, "maximum": 500,
                                         "default": 50}
    schemas = spec["components"]["schemas"]
    out = schemas["MemberLedgerOut"]
    assert {"items", "next"} <= set(out["required"])
    assert out["properties"]["items"]["items"]["$ref"].endswith("/MemberLedgerItemOut")
    item = schemas["MemberLedgerItemOut"]
    assert item["properties"]["kind"]["enum"] == ["transfer", "score", "start"]
    assert {"kind", "table", "seat"} <= set(item["required"])
    defs = _json_schema(schemas)
    validator = jsonschema_rs.Draft4Validator(
        {"definitions": defs, "$ref": "#/definitions/MemberLedgerOut"})
    lg, ms, _pool, _points = _league_with_entries(club)
    for query in ("limit=500", "limit=2", "scoring=points"):
        body = lg.get(f"/members/{ms[0]}/ledger?{query}").get_json()
        errors = [str(e) for e in validator.iter_errors(body)]
        assert not errors, errors[:3]


def test_lists_a_members_ledger_never_lists_an_entry_another_can_still_come_before(
        pg_url: str, monkeypatch: pytest.MonkeyPatch):
    """API.md Lists, on PostgreSQL: an append takes its positions from its transaction id,
    so one still open (a hand at Ann's table B) can commit entries below those of a later
    append already committed (a hand at her table A). A page read in between listed A's
    entries; B's then came before them, moving the page boundary: a client following
    `next` skipped entries. The ledger is cut where every event has committed (the store's
    high-water mark, as read_all): the answer read while B is open has none of A's new
    entries, and the answer after B commits extends it (nothing comes before an entry
    already listed)."""
    import psycopg

    from ledger.api.app import create_app
    from ledger.app import clubs as app_clubs
    from ledger.bootstrap import Settings, bootstrap
    from ledger.core import commands as c
    from ledger.store.hashing import seal
    from ledger.store.postgres import _WRITING, _payload

    monkeypatch.setattr(app_clubs, "WAIT", 0.3)  # how long a read waits for B: not for ever
    container = bootstrap(Settings(database_url=pg_url))
    try:
        app = create_app(container)
        club = Club(app.test_client())
        lg = League(club)
        ann, bob, cat = (lg.member(n) for n in ("Ann", "Bob", "Cat"))
        a = lg.table([ann, bob], deal="results", options={"auto_deal": False})
        b = lg.table([ann, cat], deal="results", options={"auto_deal": False})
        path = f"/members/{ann}/ledger"
        before = lg.get(path).get_json()["items"]
        led = container.ledger
        p = led.load(b.id)
        events, cause = led._decide(p, c.StartHand(result={  # noqa: SLF001 - B's hand, held
            "decisions": {"0": "play", "1": "play"}, "tricks": {"0": 3, "1": 2}}))
        sealed = seal(b.id, p.version, led.store.load(b.id)[-1].hash,
                      led._envelopes(p, events, cause))  # noqa: SLF001
        with psycopg.connect(pg_url) as held:  # B's append, its transaction left open
            held.execute(f"SELECT {_WRITING}")
            held.execute("SELECT loo_append_after(%s, %s, %s, %s::jsonb, NULL, '', 0)",
                         (b.id, p.version, sealed[0].prev_hash, _payload(sealed)))
            r = club.start(a, {"result": {"decisions": {"0": "play", "1": "play"},
                                          "tricks": {"0": 1, "1": 4}}})
            assert r.status_code == 200, r.get_json()
            during = lg.get(path).get_json()["items"]
            held.commit()
        after = lg.get(path).get_json()["items"]
        assert during == before  # A's entries wait behind B's open append
        assert after[:len(during)] == during
        tables = [x["table"] for x in after[len(during):]]
        assert tables == sorted(tables, key=[b.id, a.id].index) and set(tables) == {a.id, b.id}
    finally:
        container.close()
