"""API.md "Corrections": void the latest settled hand by compensating events; the log is
never edited, balances, pool and scores go back, the audit still holds."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.e2e.club import Club, Table

FOUR = [{"name": n} for n in ("Ann", "Bob", "Cat", "Dan")]
HAND_A = {"decisions": {"0": "play", "1": "play", "2": "drop", "3": "play"},
          "tricks": {"0": 3, "1": 2, "2": 0, "3": 0}}
HAND_B = {"decisions": {"0": "play", "1": "play", "2": "play", "3": "drop"},
          "tricks": {"0": 1, "1": 1, "2": 3, "3": 0}}


def _results(club: Club, scoring: str = "pool", **options) -> Table:
    return club.create(seats=FOUR, first_dealer=0, deal="results", scoring=scoring,
                       options=options)


def _enter(club: Club, t: Table, result: dict) -> None:
    r = club.start(t, {"result": result})
    assert r.status_code == 200, r.get_json()


def _void(club: Club, t: Table, n: int, token: str | None = None):
    return club.post(t, f"/hands/{n}/void", {"reason": "scorer's typo"}, token)


def _state(club: Club, t: Table) -> tuple:
    view, book = club.view(t), club.get(t, path="/ledger").get_json()
    return view["pool"], [s["balance"] for s in view["seats"]], [s["score"] for s in
                                                                  view["seats"]], \
        book.get("balances"), book.get("totals")


def test_void_then_reentry_equals_entering_the_corrected_hand_first(club: Club):
    wrong, right = _results(club), _results(club)
    _enter(club, wrong, HAND_A)
    before_void = club.get(wrong, path="/ledger").get_json()["balances"]
    r = _void(club, wrong, 1)
    assert r.status_code == 200, r.get_json()
    assert [e["type"] for e in r.get_json()["events"]] == ["hand_voided"]
    book = club.get(wrong, path="/ledger").get_json()
    assert set(book["balances"].values()) == {0}  # as before the hand
    voids = [x for x in book["transfers"] if x["reason"] == "void"]
    originals = [x for x in book["transfers"] if x["hand"] == 1 and x["reason"] != "void"]
    assert len(voids) == len(originals) and all(v["hand"] == 1 for v in voids)
    assert before_void != book["balances"]
    _enter(club, wrong, HAND_B)
    _enter(club, right, HAND_B)
    assert _state(club, wrong)[:3] == _state(club, right)[:3]
    assert club.get(wrong, path="/ledger").get_json()["balances"] == \
        club.get(right, path="/ledger").get_json()["balances"]
    audit = club.get(wrong, path="/audit").get_json()
    assert audit["ok"] is True, audit
    record = club.get(wrong, path="/hands/1").get_json()
    assert record["hand"]["voided"] is True
    assert club.get(wrong, path="/hands/2").get_json()["hand"]["voided"] is False
    assert record["hand"]["dealer"] == club.get(wrong, path="/hands/2").get_json()["hand"][
        "dealer"]  # the voided deal does not count: the same dealer deals again


def test_only_the_latest_settled_hand_may_be_voided_and_refusals_change_nothing(club: Club):
    t = _results(club)
    _enter(club, t, HAND_A)
    _enter(club, t, HAND_B)
    version = club.view(t)["version"]
    p = club.problem(_void(club, t, 1), 422, "not_latest_settled_hand")
    assert p["may_void"] == 2 and "hand 2" in p["detail"]
    club.problem(_void(club, t, 9), 404, "hand_not_found")
    club.problem(_void(club, t, 2, t.seats[0]), 403)
    club.problem(club.post(t, "/hands/2/void", {}), 422)  # a reason is required
    assert club.view(t)["version"] == version
    assert _void(club, t, 2).status_code == 200
    assert _void(club, t, 1).status_code == 200  # void back to the older hand
    club.problem(_void(club, t, 1), 422, "hand_already_voided")
    assert set(club.get(t, path="/ledger").get_json()["balances"].values()) == {0}
    assert club.get(t, path="/audit").get_json()["ok"] is True


def test_a_live_hand_cannot_be_voided(club: Club):
    t = club.create(seats=FOUR, first_dealer=0)  # shuffled, auto_deal: hand 1 is live
    club.problem(_void(club, t, 1), 422, "not_latest_settled_hand")


def test_a_points_game_won_by_the_voided_hand_is_unwon(club: Club):
    t = _results(club, "points", target=3)
    _enter(club, t, HAND_A)  # seat 0 takes 3 tricks: reaches the target
    view = club.view(t)
    assert view["status"] == "finished" and view["winner"] == 0
    r = _void(club, t, 1)
    assert r.status_code == 200, r.get_json()
    view = club.view(t)
    assert view["status"] == "playing" and view["winner"] is None
    assert [s["score"] for s in view["seats"]] == [0, 0, 0, 0]
    sheet = club.get(t, path="/ledger").get_json()
    assert [x["reason"] for x in sheet["scores"]].count("void") == \
        len([x for x in sheet["scores"] if x["reason"] != "void"])
    _enter(club, t, HAND_B)
    assert club.get(t, path="/audit").get_json()["ok"] is True


RESULTS = st.sampled_from([HAND_A, HAND_B, {
    "decisions": {"0": "play", "1": "play", "2": "play", "3": "play"},
    "tricks": {"0": 2, "1": 1, "2": 1, "3": 1}}, {
    "decisions": {"0": "play", "1": "drop", "2": "play", "3": "play"},
    "tricks": {"0": 0, "1": 0, "2": 5, "3": 0}}])


@settings(max_examples=8, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(before=st.lists(RESULTS, max_size=3), wrong=RESULTS, right=RESULTS,
       scoring=st.sampled_from(["pool", "points"]))
def test_prop_void_and_reentry_equal_the_corrected_hand(club: Club, before, wrong, right,
                                                       scoring):
    a, b = _results(club, scoring, target=50), _results(club, scoring, target=50)
    for r in before:
        _enter(club, a, r)
        _enter(club, b, r)
    _enter(club, a, wrong)
    assert _void(club, a, len(before) + 1).status_code == 200
    _enter(club, a, right)
    _enter(club, b, right)
    assert _state(club, a)[:3] == _state(club, b)[:3]
    book_a, book_b = (club.get(x, path="/ledger").get_json() for x in (a, b))
    assert book_a.get("balances") == book_b.get("balances")
    assert book_a.get("totals") == book_b.get("totals")
    assert club.get(a, path="/audit").get_json()["ok"] is True


def test_voiding_back_reaches_at_most_64_hands(club: Club):
    from ledger.core.rules.table import VOIDABLE

    t = _results(club)
    for _ in range(VOIDABLE + 2):
        _enter(club, t, HAND_A)
    for n in range(VOIDABLE + 2, 2, -1):
        assert _void(club, t, n).status_code == 200, n
    p = club.problem(_void(club, t, 2), 422, "not_latest_settled_hand")
    assert p["may_void"] is None
    assert club.get(t, path="/audit").get_json()["ok"] is True


def _audit_green(club: Club, t: Table) -> None:
    audit = club.get(t, path="/audit").get_json()
    assert audit["ok"] is True and all(v is True for v in audit["checks"].values()), audit


def test_corrections_a_table_closed_by_max_hands_voids_its_last_hand_and_plays_it_again(
        club: Club):
    """API.md Corrections: the latest settled hand of a table that has not started another
    may be voided, also once max_hands closed the table after it (a correction of a finished
    evening is when a void is needed). The void undoes the close as it un-wins a game
    (`reopened`): the table plays on, the hand is entered again and max_hands closes it
    again; chips sum to zero, the audit and the checkpoints hold."""
    t, right = _results(club, max_hands=2), _results(club, max_hands=2)
    for x in (t, right):
        _enter(club, x, HAND_A)
    _enter(club, t, HAND_A)  # the scorer's mistake: hand 2 was HAND_B
    _enter(club, right, HAND_B)
    assert club.view(t)["status"] == "closed"
    r = _void(club, t, 2)
    assert r.status_code == 200, r.get_json()
    [voided] = r.get_json()["events"]
    assert voided["type"] == "hand_voided" and voided["data"]["reopened"] is True
    view = club.view(t)
    assert view["status"] == "playing"
    book = club.get(t, path="/ledger").get_json()
    assert sum(book["balances"].values()) == 0
    cps = club.get(t, path="/checkpoints").get_json()["items"]
    assert (cps[-1]["version"], cps[-1]["hash"]) == (voided["version"], voided["hash"])
    _audit_green(club, t)
    _enter(club, t, HAND_B)  # entered again: the table closes itself again
    assert club.view(t)["status"] == "closed"
    assert _state(club, t)[:3] == _state(club, right)[:3]
    assert club.get(t, path="/ledger").get_json()["balances"] == \
        club.get(right, path="/ledger").get_json()["balances"]
    assert club.get(t, path="/hands/2").get_json()["hand"]["voided"] is True
    _audit_green(club, t)


def test_corrections_a_voided_hand_is_not_one_of_the_max_hands(club: Club):
    """API.md Tables: max_hands closes a table once that many hands are settled; Corrections:
    a voided hand leaves the table as before it. A hand voided and entered again counts
    once, so a 2-hand table corrected after its first hand still plays its second."""
    t, right = _results(club, max_hands=2), _results(club, max_hands=2)
    _enter(club, t, HAND_A)  # the scorer's mistake: hand 1 was HAND_B
    assert _void(club, t, 1).status_code == 200
    _enter(club, t, HAND_B)  # hand 1 again (numbered 2)
    assert club.view(t)["status"] == "playing"
    _enter(club, t, HAND_A)
    for hand in (HAND_B, HAND_A):
        _enter(club, right, hand)
    view = club.view(t)
    assert view["status"] == "closed"
    events = club.get(t, path="/events?limit=1000").get_json()["events"]
    assert events[-1]["type"] == "table_closed" and events[-1]["data"]["reason"] == "max_hands"
    assert _state(club, t)[:3] == _state(club, right)[:3]
    _audit_green(club, t)


def test_corrections_a_game_won_then_closed_is_unwon_and_reopened_by_the_void(club: Club):
    """API.md Corrections: "a game won by that hand is un-won", also after its admin closed
    the table: the void gives back the points, un-wins the game and undoes the close."""
    t = _results(club, "points", target=3)
    _enter(club, t, HAND_A)
    assert club.post(t, "/close", {}).status_code == 200
    assert club.view(t)["status"] == "closed"
    r = _void(club, t, 1)
    assert r.status_code == 200, r.get_json()
    data = r.get_json()["events"][0]["data"]
    assert data["unwon"] is True and data["reopened"] is True
    view = club.view(t)
    assert (view["status"], view["winner"]) == ("playing", None)
    assert [s["score"] for s in view["seats"]] == [0, 0, 0, 0]
    _audit_green(club, t)
    _enter(club, t, HAND_B)
    _audit_green(club, t)


def test_corrections_a_closed_pool_game_voids_its_last_hand_and_closes_again(club: Club):
    """A pool game its admin closed: the void gives the pool back as before the hand; the
    close is undone (its leftover is no longer the pool) and closing again reports the new
    leftover."""
    t = _results(club)
    _enter(club, t, HAND_A)
    _enter(club, t, HAND_B)
    assert club.post(t, "/close", {}).status_code == 200
    assert _void(club, t, 2).status_code == 200
    after_one = _results(club)
    _enter(club, after_one, HAND_A)
    assert _state(club, t)[:3] == _state(club, after_one)[:3]
    _audit_green(club, t)
    closed = club.post(t, "/close", {})
    assert closed.status_code == 200, closed.get_json()
    assert closed.get_json()["leftover"] == club.view(after_one)["pool"]
    _audit_green(club, t)


def test_corrections_a_hand_abandoned_at_the_close_leaves_nothing_to_void(club: Club):
    """A table closed during a hand (abandoned): that hand never settled and the hand before
    it is not the latest, so nothing may be voided (422, nothing appended)."""
    t = club.create(seats=FOUR, first_dealer=0, options={"auto_deal": False})
    assert club.start(t).status_code == 200
    assert club.post(t, "/close", {}).status_code == 200
    version = club.view(t)["version"]
    p = club.problem(_void(club, t, 1), 422, "not_latest_settled_hand")
    assert "abandoned" in p["detail"] and p["may_void"] is None
    assert club.view(t)["version"] == version


def test_corrections_a_hand_voided_after_the_close_exports_verifies_and_imports(club: Club):
    """API.md Hand history: a hand voided after the table closed stays in the exports,
    marked voided; the NDJSON (the close between the hand and its void included in that
    hand's file, so the chain links) verifies as a stream, and a club import of it gives the
    same books."""
    from ledger.app.verify import verify_stream
    from tests.e2e.test_api_clubs import League

    t = _results(club, max_hands=2)
    _enter(club, t, HAND_A)
    _enter(club, t, HAND_A)
    assert club.post(t, "/spectators", {}).status_code == 201  # an aside after the close
    assert _void(club, t, 2).status_code == 200
    _enter(club, t, HAND_B)
    ndjson = club.get(t, path="/history").data
    docs = [json.loads(x) for x in ndjson.splitlines()]
    assert [d["hand"]["voided"] for d in docs] == [False, True, False]
    assert [e["type"] for e in docs[1]["events"]][-3:] == [
        "table_closed", "spectator_added", "hand_voided"]
    assert club.get(t, path="/hands/2/history").get_json() == docs[1]
    assert len(list(verify_stream(enumerate(docs, 1)))) == 3
    lg = League(club)
    r = club.c.post(lg.url("/tables/import"), data=ndjson,
                    headers=lg.h(lg.scorer) | {"Content-Type": "application/x-ndjson"})
    assert r.status_code == 201, r.get_json()
    copy = Table(r.get_json()["id"], r.get_json()["admin_token"], [], r.get_json())
    copy.admin = lg.scorer
    assert club.get(copy, path="/ledger").get_json()["balances"] == \
        club.get(t, path="/ledger").get_json()["balances"]
    assert club.view(copy)["status"] == "closed"
    _audit_green(club, copy)
