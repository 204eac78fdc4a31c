"""API.md Phase 2: clubs, tokens with roles, members, seasons, club tables, lists, standings."""

from __future__ import annotations

import csv
import io
import json

import pytest

from tests.e2e.club import Club, Table

RESULT_A = {"decisions": {"0": "play", "1": "play", "2": "drop", "3": "play"},
            "tricks": {"0": 3, "1": 2, "2": 0, "3": 0}}
RESULT_B = {"decisions": {"0": "play", "1": "play", "2": "play", "3": "play"},
            "tricks": {"0": 0, "1": 1, "2": 1, "3": 3}}


class League:
    """A club as its scorer would drive it over HTTP."""

    def __init__(self, club: Club, name: str = "Red Lion") -> None:
        self.c = club.c
        r = self.c.post("/v1/clubs", json={"name": name})
        assert r.status_code == 201, r.get_json()
        self.created = r.get_json()
        self.id, self.owner = self.created["id"], self.created["token"]
        self.scorer = self.token("scorer")
        self.viewer = self.token("viewer")

    def h(self, token: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"} if token else {}

    def url(self, path: str = "") -> str:
        return f"/v1/clubs/{self.id}{path}"

    def token(self, role: str) -> str:
        r = self.c.post(self.url("/tokens"), json={"role": role, "label": role},
                        headers=self.h(self.owner))
        assert r.status_code == 201, r.get_json()
        return r.get_json()["token"]

    def member(self, name: str, external_id: str | None = None) -> str:
        r = self.c.post(self.url("/members"), json={"name": name, "external_id": external_id},
                        headers=self.h(self.scorer))
        assert r.status_code == 201, r.get_json()
        return r.get_json()["id"]

    def season(self, name: str = "Winter") -> str:
        r = self.c.post(self.url("/seasons"), json={"name": name, "starts_on": "2026-11-01"},
                        headers=self.h(self.scorer))
        assert r.status_code == 201, r.get_json()
        return r.get_json()["id"]

    def table(self, members: list[str], season: str | None = None, **body) -> Table:
        body = {"seats": [{"member": m} for m in members], "first_dealer": 0,
                "season": season} | body
        r = self.c.post(self.url("/tables"), json=body, headers=self.h(self.scorer))
        assert r.status_code == 201, r.get_json()
        j = r.get_json()
        return Table(j["id"], j["admin_token"], [s["token"] for s in j["seats"]], j)

    def get(self, path: str, token: str | None = None, headers: dict | None = None):
        return self.c.get(self.url(path), headers=self.h(token or self.viewer) | (headers or {}))


def _play_out(club: Club, t: Table, token: str, hands: int) -> None:
    """Play a shuffled table's first hands by its seats' first legal action."""
    while True:
        view = club.view(t, token)
        if view["hand"] is None or view["hand"]["number"] > hands or view["status"] != "playing":
            return
        if view["hand"]["number"] == hands and view["hand"]["phase"] == "complete":
            return
        seat = view["hand"]["turn"]
        club.ok(t, club.view(t, t.seats[seat])["legal_actions"][0], t.seats[seat])


def test_a_season_of_tables_in_three_deal_modes_adds_up_to_the_standings(club: Club):
    lg = League(club)
    ms = [lg.member(n, f"M{i}") for i, n in enumerate(["Ann", "Bob", "=cmd()", "Dan"])]
    season = lg.season()
    results = lg.table(ms, season, deal="results", options={"auto_deal": False})
    for r in (RESULT_A, RESULT_B):
        assert club.start(results, {"result": r}).status_code == 200
    shuffled = lg.table(ms[::-1], season, options={"auto_deal": False})
    assert club.start(shuffled).status_code == 200
    _play_out(club, shuffled, lg.scorer, 1)  # the club's scorer token is the table's admin
    recorded = lg.table(ms, season, deal="recorded", options={"auto_deal": False})
    deal = {"hands": {"0": ["6-6", "6-5", "6-4", "6-3", "6-2"],
                      "1": ["5-5", "5-4", "5-3", "5-2", "5-1"],
                      "2": ["4-4", "4-3", "4-2", "4-1", "4-0"],
                      "3": ["3-3", "3-2", "3-1", "3-0", "2-2"]}, "turn_up": "1-1"}
    assert club.start(recorded, deal).status_code == 200
    other = lg.table(ms, None, deal="results")
    assert club.start(other, {"result": RESULT_B}).status_code == 200
    # An independent sum from each table's own ledger, seat by seat.
    expected: dict[str, int] = dict.fromkeys(ms, 0)
    for t, members in ((results, ms), (shuffled, ms[::-1]), (recorded, ms)):
        balances = club.get(t, lg.viewer, "/ledger").get_json()["balances"]
        for seat, mid in enumerate(members):
            expected[mid] += balances[f"seat:{seat}"]
    body = lg.get(f"/standings?season={season}").get_json()
    assert {r["member"]: r["chips"] for r in body["rows"]} == expected
    chips = [r["chips"] for r in body["rows"]]
    # (the shuffled table's deal is random: two members may tie, and then share a rank)
    assert [r["rank"] for r in body["rows"]] == [1 + sum(c > x for c in chips) for x in chips]
    assert chips == sorted(chips, reverse=True) and body["as_of"] > 0
    assert all(r["tables"] == 3 for r in body["rows"])
    everything = lg.get("/standings").get_json()
    assert all(r["tables"] == 4 for r in everything["rows"])  # the table outside the season
    # CSV: the same rows, a header line, and a formula made inert.
    r = lg.get(f"/standings?season={season}", headers={"Accept": "text/csv"})
    assert r.mimetype == "text/csv"
    rows = list(csv.DictReader(io.StringIO(r.data.decode())))
    assert [int(x["chips"]) for x in rows] == chips
    assert {x["name"] for x in rows} == {"Ann", "Bob", "'=cmd()", "Dan"}
    assert lg.get(f"/standings?season={season}&format=csv").data == r.data
    # Every figure traces to its event.
    book = lg.get(f"/members/{ms[0]}/ledger?season={season}").get_json()
    assert sum(x["amount"] if x["to"] != "pool" else -x["amount"]
               for x in book["transfers"]) == expected[ms[0]]
    assert all({"table", "hand", "version"} <= set(x) for x in book["transfers"])


def test_tenancy_another_clubs_token_and_table_tokens_open_nothing(club: Club):
    lg, other = League(club), League(club, "Crown")
    mid = lg.member("Ann")
    t = lg.table([mid, lg.member("Bob")], None, deal="results")
    outsider = [other.owner, other.scorer, other.viewer, t.admin, t.seats[0]]
    paths = ["", "/tokens", "/members", f"/members/{mid}", "/seasons", "/tables",
             "/standings", f"/members/{mid}/ledger"]
    for token in outsider:
        for path in paths:
            r = lg.get(path, token)
            # a token of another club or of a table opens nothing here: a bad token, as at
            # a table (401 invalid_token), not a permission of this club's (403)
            assert r.status_code == 401, (path, r.get_json())
            assert r.get_json()["code"] == "invalid_token"
            assert mid not in r.data.decode() and "Ann" not in r.data.decode()
        r = club.c.post(lg.url("/members"), json={"name": "Eve"}, headers=lg.h(token))
        assert r.status_code == 401
    assert club.c.get(lg.url("")).status_code == 401
    assert club.c.get("/v1/clubs/club_0000000000000000",
                      headers=lg.h(lg.owner)).status_code == 404
    # A club's token opens only its own club's tables.
    club.problem(club.get(t, other.owner), 401)
    assert club.get(t, lg.viewer).get_json()["viewer"]["role"] == "spectator"
    assert club.get(t, lg.scorer).get_json()["viewer"]["role"] == "admin"


def test_roles_and_revocation(club: Club):
    lg = League(club)
    r = club.c.post(lg.url("/members"), json={"name": "Eve"}, headers=lg.h(lg.viewer))
    assert r.status_code == 403 and r.get_json()["code"] == "role_not_allowed"
    r = club.c.post(lg.url("/tokens"), json={"role": "owner"}, headers=lg.h(lg.scorer))
    assert r.status_code == 403
    listed = lg.get("/tokens", lg.owner).get_json()["items"]
    assert {x["role"] for x in listed} == {"owner", "scorer", "viewer"}
    assert all("token" not in x for x in listed)
    tid = next(x["id"] for x in listed if x["role"] == "viewer")
    assert club.c.delete(lg.url(f"/tokens/{tid}"), headers=lg.h(lg.owner)).status_code == 204
    assert lg.get("").status_code == 401  # revoked at once: a bad token
    assert club.c.delete(lg.url(f"/tokens/{tid}"), headers=lg.h(lg.owner)).status_code == 404


def test_bad_input_is_refused_and_changes_nothing(club: Club):
    lg, other = League(club), League(club, "Crown")
    mid = lg.member("Ann", "A1")
    version = lg.get("").get_json()["version"]
    r = club.c.post(lg.url("/members"), json={"name": "Ann2", "external_id": "A1"},
                    headers=lg.h(lg.scorer))
    assert r.status_code == 409 and r.get_json()["code"] == "duplicate_external_id"
    foreign = other.member("Zed")
    r = club.c.post(lg.url("/tables"), json={"seats": [{"member": mid}, {"member": foreign}]},
                    headers=lg.h(lg.scorer))
    assert r.status_code == 422 and r.get_json()["code"] == "unknown_member"
    assert lg.get(f"/members/{foreign}").status_code == 404
    season = lg.season()
    assert club.c.post(lg.url(f"/seasons/{season}/close"), json={},
                       headers=lg.h(lg.scorer)).status_code == 200
    version = lg.get("").get_json()["version"]
    r = club.c.post(lg.url("/tables"), json={"seats": [{"member": mid}, {"name": "Guest"}],
                                             "season": season}, headers=lg.h(lg.scorer))
    assert r.status_code == 422 and r.get_json()["code"] == "season_closed"
    for q in ("limit=0", "limit=501", "limit=x", "cursor=%%%", "archived=maybe", "colour=red"):
        r = lg.get(f"/members?{q}")
        assert r.status_code == 422, q
        assert r.mimetype == "application/problem+json"
    assert lg.get("").get_json()["version"] == version


def test_lists_page_with_an_opaque_cursor(club: Club):
    lg = League(club)
    ids = [lg.member(f"P{i:02}") for i in range(7)]
    seen, cursor = [], None
    while True:
        r = lg.get("/members?limit=3" + (f"&cursor={cursor}" if cursor else "")).get_json()
        seen += [m["id"] for m in r["items"]]
        cursor = r["next"]
        if cursor is None:
            break
    assert seen == ids
    assert [m["name"] for m in lg.get("/members?q=p0").get_json()["items"]][:2] == ["P00", "P01"]
    archived = club.c.post(lg.url(f"/members/{ids[0]}/archive"), json={},
                           headers=lg.h(lg.scorer))
    assert archived.get_json()["archived"] is True
    assert [m["id"] for m in lg.get("/members?archived=true").get_json()["items"]] == ids[:1]
    renamed = club.c.patch(lg.url(f"/members/{ids[1]}"), json={"name": "Pat"},
                           headers=lg.h(lg.scorer))
    assert renamed.get_json()["name"] == "Pat"


def test_operator_token_gates_club_creation(club: Club, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("LOO_OPERATOR_TOKEN", "op-secret")
    assert club.c.post("/v1/clubs", json={"name": "X"}).status_code == 401
    assert club.c.post("/v1/clubs", json={"name": "X"},
                       headers={"Authorization": "Bearer nope"}).status_code == 401
    assert club.c.post("/v1/clubs", json={"name": "X"},
                       headers={"Authorization": "Bearer op-secret"}).status_code == 201


def test_a_club_scorer_voids_a_hand_and_the_standings_follow(club: Club):
    lg = League(club)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")]
    t = lg.table(ms, None, deal="results")
    assert club.start(t, {"result": RESULT_A}).status_code == 200
    r = club.post(t, "/hands/1/void", {"reason": "wrong table"}, lg.scorer)
    assert r.status_code == 200, r.get_json()
    assert {row["chips"] for row in lg.get("/standings").get_json()["rows"]} == {0}
    r = club.post(t, "/hands/1/void", {"reason": "again"}, lg.viewer)
    assert r.status_code == 403


def test_import_a_tables_history_into_a_club_and_export_it_again(club: Club):
    lg = League(club)
    source = club.create(first_dealer=0, options={"auto_deal": False})
    for _ in range(2):
        assert club.start(source).status_code == 200
        n = club.view(source)["hand"]["number"]
        _play_out(club, source, source.admin, n)
    ndjson = club.get(source, path="/history").data
    r = club.c.post(lg.url("/tables/import"), data=ndjson,
                    headers=lg.h(lg.scorer) | {"Content-Type": "application/x-ndjson"})
    assert r.status_code == 201, r.get_json()
    new = r.get_json()
    assert new["hands"] == 2 and lg.get("/tables").get_json()["items"][-1]["id"] == new["id"]
    again = club.c.get(f"/v1/tables/{new['id']}/history", headers=lg.h(lg.viewer)).data
    import json

    old_docs = [json.loads(x) for x in ndjson.splitlines()]
    new_docs = [json.loads(x) for x in again.splitlines()]
    assert [d["hand"]["actions"] for d in new_docs] == [d["hand"]["actions"] for d in old_docs]
    assert [d["hand"]["deal"] for d in new_docs] == [d["hand"]["deal"] for d in old_docs]
    # A swapped tile: refused whole, naming the problem; nothing created.
    tables = len(lg.get("/tables").get_json()["items"])
    bad = ndjson.replace(b'"6-6"', b'"0-0"', 1) if b'"6-6"' in ndjson else ndjson[:-40]
    r = club.c.post(lg.url("/tables/import"), data=bad,
                    headers=lg.h(lg.scorer) | {"Content-Type": "application/x-ndjson"})
    assert r.status_code == 422 and r.get_json()["code"] == "import_refused"
    assert len(lg.get("/tables").get_json()["items"]) == tables
    r = club.c.post(lg.url("/tables/import"), data=ndjson,
                    headers=lg.h(lg.viewer) | {"Content-Type": "application/x-ndjson"})
    assert r.status_code == 403


def test_the_club_feed_follows_every_stream_in_position_order_without_hidden_tiles(club: Club):
    lg = League(club)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")]
    t = lg.table(ms, None)  # shuffled: hand 1 is live
    outside = club.create(first_dealer=0)  # not the club's: never in its feed
    seen, after = [], 0
    while True:
        page = lg.get(f"/events?after={after}&limit=7").get_json()
        seen += page["events"]
        if not page["events"]:
            break
        after = page["next"]
    positions = [e["position"] for e in seen]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    assert {e["stream"] for e in seen} == {"club", t.id} and outside.id not in str(seen)
    dealt = [e for e in seen if e["type"] == "tiles_dealt"]
    assert dealt and all(isinstance(h, dict) for e in dealt for h in e["data"]["hands"].values())
    assert lg.get("/events?after=x").status_code == 422
    assert lg.get("/events", lg.created["token"]).status_code == 200
    assert club.c.get(lg.url("/events"), headers=lg.h(t.admin)).status_code == 401


def test_club_history_streams_every_complete_hand_of_its_tables(club: Club):
    import json

    from ledger.app.verify import verify_document

    lg = League(club)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")]
    season = lg.season()
    a = lg.table(ms, season, deal="results")
    b = lg.table(ms, None, deal="results")
    for t, results in ((a, (RESULT_A, RESULT_B)), (b, (RESULT_B,))):
        for r in results:
            assert club.start(t, {"result": r}).status_code == 200
    r = lg.get("/history")
    assert r.mimetype == "application/x-ndjson"
    docs = [json.loads(line) for line in r.data.splitlines()]
    assert [(d["table"]["id"], d["hand"]["number"]) for d in docs] == [
        (a.id, 1), (a.id, 2), (b.id, 1)]
    for d in docs:
        verify_document(d)
    only = [json.loads(x) for x in lg.get(f"/history?season={season}").data.splitlines()]
    assert {d["table"]["id"] for d in only} == {a.id}
    assert lg.get("/history?until=2000-01-01").data == b""
    assert lg.get("/history?since=yesterday").status_code == 422
    # An inverted range was an empty 200, silently (history audit): API.md Lists' "a bad
    # value is a 422". One day (since = until) is a range; so is either end alone.
    r = lg.get("/history?since=2030-01-02&until=2030-01-01")
    assert r.status_code == 422 and r.get_json()["code"] == "invalid_filter"
    assert "before since" in r.get_json()["detail"]
    assert lg.get("/history?since=2000-01-01&until=2000-01-01").status_code == 200


def test_a_club_table_created_twice_with_one_idempotency_key_is_one_table(club: Club):
    lg = League(club)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")]
    body = {"seats": [{"member": m} for m in ms], "first_dealer": 0, "deal": "results"}
    h = lg.h(lg.scorer) | {"Idempotency-Key": "evening-1-table-1"}
    first = club.c.post(lg.url("/tables"), json=body, headers=h)
    again = club.c.post(lg.url("/tables"), json=body, headers=h)
    assert first.status_code == again.status_code == 201
    assert again.get_json() == first.get_json()  # same id, same tokens, same table
    listed = lg.get("/tables").get_json()["items"]
    assert [t["id"] for t in listed] == [first.get_json()["id"]]
    other = club.c.post(lg.url("/tables"), json=body | {"first_dealer": 1}, headers=h)
    club.problem(other, 409, "idempotency_conflict")
    assert len(lg.get("/tables").get_json()["items"]) == 1


def test_club_tables_a_store_failure_creates_neither_the_table_nor_its_listing(
        club: Club, app, monkeypatch):
    """API.md Club tables: a club table and its listing in the club's stream commit in one
    transaction: a store that fails under it leaves neither (no table outside the club's
    list), and the retry with the key creates both."""
    from ledger.api.clubs import clubs
    from ledger.store.base import StoreUnavailable

    lg = League(club)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")]
    body = {"seats": [{"member": m} for m in ms], "first_dealer": 0, "deal": "results"}
    h = lg.h(lg.scorer) | {"Idempotency-Key": "cut-off"}
    with app.app_context():
        store = clubs().store
    real = type(store).append_batches

    def down(self, *args, **kwargs):
        raise StoreUnavailable("the database went away")

    monkeypatch.setattr(type(store), "append_batches", down)
    club.problem(club.c.post(lg.url("/tables"), json=body, headers=h), 503)
    monkeypatch.setattr(type(store), "append_batches", real)
    assert lg.get("/tables").get_json()["items"] == []
    assert tables_created(store, lg.id) == []
    r = club.c.post(lg.url("/tables"), json=body, headers=h)
    assert r.status_code == 201, r.get_json()
    assert [t["id"] for t in lg.get("/tables").get_json()["items"]] == [r.get_json()["id"]]


def test_a_retry_completes_the_club_link_a_failure_cut_off(club: Club, app, monkeypatch):
    """A table created before a table and its listing committed together, cut off between
    the two (committed, never listed): the retry with its key completes the listing."""
    from ledger.app.service import Ledger
    from ledger.store.base import StoreUnavailable

    lg = League(club)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")]
    body = {"seats": [{"member": m} for m in ms], "first_dealer": 0, "deal": "results"}
    h = lg.h(lg.scorer) | {"Idempotency-Key": "cut-off"}
    real = Ledger._store_append

    def unlisted(self, *args):  # the table's append alone, then the cut
        real(self, *args[:-1], None)
        raise StoreUnavailable("the database went away between the two appends")

    monkeypatch.setattr(Ledger, "_store_append", unlisted)
    club.problem(club.c.post(lg.url("/tables"), json=body, headers=h), 503)
    assert lg.get("/tables").get_json()["items"] == []
    monkeypatch.setattr(Ledger, "_store_append", real)
    r = club.c.post(lg.url("/tables"), json=body, headers=h)
    assert r.status_code == 201, r.get_json()
    assert [t["id"] for t in lg.get("/tables").get_json()["items"]] == [r.get_json()["id"]]


def test_club_tables_two_creates_with_one_expected_version_create_one_table(club: Club, app):
    """API.md Conventions: a write's expected_version is the club's version the client last
    saw. Two scorers creating a table at once with the same expected_version (real threads,
    released together): one table is created and listed, the other request is a 409
    version_conflict that creates nothing (no table outside the club's list). The table and
    its listing commit together, at the version checked."""
    import threading

    from ledger.api.clubs import clubs

    lg = League(club)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")]
    with app.app_context():
        store = clubs().store

    def create(gate: threading.Barrier, out: list, i: int, version: int) -> None:
        body = {"seats": [{"member": m} for m in ms], "first_dealer": 0, "deal": "results",
                "expected_version": version}
        client = app.test_client()
        gate.wait()
        out[i] = client.post(lg.url("/tables"), json=body, headers=lg.h(lg.scorer))

    for _ in range(4):
        version = lg.get("").get_json()["version"]
        gate, out = threading.Barrier(2), [None, None]
        threads = [threading.Thread(target=create, args=(gate, out, i, version))
                   for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        codes = sorted(r.status_code for r in out)
        assert codes == [201, 409], [r.get_json() for r in out]
        lost = next(r for r in out if r.status_code == 409)
        assert lost.get_json()["code"] == "version_conflict"
        assert lg.get("").get_json()["version"] == version + 1
    listed = [t["id"] for t in lg.get("/tables?limit=500").get_json()["items"]]
    assert len(listed) == 4 and sorted(tables_created(store, lg.id)) == sorted(listed)


def tables_created(store, club_id: str) -> list[str]:
    """Every table created for the club (table_created naming it), listed or not
    (PostgreSQL's read_all may hold back the newest while an appender is still open:
    followed up to the head, with a deadline)."""
    import time

    head, after, seen = store.head_position(), 0, []
    deadline = time.monotonic() + 20
    while after < head and time.monotonic() < deadline:
        page = store.read_all(after, 1000)
        seen += page
        after = page[-1].position if page else after
    return [s.table_id for s in seen
            if s.type == "table_created" and s.data.get("club") == club_id]


def test_the_club_table_list_counts_every_settled_hand_past_the_correction_window(club: Club):
    lg = League(club)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")]
    t = lg.table(ms, deal="results")
    for _ in range(70):  # more than the 64 hands a correction can reach back
        r = club.start(t, {"result": RESULT_A})
        assert r.status_code == 200, r.get_json()
    assert club.post(t, "/hands/70/void", {"reason": "typo"}).status_code == 200
    (item,) = lg.get("/tables").get_json()["items"]
    assert item["hands"] == 69


def test_equal_chips_share_a_rank_in_json_and_csv(club: Club):
    """API.md Standings ranks by chips (pool): two members with the same chips share the
    better rank and the next member's rank counts both (1, 1, 3: standard competition
    ranking), ordered within the tie by name; the CSV says the same ranks."""
    lg = League(club)
    ms = [lg.member(n) for n in ("Dan", "Zed", "Amy", "Cat")]
    t = lg.table(ms, deal="results")
    tie = {"decisions": {"0": "play", "1": "play", "2": "play", "3": "play"},
           "tricks": {"0": 1, "1": 2, "2": 2, "3": 0}}  # Zed and Amy: same stake, 2 tricks
    assert club.start(t, {"result": tie}).status_code == 200
    rows = lg.get("/standings").get_json()["rows"]
    chips = {r["name"]: r["chips"] for r in rows}
    assert chips["Zed"] == chips["Amy"] > chips["Dan"] > chips["Cat"], chips
    assert [(r["rank"], r["name"]) for r in rows] == [(1, "Amy"), (1, "Zed"), (3, "Dan"),
                                                      (4, "Cat")]
    csv_rows = list(csv.DictReader(io.StringIO(
        lg.get("/standings?format=csv").data.decode())))
    assert [(int(r["rank"]), r["name"]) for r in csv_rows] == [
        (r["rank"], r["name"]) for r in rows]


def test_a_members_ledger_adds_up_to_the_standings_points_of_a_rounce_table(club: Club):
    """Rounce counts down from 15: the standings' points include each table's start, which
    the member ledger did not list, so its scores summed to -3 where the row said 12 (and the
    standings page charted -3). The ledger now names each points table's start."""
    lg = League(club)
    ms = [lg.member(n) for n in ("Bob", "Cat")]
    rounce = lg.table(ms, variant="rounce", deal="results")
    loo = lg.table(ms[::-1], scoring="points", deal="results")
    for t in (rounce, loo):
        r = club.start(t, {"result": {"decisions": {"0": "play", "1": "play"},
                                      "tricks": {"0": 3, "1": 2}}})
        assert r.status_code == 200, r.get_json()
    for view, starts, expected in (("variant=rounce", {rounce.id: 15}, {ms[0]: 12, ms[1]: 13}),
                                   ("variant=loo&scoring=points", {loo.id: 0},
                                    {ms[0]: 2, ms[1]: 3})):
        body = lg.get(f"/standings?{view}").get_json()
        rows = {r["member"]: r["points"] for r in body["rows"]}
        assert rows == expected and body["mixed_points"] is False
        for mid in ms:
            book = lg.get(f"/members/{mid}/ledger?{view}").get_json()
            assert {s["table"]: s["points"] for s in book["starts"]} == starts
            assert sum(s["points"] for s in book["starts"]) + sum(
                s["delta"] for s in book["scores"]) == rows[mid]
            assert sum(s["counted"] for s in book["starts"] + book["scores"]) == rows[mid]


def test_a_view_mixing_loo_and_rounce_points_counts_rounce_up_and_ranks_the_best_first(
        club: Club):
    """RULES §9: Loo for points counts up from 0, Rounce down from 15. A view of both summed
    the two kinds of points into one figure and ranked the most first: a member rounced at
    Rounce (15 + 5 = 20) led one who took every trick there (15 - 5 = 10). A mixed view now
    counts each Rounce table as its target minus its score (points made toward winning), in
    the JSON, the CSV and the member ledger alike; a Rounce-only view keeps its scores."""
    lg = League(club)
    ms = [lg.member(n) for n in ("Bob", "Cat")]
    season = lg.season()
    rounce = lg.table(ms, season, variant="rounce", deal="results")
    loo = lg.table(ms[::-1], season, scoring="points", deal="results")
    for t, tricks in ((rounce, {"0": 5, "1": 0}), (loo, {"0": 3, "1": 2})):
        r = club.start(t, {"result": {"decisions": {"0": "play", "1": "play"},
                                      "tricks": tricks}})
        assert r.status_code == 200, r.get_json()
    bob, cat = ms
    # Bob: Rounce 15 - 10 = 5 made, Loo 2; Cat: Rounce rounced, 15 - 20 = -5, Loo 3.
    for view in ("", "?scoring=points", f"?season={season}", f"?season={season}&scoring=points"):
        body = lg.get(f"/standings{view}").get_json()
        assert body["mixed_points"] is True, view
        assert {r["member"]: r["points"] for r in body["rows"]} == {bob: 7, cat: -2}, view
        if "scoring=points" in view:  # ranked by games won, then the most points
            assert [(r["rank"], r["member"]) for r in body["rows"]] == [(1, bob), (2, cat)]
        csv_rows = list(csv.DictReader(io.StringIO(
            lg.get(f"/standings{view}", headers={"Accept": "text/csv"}).data.decode())))
        assert [(r["member"], int(r["points"]), int(r["rank"])) for r in csv_rows] == [
            (r["member"], r["points"], r["rank"]) for r in body["rows"]]
        ledger_view = view.replace("?", "&").lstrip("&")
        for row in body["rows"]:
            book = lg.get(f"/members/{row['member']}/ledger?{ledger_view}").get_json()
            assert book["mixed_points"] is True
            assert sum(x["counted"] for x in book["starts"] + book["scores"]) == row["points"]
            assert {x["table"]: x["counted"] for x in book["starts"]} == {rounce.id: 0, loo.id: 0}
    # A Rounce-only view: the scores as Rounce keeps them, the fewest first.
    body = lg.get("/standings?variant=rounce").get_json()
    assert body["mixed_points"] is False
    assert [(r["member"], r["points"]) for r in body["rows"]] == [(bob, 10), (cat, 20)]
    book = lg.get(f"/members/{cat}/ledger?variant=rounce").get_json()
    assert sum(x["counted"] for x in book["starts"] + book["scores"]) == 20
    # Loo only: unchanged.
    body = lg.get("/standings?variant=loo&scoring=points").get_json()
    assert [(r["member"], r["points"]) for r in body["rows"]] == [(cat, 3), (bob, 2)]


def test_club_tables_a_seat_naming_a_member_and_another_name_is_refused(club: Club):
    """API.md Club tables: a seat naming {"member": mid} takes its name from the member. A
    seat that also sends another "name" was seated under the member's name without a word
    (the scorer believed they had seated "Bob"); it is a 422 naming the seat, and nothing is
    created. The member's own name beside it (a seat copied from GET) is accepted."""
    lg = League(club)
    ann, cat = lg.member("Ann"), lg.member("Cat")
    before = lg.get("/tables").get_json()["items"]
    r = club.c.post(lg.url("/tables"), headers=lg.h(lg.scorer), json={
        "seats": [{"member": ann, "name": "Bob"}, {"member": cat}], "first_dealer": 0})
    j = club.problem(r, 422, "seat_name_not_members")
    assert "seats.0.name" in json.dumps(j) and "Ann" in j["detail"] and "Bob" in j["detail"]
    assert lg.get("/tables").get_json()["items"] == before
    t = lg.table([ann, cat], seats=[{"member": ann, "name": "Ann"}, {"member": cat},
                                    {"name": "Guest"}])
    assert [s["name"] for s in t.created["seats"]] == ["Ann", "Cat", "Guest"]


def test_club_tables_and_seasons_closing_a_closed_season_again_answers_as_the_first_close(
        club: Club):
    """API.md Club tables and seasons: `close` ends a season. A retried close (a lost answer,
    a double click) is harmless: it answers as the first close did (200, the season closed)
    and appends nothing, with or without an Idempotency-Key, as archiving an archived member
    does. A stale expected_version is still a 409."""
    lg = League(club)
    season = lg.season()
    url, h = lg.url(f"/seasons/{season}/close"), lg.h(lg.scorer)
    first = club.c.post(url, json={}, headers=h)
    assert first.status_code == 200, first.get_json()
    version = lg.get("").get_json()["version"]
    for headers in (h, h | {"Idempotency-Key": "close-again"}):
        again = club.c.post(url, json={}, headers=headers)
        assert again.status_code == 200, again.get_json()
        assert again.get_json() == first.get_json()
    again = club.c.post(url, json={"expected_version": version}, headers=h)
    assert (again.status_code, again.get_json()) == (200, first.get_json())
    assert lg.get("").get_json()["version"] == version
    r = club.c.post(url, json={"expected_version": version - 1}, headers=h)
    club.problem(r, 409, "version_conflict")


def test_clubs_tokens_members_the_clubs_members_count_is_of_its_active_members(club: Club):
    """API.md Clubs, tokens, members: GET /v1/clubs/{id} gives `members`: n, the people who
    play across its tables. An archived member plays at no new table, so it is not counted
    there; `archived_members` counts those (members are never deleted: the two add up to
    every member the club has had)."""
    lg = League(club)
    ids = [lg.member(n) for n in ("Ann", "Bob", "Cat")]
    assert (lg.get("").get_json()["members"], lg.get("").get_json()["archived_members"]) \
        == (3, 0)
    r = club.c.post(lg.url(f"/members/{ids[1]}/archive"), json={}, headers=lg.h(lg.scorer))
    assert r.status_code == 200, r.get_json()
    got = lg.get("").get_json()
    assert (got["members"], got["archived_members"]) == (2, 1)
    active = lg.get("/members?archived=false").get_json()["items"]
    assert got["members"] == len(active)


def test_standings_list_every_active_member_those_who_never_played_with_zeros(club: Club):
    """API.md Standings: the league table of the club's members. A member who has not
    played (in the view) has a row of zeros, ranked by them as any row is (sorted by chips
    for pool scoring: a member at 0 chips ranks above one who lost chips, level with one
    who broke even); an archived member who never played has none. In a view of Rounce
    tables only, where the fewest points rank first, a member with no table there ranks
    after every member who played one (0 points would otherwise look best)."""
    lg = League(club)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")]
    idle, gone = lg.member("Eve"), lg.member("Fay")
    r = club.c.post(lg.url(f"/members/{gone}/archive"), json={}, headers=lg.h(lg.scorer))
    assert r.status_code == 200, r.get_json()
    t = lg.table(ms, deal="results", options={"auto_deal": False})
    assert club.start(t, {"result": RESULT_A}).status_code == 200
    rows = lg.get("/standings").get_json()["rows"]
    assert {r["member"] for r in rows} == {*ms, idle}
    eve = next(r for r in rows if r["member"] == idle)
    assert eve["name"] == "Eve" and eve["tables"] == eve["hands"] == eve["chips"] == 0
    assert all(eve[f] == 0 for f in ("points", "games_won", "tricks", "loos", "looed_chips"))
    chips = [r["chips"] for r in rows]
    assert chips == sorted(chips, reverse=True)
    assert [r["rank"] for r in rows] == [1 + sum(c > x for c in chips) for x in chips]
    r = lg.get("/standings", headers={"Accept": "text/csv"})
    assert idle in r.data.decode() and gone not in r.data.decode()
    rounce = lg.table(ms[:3], variant="rounce", deal="results", first_dealer=0,
                      options={"auto_deal": False})
    assert club.start(rounce, {"result": {"decisions": {"0": "play", "1": "play", "2": "play"},
                                          "tricks": {"0": 2, "1": 2, "2": 1}}}
                      ).status_code == 200
    view = lg.get("/standings?variant=rounce&scoring=points").get_json()["rows"]
    assert [r["member"] for r in view][-2:] in ([idle, ms[3]], [ms[3], idle])
    assert {r["tables"] for r in view[-2:]} == {0} and {r["tables"] for r in view[:3]} == {1}
    assert view[-1]["rank"] == view[-2]["rank"] == 4


def test_clubs_tokens_members_external_id_is_unique_and_found_whatever_its_case(club: Club):
    """API.md Clubs, tokens, members: `external_id` is unique in the club (409 on a
    duplicate). A membership number is the club's own code: "ABC-7" and "abc-7" are the
    same member's, so the second is a 409 duplicate_external_id; the member keeps the
    spelling it was given, and GET .../members?external_id= finds it in any case."""
    lg = League(club)
    ann = lg.member("Ann", "ABC-7")
    version = lg.get("").get_json()["version"]
    r = club.c.post(lg.url("/members"), json={"name": "Bob", "external_id": "abc-7"},
                    headers=lg.h(lg.scorer))
    club.problem(r, 409, "duplicate_external_id")
    assert lg.get("").get_json()["version"] == version
    assert lg.get(f"/members/{ann}").get_json()["external_id"] == "ABC-7"
    bob = lg.member("Bob", "abc-8")
    for asked, found in (("abc-7", [ann]), ("ABC-7", [ann]), ("Abc-8", [bob]), ("abc", [])):
        items = lg.get(f"/members?external_id={asked}").get_json()["items"]
        assert [m["id"] for m in items] == found, asked
    assert lg.get("/members?external_id=abc-7").get_json()["items"][0]["external_id"] == \
        "ABC-7"
    club.problem(lg.get("/members?external_id="), 422, "invalid_filter")
