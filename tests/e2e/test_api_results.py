"""`results` tables: the worked example of RULES §8 and the checks on entered results."""

from __future__ import annotations

from tests.e2e.club import Club


def _result(decisions: dict[str, str], tricks: dict[str, int] | None = None,
            for_pool: bool = False) -> dict:
    body: dict = {"decisions": decisions, "for_pool": for_pool}
    if tricks is not None:
        body["tricks"] = tricks
    return {"result": body}


def test_s8_worked_example(club: Club):
    # Seats: A=0, B=1, C=2, D=3; hand 1 dealt by A, hand 2 by B, hand 3 by C.
    t = club.create(deal="results", first_dealer=0)
    r = club.start(t, _result({"0": "play", "1": "play", "2": "play", "3": "play"},
                              {"0": 3, "1": 0, "2": 0, "3": 2}))
    assert r.status_code == 200, r.get_json()
    view = r.get_json()["table"]
    assert view["hand"]["pool_at_start"] == 25
    assert [s["balance"] for s in view["seats"]] == [-10 + 15, -5 - 25, -5 - 25, -5 + 10]
    assert view["pool"] == 50
    r = club.start(t, _result({"0": "play", "1": "drop", "2": "play", "3": "play"},
                              {"0": 0, "1": 0, "2": 5, "3": 0}))
    assert r.status_code == 200, r.get_json()
    view = r.get_json()["table"]
    assert view["hand"]["pool_at_start"] == 55
    assert [s["balance"] for s in view["seats"]] == [5 - 55, -30 - 5, -30 + 55, 5 - 55]
    assert view["pool"] == 110
    r = club.start(t, _result({"0": "play", "1": "play", "2": "play", "3": "play"},
                              {"0": 1, "1": 1, "2": 1, "3": 2}))
    view = r.get_json()["table"]
    assert view["hand"]["pool_at_start"] == 115
    ledger = club.get(t, path="/ledger").get_json()
    assert sum(ledger["balances"].values()) == 0
    tricks3 = [x for x in ledger["transfers"] if x["hand"] == 3 and x["reason"] == "trick"]
    assert {x["amount"] for x in tricks3} == {23, 46}
    loo = [x for x in ledger["transfers"] if x["reason"] == "loo"]
    assert [(x["hand"], x["from"], x["amount"]) for x in loo] == [
        (1, "seat:1", 25), (1, "seat:2", 25), (2, "seat:0", 55), (2, "seat:3", 55)]
    audit = club.get(t, path="/audit").get_json()
    assert audit["ok"], audit


def test_results_tricks_must_sum_to_five(club: Club):
    t = club.create(deal="results", first_dealer=0)
    r = club.start(t, _result({"0": "play", "1": "play", "2": "play", "3": "play"},
                              {"0": 3, "1": 1}))
    club.problem(r, 422, "invalid_result")
    assert club.get(t, path="/events").get_json()["next"] == club.view(t)["version"]
    assert club.view(t)["hand"] is None


def test_results_dropped_player_has_no_tricks(club: Club):
    t = club.create(deal="results", first_dealer=0)
    r = club.start(t, _result({"0": "play", "1": "drop", "2": "play", "3": "play"},
                              {"0": 2, "1": 1, "2": 1, "3": 1}))
    club.problem(r, 422, "invalid_result")


def test_results_two_players_cannot_drop_in_loo(club: Club):
    t = club.create(deal="results", first_dealer=0, seats=[{"name": "A"}, {"name": "B"}])
    r = club.start(t, _result({"0": "play", "1": "drop"}))
    club.problem(r, 422, "drop_not_allowed")


def test_results_miss_limits(club: Club):
    t = club.create(deal="results", first_dealer=0)
    r = club.start(t, _result({"0": "play", "1": "miss", "2": "miss", "3": "play"},
                              {"0": 2, "1": 1, "2": 1, "3": 1}))
    club.problem(r, 422, "miss_unavailable")


def test_results_for_pool_only_in_its_situation(club: Club):
    t = club.create(deal="results", first_dealer=0)
    r = club.start(t, _result({"0": "play", "1": "play", "2": "play", "3": "play"},
                              {"0": 2, "1": 1, "2": 1, "3": 1}, for_pool=True))
    club.problem(r, 422, "for_pool_not_allowed")
    r = club.start(t, _result({"0": "play", "1": "miss", "2": "drop", "3": "drop"},
                              {"0": 2, "1": 3}, for_pool=True))
    assert r.status_code == 200, r.get_json()
    view = r.get_json()["table"]
    # The dealer's two tricks (2 x 5) stay in the pool; he cannot be looed.
    assert view["seats"][0]["balance"] == -10 and view["seats"][1]["balance"] == -5 + 15
    assert view["pool"] == 10


def test_results_dealer_wins_without_play(club: Club):
    t = club.create(deal="results", first_dealer=0)
    r = club.start(t, _result({"1": "drop", "2": "drop", "3": "drop"}))
    assert r.status_code == 200, r.get_json()
    view = r.get_json()["table"]
    assert view["seats"][0]["balance"] == -10 + 25 and view["pool"] == 0
    ledger = club.get(t, path="/ledger").get_json()
    assert [x["reason"] for x in ledger["transfers"]][-1] == "pool_award"


def test_results_lone_player_wins_five(club: Club):
    t = club.create(deal="results", first_dealer=0, scoring="points")
    r = club.start(t, _result({"1": "drop", "2": "play", "3": "drop", "0": "drop"}))
    assert r.status_code == 200, r.get_json()
    assert [s["score"] for s in r.get_json()["table"]["seats"]] == [0, 0, 5, 0]


def test_an_action_at_a_results_table_is_wrong_mode_before_and_after_a_hand(club: Club):
    """A results table never has a hand to act in: an action is refused as the wrong mode
    for this table (send the result to /hands), not with "no hand: start one", which a
    scorer would follow to no end. Nothing is appended either way."""
    t = club.create(deal="results", first_dealer=0)
    body = {"type": "decide", "choice": "play", "seat": 1}
    for _ in range(2):
        version = club.view(t)["version"]
        r = club.act(t, body)
        p = club.problem(r, 422, "wrong_mode")
        assert p["rule"] == "10" and "/hands" in p["detail"], p
        assert club.view(t)["version"] == version
        r = club.start(t, _result({"0": "play", "1": "play", "2": "play", "3": "play"},
                                  {"0": 3, "1": 0, "2": 0, "3": 2}))
        assert r.status_code == 200, r.get_json()
