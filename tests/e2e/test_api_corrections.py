"""API.md "Corrections": void the latest settled hand by compensating events; the log is
never edited, balances, pool and scores go back, the audit still holds."""

from __future__ import annotations

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
