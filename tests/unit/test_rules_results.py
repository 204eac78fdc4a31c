"""`results` tables (API.md "Hands"): a hand entered as decisions and trick counts, checked
against RULES §4, §6 and §7 and settled at once."""

from __future__ import annotations

import pytest

from ledger.core import events as ev
from ledger.core.errors import Invalid, LedgerError, RuleViolation
from ledger.core.rules.actions import Decide, Play
from ledger.core.rules.legal import legal_actions
from tests.unit.rules_support import Game, of_type, one

ALL_PLAY4 = {"1": "play", "2": "play", "3": "play", "0": "play"}


def results(players=4, variant="loo", scoring=None, dealer=0, options=None) -> Game:
    return Game(variant=variant, scoring=scoring, players=players, deal="results", dealer=dealer,
                options=options)


def refused(g: Game, result, code="invalid_result", rule=None) -> LedgerError:
    before = g.t
    with pytest.raises(Invalid) as info:
        g.result(result)
    assert info.value.code == code
    if rule is not None:
        assert info.value.rule == rule
    assert g.t == before
    return info.value


def test_s10_result_events_replay_like_a_played_hand():
    g = results()
    out = g.result({"decisions": ALL_PLAY4, "tricks": {"0": 3, "1": 1, "2": 1}})
    decided = of_type(out, ev.PlayerDecided)
    assert [d.seat for d in decided] == [1, 2, 3, 0]  # in deciding order
    done = one(out, ev.HandCompleted)
    assert done.tricks_won == (3, 1, 1, 0) and done.looed == (3,) and done.dropped == ()
    assert g.h.phase == "complete" and g.h.mode == "results"
    assert not of_type(out, ev.TilesDealt)


def test_s10_results_table_takes_no_actions():
    g = results()
    g.result({"decisions": ALL_PLAY4, "tricks": {"0": 5}})
    g.settle()
    g.result({"decisions": ALL_PLAY4, "tricks": {"0": 5}})
    assert legal_actions(g.h, 1) == []
    with pytest.raises(LedgerError):
        g.act(Play(2, 0))
    with pytest.raises(LedgerError):
        g.act(Decide(2, "play"))


def test_s6_tricks_must_add_up_to_five():
    g = results()
    err = refused(g, {"decisions": ALL_PLAY4, "tricks": {"0": 3, "1": 1}}, rule="6")
    assert "5" in err.detail
    refused(g, {"decisions": ALL_PLAY4, "tricks": {"0": 3, "1": 3}}, rule="6")


def test_s4_dropped_player_wins_no_trick():
    g = results()
    err = refused(g, {"decisions": {"1": "drop", "2": "play", "3": "play", "0": "play"},
                      "tricks": {"1": 1, "2": 4}}, rule="4")
    assert "seat 1" in err.detail


def test_s4_results_no_drop_in_two_player_loo():
    g = results(players=2)
    refused(g, {"decisions": {"1": "drop", "0": "play"}, "tricks": {"0": 5}},
            code="drop_not_allowed", rule="4")


def test_s4_results_two_player_loo_needs_the_dealers_decision():
    """§4: with 2 players in Loo nobody drops, so an omitted dealer decision cannot mean a
    drop: ask for it instead of blaming a drop the scorer never sent."""
    g = results(players=2, scoring="points")
    for decisions in ({"1": "play"}, {"1": "miss"}):
        err = refused(g, {"decisions": decisions, "tricks": {"1": 3, "0": 2}})
        assert "seat 0" in err.detail and "drop" not in err.detail


def test_s9_results_rounce_pass_with_two():
    g = results(players=2, variant="rounce")
    out = g.result({"decisions": {"1": "drop"}})
    assert one(out, ev.HandWonWithoutPlay).seat == 0


@pytest.mark.parametrize(("players", "decisions"), [
    (4, {"1": "miss", "2": "miss", "3": "play", "0": "play"}),
    (3, {"1": "miss", "2": "miss", "0": "miss"}),
])
def test_s4_results_miss_limits(players, decisions):
    g = results(players=players)
    refused(g, {"decisions": decisions, "tricks": {"0": 5}}, code="miss_unavailable", rule="4")


@pytest.mark.parametrize(("players", "variant", "dealer", "decisions", "code"), [
    # 2-player Loo: seat 0 cannot drop, so it is no "every other player dropped" for the dealer
    (2, "loo", 1, {"0": "drop", "1": "miss"}, "drop_not_allowed"),
    (2, "loo", 1, {"0": "drop", "1": "play"}, "drop_not_allowed"),
    # 4 players, one miss: the second miss is the fault, not the dealer's decision left out
    (4, "rounce", 0, {"1": "miss", "2": "miss", "3": "miss"}, "miss_unavailable"),
    (4, "loo", 0, {"1": "miss", "2": "miss", "3": "play"}, "miss_unavailable"),
])
def test_s4_results_the_first_impossible_decision_is_the_one_named(players, variant, dealer,
                                                                    decisions, code):
    """§4 seat by seat: a refusal names the decision that could not be made, not a
    conclusion about the dealer's turn drawn from it."""
    g = results(players=players, variant=variant, dealer=dealer)
    err = refused(g, {"decisions": decisions}, code=code, rule="4")
    assert "dealer" not in err.detail


@pytest.mark.parametrize(("players", "decisions"), [
    (2, {"1": "miss", "0": "miss"}),
    (3, {"1": "miss", "2": "miss", "0": "play"}),
    (4, {"1": "miss", "2": "play", "3": "drop", "0": "play"}),
])
def test_s4_results_misses_within_limits(players, decisions):
    g = results(players=players)
    g.result({"decisions": decisions, "tricks": {"1": 5}})
    assert g.h.phase == "complete"


@pytest.mark.parametrize(("players", "scoring", "decisions"), [
    (4, "pool", {"1": "play", "2": "drop", "3": "drop", "0": "play"}),   # he did not miss
    (4, "pool", {"1": "miss", "2": "play", "3": "drop", "0": "play"}),   # two others in
    (4, "points", {"1": "miss", "2": "drop", "3": "drop", "0": "play"}),
    (3, "pool", {"1": "miss", "2": "drop", "0": "play"}),
])
def test_s4_results_for_pool_only_in_its_situation(players, scoring, decisions):
    g = results(players=players, scoring=scoring)
    refused(g, {"decisions": decisions, "for_pool": True, "tricks": {"0": 2, "1": 3}},
            code="for_pool_not_allowed", rule="4")


def test_s4_results_for_pool_in_its_situation():
    g = results()
    out = g.result({"decisions": {"1": "miss", "2": "drop", "3": "drop", "0": "play"},
                    "for_pool": True, "tricks": {"0": 4, "1": 1}})
    assert one(out, ev.HandCompleted).for_pool
    assert [d.for_pool for d in of_type(out, ev.PlayerDecided)] == [False, False, False, True]


def test_s4_results_dealer_wins_without_play():
    g = results()
    out = g.result({"decisions": {"1": "drop", "2": "drop", "3": "drop"}})
    won = one(out, ev.HandWonWithoutPlay)
    assert (won.seat, won.reason) == (0, "all_dropped")
    assert one(out, ev.HandCompleted).tricks_won == (5, 0, 0, 0)
    # the dealer may also be given as "play", and the tricks as the five he is credited
    g.settle()
    out = g.result({"decisions": {"2": "drop", "3": "drop", "0": "drop", "1": "play"},
                    "tricks": {"1": 5}})
    assert one(out, ev.HandWonWithoutPlay).seat == 1


def test_s4_results_dealer_makes_no_decision_when_all_dropped():
    g = results()
    refused(g, {"decisions": {"1": "drop", "2": "drop", "3": "drop", "0": "miss"}}, rule="4")
    refused(g, {"decisions": {"1": "drop", "2": "drop", "3": "drop", "0": "drop"}}, rule="4")


def test_s4_results_lone_player_credited_with_five():
    g = results()
    out = g.result({"decisions": {"1": "drop", "2": "miss", "3": "drop"}})  # dealer omitted
    won = one(out, ev.HandWonWithoutPlay)
    assert (won.seat, won.reason) == (2, "one_left")
    done = one(out, ev.HandCompleted)
    assert done.tricks_won == (0, 0, 5, 0) and done.dropped == (0, 1, 3)
    g.settle()
    assert g.t.balances == (-10, -5, 20, -5)


def test_s4_results_lone_player_tricks_must_be_all_five():
    g = results()
    refused(g, {"decisions": {"1": "drop", "2": "play", "3": "drop", "0": "drop"},
                "tricks": {"2": 4, "1": 1}}, rule="4")


def test_s4_results_dealer_decision_needed_when_two_others_in():
    g = results()
    err = refused(g, {"decisions": {"1": "play", "2": "play", "3": "drop"},
                      "tricks": {"1": 5}})
    assert "seat 0" in err.detail


def test_s4_results_tricks_needed_when_the_hand_was_played():
    g = results()
    refused(g, {"decisions": ALL_PLAY4})


@pytest.mark.parametrize("bad", [
    {"decisions": {"1": "play", "2": "play", "3": "play"}, "tricks": {"1": 5}},  # no dealer
    {"decisions": {"1": "play", "2": "pass", "3": "play", "0": "play"}, "tricks": {"1": 5}},
    {"decisions": {"1": "play", "2": "play", "3": "play", "4": "play"}, "tricks": {"1": 5}},
    {"decisions": {"01": "play", "2": "play", "3": "play", "0": "play"}, "tricks": {"2": 5}},
    {"decisions": ["play", "play", "play", "play"], "tricks": {"1": 5}},
    {"decisions": ALL_PLAY4, "tricks": {"1": 6}},
    {"decisions": ALL_PLAY4, "tricks": {"1": -1, "2": 6}},
    {"decisions": ALL_PLAY4, "tricks": {"1": "5"}},
    {"decisions": ALL_PLAY4, "tricks": {"1": True, "2": 4}},
    {"decisions": ALL_PLAY4, "tricks": {"x": 5}},
    {"decisions": ALL_PLAY4, "tricks": [5, 0, 0, 0]},
    {"decisions": ALL_PLAY4, "tricks": {"1": 5}, "for_pool": "no"},
    {"tricks": {"1": 5}},
])
def test_s10_results_malformed_refused(bad):
    g = results()
    with pytest.raises(Invalid) as info:
        g.result(bad)
    assert info.value.code in ("invalid_result",)
    assert info.value.detail


def test_s7_results_looed_and_dropped():
    g = results(scoring="points")
    out = g.result({"decisions": {"1": "drop", "2": "miss", "3": "play", "0": "drop"},
                    "tricks": {"2": 5}})
    done = one(out, ev.HandCompleted)
    assert done.looed == (3,) and done.dropped == (0, 1)
    assert one(g.settle(), ev.PointsScored).totals == (0, 0, 5, -5)


def test_s8_results_violation_is_a_rule_violation():
    g = results()
    with pytest.raises(RuleViolation) as info:
        g.result({"decisions": ALL_PLAY4, "tricks": {"0": 4}})
    assert info.value.rule == "6"
