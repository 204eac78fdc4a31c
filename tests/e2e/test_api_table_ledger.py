"""API.md Audit: GET /v1/tables/{id}/ledger answers {"transfers", "balances"} (points games:
"scores", "totals"), whole, as it always did. A table of 3,000 hands answered about 2 MB in
one piece, which a club could neither page nor ask one hand of: ?hand= gives one hand's
entries, and ?limit= / ?cursor= page them as every list is paged (API.md Lists: `next`, a
422 invalid_cursor for a cursor it did not give out), the balances (totals) always the whole
table's. Every bad value is a 422 problem, never a 500."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from ledger.app.projector import chip_ledger, score_sheet
from tests.e2e.club import Club, Table

BOTS = [{"name": n, "bot": "heuristic"} for n in ("Ann", "Bob", "Cat", "Dan")]


def _bots(club: Club, hands: int = 5, options: dict[str, Any] | None = None,
          **body: Any) -> Table:
    """An all-bot table whose admin started `hands` hands, the third voided and entered
    again (`hands` + 1 hands played when there are three or more)."""
    body.setdefault("seats", BOTS)
    t = club.create(first_dealer=0, deal="shuffled",
                    options={"auto_deal": False} | (options or {}), **body)
    for n in range(1, hands + 1):
        r = club.start(t)
        assert r.status_code == 200, r.get_json()
        if n == 3:
            r = club.post(t, "/hands/3/void", {"reason": "entered twice"})
            assert r.status_code == 200, r.get_json()
            assert club.start(t).status_code == 200
    return t


def _ledger(club: Club, t: Table, query: str = "", token: str | None = None) -> dict[str, Any]:
    r = club.get(t, token, f"/ledger{query}")
    assert r.status_code == 200, r.get_json()
    return r.get_json()


def _follow(club: Club, t: Table, query: str, key: str = "transfers") -> list[dict[str, Any]]:
    """Every page of the ledger from `query` on (?limit=...), following `next`; each page's
    balances and totals are the whole table's."""
    whole = _ledger(club, t)
    page = _ledger(club, t, query)
    got = list(page[key])
    for _ in range(1000):
        assert page["balances"] == whole["balances"] and page.get("totals") == whole.get(
            "totals")
        assert page["items"] == page[key]  # a list as every list is
        if page["next"] is None:
            return got
        assert page[key], "a page with a next cursor holds entries"
        page = _ledger(club, t, f"{query}&cursor={page['next']}")
        got += page[key]
    raise AssertionError("the cursors did not end")


def test_audit_ledger_without_parameters_is_the_whole_answer_it_always_was(club: Club, app):
    """Read from the events that move chips or points only, it is what the whole record
    gives, key for key (and no `next`), for the admin and for a seat alike."""
    store = app.extensions["loo_container"].store
    t = _bots(club)
    whole = _ledger(club, t)
    assert whole == chip_ledger(store.load(t.id), 4) and len(whole["transfers"]) > 20
    assert set(whole) == {"transfers", "balances"} and sum(whole["balances"].values()) == 0
    assert _ledger(club, t, token=t.seats[2]) == whole
    points = _bots(club, 3, {"target": 99}, scoring="points")
    table = club.view(points)
    answer = _ledger(club, points)
    assert set(answer) == {"transfers", "balances", "scores", "start", "totals"}
    from ledger.app.projector import project

    p = project(store.load(points.id))
    assert answer == chip_ledger(store.load(points.id), 4) | score_sheet(
        store.load(points.id), p.table)
    assert answer["totals"] == {f"seat:{s['seat']}": s["score"] for s in table["seats"]}


def test_audit_ledger_hand_gives_that_hands_entries_and_the_whole_tables_balances(club: Club):
    t = _bots(club)
    whole = _ledger(club, t)
    for n in range(1, 7):
        one = _ledger(club, t, f"?hand={n}")
        assert set(one) == {"transfers", "balances"} and one["balances"] == whole["balances"]
        assert one["transfers"] == [x for x in whole["transfers"] if x["hand"] == n]
        assert one["transfers"] and one["transfers"][0]["reason"] in ("ante", "dealer_ante")
    voided = _ledger(club, t, "?hand=3")["transfers"]  # its stakes, settlement and the void
    assert voided[-1]["reason"] == "void" and voided[0]["reason"] in ("ante", "dealer_ante")
    assert sum(x["amount"] for x in voided if x["reason"] == "void") == sum(
        x["amount"] for x in voided if x["reason"] != "void")


@pytest.mark.parametrize("limit", [1, 7, 500])
def test_audit_ledger_pages_list_each_transfer_once_in_order(club: Club, limit: int):
    t = _bots(club)
    whole = _ledger(club, t)
    assert _follow(club, t, f"?limit={limit}") == whole["transfers"]
    for n in (1, 3, 6):
        assert _follow(club, t, f"?limit={limit}&hand={n}") == _ledger(
            club, t, f"?hand={n}")["transfers"]
    first = _ledger(club, t, f"?limit={limit}")
    assert len(first["transfers"]) == min(limit, len(whole["transfers"]))
    assert (first["next"] is None) == (limit >= len(whole["transfers"]))


def test_audit_ledger_a_cursor_alone_pages_by_50(club: Club):
    t = _bots(club, 14)
    whole = _ledger(club, t)["transfers"]
    assert len(whole) > 70
    first = _ledger(club, t, "?limit=20")
    second = _ledger(club, t, f"?cursor={first['next']}")
    assert second["transfers"] == whole[20:70] and second["next"] is not None


def test_audit_ledger_paging_while_hands_are_played_lists_each_transfer_once(club: Club):
    """Entries only ever append (a void appends what it gives back): a cursor taken before
    more hands were played goes on where it stopped."""
    t = _bots(club, 2)
    page = _ledger(club, t, "?limit=4")
    got = list(page["transfers"])
    for _ in range(3):
        assert club.start(t).status_code == 200
    r = club.post(t, "/hands/5/void", {"reason": "late correction"})
    assert r.status_code == 200, r.get_json()
    while page["next"] is not None:
        page = _ledger(club, t, f"?limit=4&cursor={page['next']}")
        got += page["transfers"]
    assert got == _ledger(club, t)["transfers"]


def test_audit_ledger_of_a_points_table_pages_its_scores(club: Club):
    t = _bots(club, 3, {"target": 99}, scoring="points")
    whole = _ledger(club, t)
    assert whole["scores"] and whole["transfers"] == []
    assert _follow(club, t, "?limit=2", key="scores") == whole["scores"]
    page = _ledger(club, t, "?limit=2&hand=2")
    assert page["scores"] == [x for x in whole["scores"] if x["hand"] == 2][:2]
    assert page["totals"] == whole["totals"] and page["start"] == whole["start"]


def _cursor_at(cursor: str, offset: int) -> str:
    """The same cursor edited to point at another offset (its signature left as it was)."""
    raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    kind, _, rest = raw.split(b":", 2)
    edited = kind + b":" + str(offset).encode() + b":" + rest
    return base64.urlsafe_b64encode(edited).decode().rstrip("=")


def test_audit_ledger_bad_parameters_are_422_problems_never_a_500(club: Club):
    t, other = _bots(club, 2), _bots(club, 1)
    hand_1 = _ledger(club, t, "?hand=1&limit=1")["next"]
    whole_next = _ledger(club, t, "?limit=1")["next"]
    other_next = _ledger(club, other, "?limit=1")["next"]
    n = len(_ledger(club, t)["transfers"])
    cases = {
        "hand=0": ("invalid_filter", "hand"), "hand=-1": ("invalid_filter", "hand"),
        "hand=x": ("invalid_filter", "hand"), "hand=1.5": ("invalid_filter", "hand"),
        "hand=%201": ("invalid_filter", "hand"), "hand=1_0": ("invalid_filter", "hand"),
        "hand=": ("invalid_filter", "hand"), "hand=3": ("invalid_filter", "hand"),
        "hand=" + "9" * 19: ("invalid_filter", "hand"),
        "hand=" + "9" * 18: ("invalid_filter", "hand"),
        "hand=1&hand=2": ("invalid_filter", "hand"),
        "limit=0": ("invalid_filter", "limit"), "limit=501": ("invalid_filter", "limit"),
        "limit=abc": ("invalid_filter", "limit"), "limit=-1": ("invalid_filter", "limit"),
        "cursor=abc": ("invalid_cursor", "cursor"), "cursor=": ("invalid_cursor", "cursor"),
        "cursor=%00": ("invalid_cursor", "cursor"),
        f"hand=2&cursor={hand_1}": ("invalid_cursor", "cursor"),  # another hand's
        f"cursor={hand_1}": ("invalid_cursor", "cursor"),
        f"cursor={other_next}": ("invalid_cursor", "cursor"),  # another table's
        f"cursor={_cursor_at(whole_next, n)}": ("invalid_cursor", "cursor"),  # past the end
        f"cursor={_cursor_at(whole_next, n + 50)}": ("invalid_cursor", "cursor"),
        "after=3": ("unknown_filter", "after"), "step=1": ("unknown_filter", "step"),
    }
    for query, (code, field) in cases.items():
        problem = club.problem(club.get(t, path=f"/ledger?{query}"), 422, code)
        assert problem["field"] == field, (query, problem)
    assert "hands 1 to 2 have been played" in club.problem(
        club.get(t, path="/ledger?hand=3"), 422)["detail"]
    fresh = club.create(first_dealer=0, deal="recorded")
    assert "no hand has been played" in club.problem(
        club.get(fresh, path="/ledger?hand=1"), 422)["detail"]
    assert _ledger(club, fresh, "?limit=5") == {"transfers": [], "balances": _ledger(
        club, fresh)["balances"], "items": [], "next": None}


def test_audit_ledger_openapi_declares_the_paging_and_no_default_limit(club: Club):
    """A generated client must not send ?limit= unasked: without it the answer is whole."""
    spec = club.c.get("/openapi.json").get_json()
    op = spec["paths"]["/v1/tables/{table_id}/ledger"]["get"]
    params = {p["name"]: p for p in op["parameters"] if p["in"] == "query"}
    assert set(params) == {"hand", "limit", "cursor"}
    assert "default" not in params["limit"]["schema"]
    assert params["hand"]["schema"]["minimum"] == 1
    schema = spec["components"]["schemas"]["LedgerOut"]
    assert "next" in schema["properties"] and "next" not in schema.get("required", [])
    assert json.dumps(op).count("422") >= 1
