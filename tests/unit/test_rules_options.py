"""Table options, validated up front (RULES §2, §4, §6.1, §8.1-8.2, §8.5, §8.9, §9)."""

from __future__ import annotations

import pytest

from ledger.core.errors import Invalid
from ledger.core.rules.options import make_options


def _refused(*args, **kw) -> Invalid:
    with pytest.raises(Invalid) as info:
        make_options(*args, **kw)
    assert info.value.code == "invalid_option"
    assert info.value.detail
    return info.value


def test_s8_defaults():
    o = make_options("loo", "pool", 4, {})
    assert (o.ante, o.dealer_ante, o.penalty_mode, o.penalty_multiplier) == (5, 5, "uncapped",
                                                                              None)
    assert o.lead_trump_threshold == 2
    assert o.target == 15
    assert o.deal == "shuffled"
    assert o.penalty_cap() is None
    assert o.to_dict() == {"ante": 5, "dealer_ante": 5, "loo_penalty": {"mode": "uncapped"},
                           "lead_trump_threshold": 2, "target": 15, "auto_deal": True,
                           "hints": False}
    assert o.hints is False and o.turn_seconds is None


@pytest.mark.parametrize(("options", "field"), [
    ({"hints": 1}, "hints"), ({"hints": "yes"}, "hints"), ({"turn_seconds": 4}, "turn_seconds"),
    ({"turn_seconds": 3601}, "turn_seconds"), ({"turn_seconds": 5.5}, "turn_seconds"),
    ({"turn_seconds": True}, "turn_seconds"), ({"turn_seconds": "60"}, "turn_seconds")])
def test_hints_and_turn_seconds_are_validated(options, field):
    with pytest.raises(Invalid) as err:
        make_options("loo", "pool", 4, options)
    assert err.value.extra["field"] == field


def test_hints_and_turn_seconds_round_trip_and_need_a_shuffled_table():
    o = make_options("loo", "pool", 4, {"hints": True, "turn_seconds": 5})
    assert (o.hints, o.turn_seconds) == (True, 5)
    assert o.to_dict()["hints"] is True and o.to_dict()["turn_seconds"] == 5
    assert make_options("loo", "pool", 4, o.to_dict()) == o
    assert make_options("loo", "pool", 4, {"turn_seconds": 3600}).turn_seconds == 3600
    for deal in ("recorded", "results"):
        for options in ({"hints": True}, {"turn_seconds": 60}):
            with pytest.raises(Invalid):
                make_options("loo", "pool", 4, options, deal)


def test_s8_options_round_trip_through_to_dict():
    o = make_options("loo", "pool", 3, {"ante": 10, "dealer_ante": 15,
                                        "loo_penalty": {"mode": "capped", "multiplier": 20},
                                        "lead_trump_threshold": 3}, "recorded")
    assert make_options("loo", "pool", 3, o.to_dict(), "recorded") == o


@pytest.mark.parametrize("players", [2, 3, 4])
def test_s2_two_to_four_players(players):
    assert make_options("loo", "pool", players, {}).players == players


@pytest.mark.parametrize("players", [0, 1, 5, 6, "4", 4.0, True, None])
def test_s2_other_player_counts_refused(players):
    _refused("loo", "pool", players, {})


# ---- §8.2 multiples of 5 ---------------------------------------------------------------------

@pytest.mark.parametrize("field", ["ante", "dealer_ante"])
@pytest.mark.parametrize("value", [1, 3, 7, 12, 99])
def test_s8_2_stakes_must_be_multiples_of_5(field, value):
    err = _refused("loo", "pool", 4, {field: value})
    assert err.rule == "8.2"
    assert "multiple of 5" in err.detail
    assert err.extra.get("field") == field


@pytest.mark.parametrize("field", ["ante", "dealer_ante"])
@pytest.mark.parametrize("value", [-5, "5", 5.0, None, True])
def test_s8_2_stakes_must_be_whole_numbers(field, value):
    _refused("loo", "pool", 4, {field: value})


@pytest.mark.parametrize(("ante", "dealer_ante"), [(0, 5), (5, 0), (10, 20), (25, 5)])
def test_s8_2_multiples_of_5_accepted(ante, dealer_ante):
    o = make_options("loo", "pool", 4, {"ante": ante, "dealer_ante": dealer_ante})
    assert (o.ante, o.dealer_ante) == (ante, dealer_ante)


def test_s8_1_ante_and_dealer_ante_not_both_zero():
    _refused("loo", "pool", 4, {"ante": 0, "dealer_ante": 0})


# ---- variant / scoring combinations ----------------------------------------------------------

def test_s9_rounce_is_always_points():
    assert make_options("rounce", None, 3, {}).scoring == "points"
    assert make_options("rounce", "points", 3, {}).scoring == "points"
    err = _refused("rounce", "pool", 3, {})
    assert err.rule == "9"


def test_s8_loo_defaults_to_pool_and_allows_points():
    assert make_options("loo", None, 4, {}).scoring == "pool"
    assert make_options("loo", "points", 2, {}).scoring == "points"


def test_s8_9_pool_scoring_allowed_with_two_players():
    assert make_options("loo", "pool", 2, {}).scoring == "pool"


@pytest.mark.parametrize(("variant", "scoring"), [("whist", None), ("LOO", "pool"),
                                                  ("loo", "chips"), (None, "pool"),
                                                  ("loo", "")])
def test_s9_unknown_variant_or_scoring_refused(variant, scoring):
    _refused(variant, scoring, 4, {})


@pytest.mark.parametrize("deal", ["shuffled", "recorded", "results"])
def test_s10_deal_modes(deal):
    assert make_options("loo", "pool", 4, {}, deal).deal == deal


def test_s10_unknown_deal_mode_refused():
    _refused("loo", "pool", 4, {}, "dealt")


def test_options_unknown_option_refused():
    err = _refused("loo", "pool", 4, {"antes": 5})
    assert "antes" in err.detail


@pytest.mark.parametrize("auto_deal", [0, 1, "yes", None])
def test_options_auto_deal_must_be_boolean(auto_deal):
    _refused("loo", "pool", 4, {"auto_deal": auto_deal})


# ---- §6.1 threshold, §9 target ---------------------------------------------------------------

@pytest.mark.parametrize("threshold", [1, 2, 3, 5])
def test_s6_1_threshold_option_accepted(threshold):
    assert make_options("loo", "pool", 4,
                        {"lead_trump_threshold": threshold}).lead_trump_threshold == threshold


@pytest.mark.parametrize("threshold", [0, -1, 7, 2.5, "2", True])
def test_s6_1_threshold_option_refused(threshold):
    _refused("loo", "pool", 4, {"lead_trump_threshold": threshold})


@pytest.mark.parametrize("variant", ["loo", "rounce"])
def test_s9_target_option(variant):
    assert make_options(variant, "points", 3, {"target": 21}).target == 21


@pytest.mark.parametrize("target", [0, -15, "15", 15.5, None, False])
def test_s9_target_must_be_positive_whole_number(target):
    _refused("rounce", "points", 3, {"target": target})


# ---- §8.5 penalty caps -----------------------------------------------------------------------

@pytest.mark.parametrize(("players", "mode", "multiplier", "cap"), [
    (4, "uncapped", None, None),
    (3, "uncapped", None, None),
    (4, "fixed", None, 20),
    (3, "fixed", None, 15),
    (2, "fixed", None, 10),
    (4, "capped", 10, 40),
    (4, "capped", 20, 80),
    (3, "capped", 10, 30),
    (3, "capped", 25, 75),
])
def test_s8_5_penalty_cap_modes(players, mode, multiplier, cap):
    penalty = {"mode": mode} if multiplier is None else {"mode": mode, "multiplier": multiplier}
    o = make_options("loo", "pool", players, {"loo_penalty": penalty})
    assert o.penalty_mode == mode
    assert o.penalty_multiplier == multiplier
    assert o.penalty_cap() == cap
    assert o.to_dict()["loo_penalty"] == penalty


@pytest.mark.parametrize("penalty", [
    {"mode": "capped"},                          # no multiplier
    {"mode": "capped", "multiplier": 12},        # not a multiple of 5
    {"mode": "capped", "multiplier": 0},
    {"mode": "capped", "multiplier": -10},
    {"mode": "capped", "multiplier": "10"},
    {"mode": "fixed", "multiplier": 10},         # multiplier only in capped mode
    {"mode": "uncapped", "multiplier": 10},
    {"mode": "capped", "multiplier": 10, "x": 1},
    {"mode": "half"},
    {},
    "uncapped",
    None,
])
def test_s8_5_penalty_cap_options_refused(penalty):
    err = _refused("loo", "pool", 4, {"loo_penalty": penalty})
    assert err.rule in ("8.5", "8.2", None)


def test_s8_5_capped_multiplier_multiple_of_5_cites_8_2():
    err = _refused("loo", "pool", 4, {"loo_penalty": {"mode": "capped", "multiplier": 12}})
    assert err.rule == "8.2" and "multiple of 5" in err.detail


# ---- §4 derived limits -----------------------------------------------------------------------

@pytest.mark.parametrize(("variant", "players", "misses", "draw", "discard", "drop"), [
    ("loo", 2, 2, 6, 1, False),
    ("loo", 3, 2, 6, 1, True),
    ("loo", 4, 1, 7, 2, True),
    ("rounce", 2, 2, 6, 1, True),
    ("rounce", 3, 2, 6, 1, True),
    ("rounce", 4, 1, 7, 2, True),
])
def test_s4_miss_and_drop_limits_per_player_count(variant, players, misses, draw, discard,
                                                   drop):
    o = make_options(variant, "points", players, {})
    assert (o.max_misses, o.miss_draw, o.miss_discard, o.drop_allowed) == (misses, draw,
                                                                            discard, drop)
