"""RULES §5 (trumps in play) and §6 (leading, the forced plays 6.1-6.6, winning tricks).

Deals are recorded so every tile is known; fives are trumps unless said otherwise.
"""

from __future__ import annotations

import pytest

from ledger.core import events as ev
from ledger.core.rules.actions import Play
from ledger.core.rules.legal import legal_actions
from ledger.core.rules.tiles import name
from tests.unit.rules_support import Game, T, of_type, one


def two(seat1: str, seat0: str, turn_up: str = "5-0", variant: str = "loo",
        options: dict | None = None) -> Game:
    """A 2-player recorded hand, dealer 0 (seat 1 leads), both players standing."""
    g = Game(variant=variant, scoring="points", players=2, options=options)
    g.deal({1: seat1, 0: seat0}, turn_up)
    g.decide(1, "play")
    g.decide(0, "play")
    assert g.h.phase == "playing" and g.h.turn == 1
    return g


def three(seat1: str, seat2: str, seat0: str, turn_up: str = "5-0",
          variant: str = "loo") -> Game:
    """A 3-player recorded hand, dealer 0 (seat 1 leads, then 2, then 0), all standing."""
    g = Game(variant=variant, scoring="points", players=3)
    g.deal({1: seat1, 2: seat2, 0: seat0}, turn_up)
    for seat in (1, 2, 0):
        g.decide(seat, "play")
    return g


def legal_tiles(g: Game, seat: int) -> set[str]:
    return {name(a.tile) for a in legal_actions(g.h, seat)}


# ---- leading and declaring the suit ----------------------------------------------------------

def test_s6_eldest_leads_the_first_trick():
    g = two("6-2 4-4 6-6 4-1 3-2", "6-4 3-3 2-2 1-1 4-0")
    assert legal_actions(g.h, 0) == []
    err = g.refuse(Play(0, T("6-4"), 6))
    assert (err.code, err.rule) == ("not_your_turn", "6")


def test_s6_plain_lead_must_declare_one_of_its_suits():
    g = two("6-2 4-4 6-6 4-1 3-2", "6-4 3-3 2-2 1-1 4-0")
    err = g.refuse(Play(1, T("6-2")))
    assert (err.code, err.rule) == ("suit_required", "6")
    assert "6 (sixes)" in err.detail and "2 (twos)" in err.detail
    err = g.refuse(Play(1, T("6-2"), 4))
    assert (err.code, err.rule) == ("invalid_suit", "6")
    assert {(name(a.tile), a.suit) for a in legal_actions(g.h, 1)} == {
        ("6-2", 6), ("6-2", 2), ("4-4", 4), ("6-6", 6), ("4-1", 4), ("4-1", 1), ("3-2", 3),
        ("3-2", 2)}


@pytest.mark.parametrize(("suit", "follower", "winner"), [(2, "2-2", 0), (6, "6-4", 0)])
def test_s6_declared_suit_is_the_led_suit(suit, follower, winner):
    g = two("6-2 4-4 6-6 4-1 3-2", "6-4 3-3 2-2 1-1 4-0")
    out = g.play(1, "6-2", suit)
    assert one(out, ev.TilePlayed).suit == suit
    assert g.h.current.suit == suit
    assert legal_tiles(g, 0) == {follower}
    out = g.play(0, follower)
    won = one(out, ev.TrickWon)
    assert (won.seat, won.suit) == (winner, suit)


def test_s6_double_leads_only_its_own_suit():
    g = two("6-2 4-4 6-6 4-1 3-2", "6-4 3-3 2-2 1-1 4-0")
    err = g.refuse(Play(1, T("4-4"), 1))
    assert (err.code, err.rule) == ("invalid_suit", "6")
    assert "4-4" in err.detail and "own suit" in err.detail
    assert [a.suit for a in legal_actions(g.h, 1) if a.tile == T("4-4")] == [4]
    out = g.play(1, "4-4")  # no declaration needed
    assert one(out, ev.TilePlayed).suit == 4


def test_s6_trump_is_led_as_trumps():
    g = two("5-4 6-6 6-2 4-1 3-2", "6-4 3-3 2-2 1-1 4-0")
    err = g.refuse(Play(1, T("5-4"), 4))
    assert (err.code, err.rule) == ("invalid_suit", "6")
    assert "trump" in err.detail
    assert [a.suit for a in legal_actions(g.h, 1) if a.tile == T("5-4")] == [5]
    assert one(g.play(1, "5-4"), ev.TilePlayed).suit == 5


def test_s6_tile_not_in_hand():
    g = two("6-2 4-4 6-6 4-1 3-2", "6-4 3-3 2-2 1-1 4-0")
    err = g.refuse(Play(1, T("6-4"), 6))
    assert (err.code, err.rule) == ("tile_not_in_hand", "6")
    assert "6-4" in err.detail


# ---- 6.1 and 6.2: when the leader must lead a trump ------------------------------------------

def test_s6_1_leader_with_two_trumps_must_lead_trump():
    g = two("5-4 5-3 6-6 6-2 4-1", "6-4 3-3 2-2 1-1 4-0")
    for tile, suit in (("6-6", None), ("6-2", 6), ("4-1", 1)):
        err = g.refuse(Play(1, T(tile), suit))
        assert (err.code, err.rule) == ("must_lead_trump", "6.1")
        assert "fives" in err.detail and "2 trumps" in err.detail
    assert {(name(a.tile), a.suit) for a in legal_actions(g.h, 1)} == {("5-4", 5), ("5-3", 5)}
    g.play(1, "5-3")
    assert g.h.current.suit == 5


def test_s6_1_must_lead_trump_even_without_a_declared_suit():
    # the binding rule is 6.1: no declaration could make 6-2 a legal lead
    g = two("5-4 5-3 6-6 6-2 4-1", "6-4 3-3 2-2 1-1 4-0")
    err = g.refuse(Play(1, T("6-2")))
    assert (err.code, err.rule) == ("must_lead_trump", "6.1")


def test_s6_1_leader_with_one_trump_may_lead_plain():
    g = two("5-4 6-6 6-2 4-1 3-2", "6-4 3-3 2-2 1-1 4-0")
    assert "6-6" in legal_tiles(g, 1)
    g.play(1, "6-6")
    assert g.h.current.suit == 6


def test_s6_1_threshold_option_three():
    g = two("5-4 5-3 6-6 6-2 4-1", "6-4 3-3 2-2 1-1 4-0",
            options={"lead_trump_threshold": 3})
    assert legal_tiles(g, 1) == {"5-4", "5-3", "6-6", "6-2", "4-1"}
    g.play(1, "6-6")  # two trumps are not enough with the threshold at 3
    g = two("5-4 5-3 5-2 6-6 4-1", "6-4 3-3 2-2 1-1 4-0",
            options={"lead_trump_threshold": 3})
    err = g.refuse(Play(1, T("6-6")))
    assert (err.code, err.rule) == ("must_lead_trump", "6.1")
    assert "3 or more" in err.detail
    assert legal_tiles(g, 1) == {"5-4", "5-3", "5-2"}


def test_s6_1_threshold_option_one():
    g = two("5-4 6-6 6-2 4-1 3-2", "6-4 3-3 2-2 1-1 4-0",
            options={"lead_trump_threshold": 1})
    err = g.refuse(Play(1, T("6-6")))
    assert (err.code, err.rule) == ("must_lead_trump", "6.1")
    assert "you hold 1 trump (fives)" in err.detail, err.detail  # not "1 trumps"
    assert legal_tiles(g, 1) == {"5-4"}


def test_s6_2_trick_winner_holding_two_trumps_is_told_to_lead_one_of_them():
    # With the 6.1 threshold at 3, a winner may hold two trumps when 6.2 binds him: the
    # detail said "hold a trump (fives): you must lead it"; it names what he holds.
    g = two("6-6 5-0 5-1 3-3 2-2", "6-1 4-1 3-1 2-1 1-0", turn_up="5-5",
            options={"lead_trump_threshold": 3})
    g.plays("1:6-6 0:6-1")
    err = g.refuse(Play(1, T("3-3")))
    assert (err.code, err.rule) == ("must_lead_trump", "6.2")
    assert err.detail == ("you won the last trick and hold 5-1 and 5-0 (fives are trumps): "
                          "you must lead one of them"), err.detail


def test_s6_2_trick_winner_must_lead_trump():
    # trumps: fives (turn-up 5-5). Seat 1 holds one trump: free to lead the first trick.
    g = two("6-6 5-0 4-4 3-3 2-2", "6-1 4-1 3-1 2-1 1-0", turn_up="5-5")
    g.plays("1:6-6 0:6-1")
    assert g.h.turn == 1 and g.h.tricks[-1].winner == 1
    err = g.refuse(Play(1, T("4-4")))
    assert (err.code, err.rule) == ("must_lead_trump", "6.2")
    assert "won the last trick" in err.detail and "fives" in err.detail
    assert legal_tiles(g, 1) == {"5-0"}
    g.plays("1:5-0 0:1-0")
    # no trump left: the winner leads freely again
    assert legal_tiles(g, 1) == {"4-4", "3-3", "2-2"}


def test_s6_2_rule_6_1_binds_first_when_it_applies():
    g = two("6-6 5-0 5-1 3-3 2-2", "6-1 4-1 3-1 2-1 1-0", turn_up="5-5",
            options={"lead_trump_threshold": 3})
    g.plays("1:6-6 0:6-1")
    err = g.refuse(Play(1, T("3-3")))
    assert err.rule == "6.2"  # two trumps, threshold 3: only 6.2 applies
    g = two("6-6 5-0 5-1 3-3 2-2", "6-1 4-1 3-1 2-1 1-0", turn_up="5-5")
    assert legal_tiles(g, 1) == {"5-0", "5-1"}
    err = g.refuse(Play(1, T("6-6")))
    assert err.rule == "6.1"


# ---- 6.3 and 6.4: following ------------------------------------------------------------------

def test_s6_3_follower_must_follow_suit():
    g = two("3-2 6-6 4-4 2-1 1-0", "3-1 5-4 2-2 4-0 6-4")
    g.play(1, "3-2", 3)
    assert legal_tiles(g, 0) == {"3-1"}
    for tile in ("6-4", "5-4", "2-2"):  # neither a plain tile nor a trump may replace it
        err = g.refuse(Play(0, T(tile)))
        assert (err.code, err.rule) == ("must_follow_suit", "6.3")
        assert err.detail == "you hold 3-1: you must follow threes"


def test_s6_3_every_follower_of_the_suit_is_allowed():
    g = two("3-2 6-6 4-4 2-1 1-0", "3-1 6-3 2-2 4-0 6-4")
    g.play(1, "3-2", 3)
    assert legal_tiles(g, 0) == {"3-1", "6-3"}


def test_s6_3_trump_led_any_trump_follows():
    g = two("5-4 6-6 6-2 4-1 3-2", "5-1 6-3 2-2 4-0 1-1")
    g.play(1, "5-4")
    assert legal_tiles(g, 0) == {"5-1"}
    err = g.refuse(Play(0, T("6-3")))
    assert (err.code, err.rule) == ("must_follow_suit", "6.3")
    assert err.detail == "you hold 5-1: you must follow fives"


def test_s5_trump_tile_never_follows_plain_suit_in_play():
    # threes led; 5-3 bears a three but is a trump: the holder is void in threes
    g = two("3-2 6-6 4-4 2-1 1-0", "5-3 6-4 2-2 4-0 1-1")
    g.play(1, "3-2", 3)
    assert legal_tiles(g, 0) == {"5-3"}  # Loo: void, so he must trump (6.4), not "follow"
    err = g.refuse(Play(0, T("6-4")))
    assert err.code == "must_trump"


@pytest.mark.parametrize("variant", ["loo", "rounce"])
def test_s5_a_trump_bearing_the_led_suit_does_not_follow_and_the_refusal_says_so(variant):
    # threes led; seat 0 holds 3-1 (a three) and 5-3 (a trump, fives): 5-3 may not follow
    g = two("3-2 6-6 4-4 2-1 1-0", "3-1 5-3 2-2 4-0 6-4", variant=variant)
    g.play(1, "3-2", 3)
    assert legal_tiles(g, 0) == {"3-1"}
    err = g.refuse(Play(0, T("3-5")))
    assert (err.code, err.rule) == ("must_follow_suit", "6.3")
    assert err.detail == ("you hold 3-1: you must follow threes (5-3 is a trump, and only a "
                          "trump: it does not follow threes, §5)")
    assert g.refuse(Play(0, T("2-2"))).detail == "you hold 3-1: you must follow threes"


def test_s6_4_loo_void_must_trump():
    g = two("3-2 6-6 4-4 2-1 1-0", "5-3 6-4 2-2 4-0 1-1")
    g.play(1, "3-2", 3)
    err = g.refuse(Play(0, T("2-2")))
    assert (err.code, err.rule) == ("must_trump", "6.4")
    assert err.detail == "you cannot follow threes but hold 5-3: you must play a trump"
    won = one(g.play(0, "5-3"), ev.TrickWon)
    assert won.seat == 0


def test_s6_4_must_trump_even_when_the_trump_cannot_win():
    g = three("2-1 6-6 4-4 3-2 1-0", "6-5 6-3 3-1 4-0 6-1", "5-1 3-3 3-0 6-4 1-1")
    g.plays("1:2-1/2 2:6-5")
    assert legal_tiles(g, 0) == {"5-1"}  # 5-1 loses to 6-5, still forced
    assert one(g.play(0, "5-1"), ev.TrickWon).seat == 2


def test_s9_rounce_void_may_discard_freely():
    g = two("3-2 6-6 4-4 2-1 1-0", "5-3 6-4 2-2 4-0 1-1", variant="rounce")
    g.play(1, "3-2", 3)
    assert legal_tiles(g, 0) == {"5-3", "6-4", "2-2", "4-0", "1-1"}
    won = one(g.play(0, "6-4"), ev.TrickWon)
    assert won.seat == 1  # 6-4 neither follows nor trumps


def test_s9_rounce_still_follows_suit():
    g = two("3-2 6-6 4-4 2-1 1-0", "3-1 5-4 2-2 4-0 6-4", variant="rounce")
    g.play(1, "3-2", 3)
    assert legal_tiles(g, 0) == {"3-1"}
    assert g.refuse(Play(0, T("5-4"))).code == "must_follow_suit"


def test_s6_5_void_without_trumps_plays_anything():
    g = two("3-2 6-6 4-4 2-1 1-0", "6-4 2-2 4-0 1-1 6-1")
    g.play(1, "3-2", 3)
    assert legal_tiles(g, 0) == {"6-4", "2-2", "4-0", "1-1", "6-1"}


def test_s6_6_nobody_is_obliged_to_win():
    g = three("3-2 6-6 4-4 2-1 1-0", "6-3 3-1 2-2 4-0 6-1", "3-3 3-0 4-2 6-4 1-1")
    g.play(1, "3-2", 3)
    assert legal_tiles(g, 2) == {"6-3", "3-1"}
    g.play(2, "3-1")  # lower than the lead although 6-3 would win
    assert legal_tiles(g, 0) == {"3-3", "3-0"}
    won = one(g.play(0, "3-0"), ev.TrickWon)
    assert won.seat == 1
    assert won.plays == ((1, T("3-2")), (2, T("3-1")), (0, T("3-0")))


# ---- winning tricks and the run of the hand --------------------------------------------------

def test_s6_play_goes_left_and_winner_leads_next():
    g = three("3-2 6-6 4-4 2-1 1-0", "6-3 3-1 2-2 4-0 6-1", "3-3 3-0 4-2 6-4 1-1")
    assert g.h.turn == 1
    g.play(1, "3-2", 3)
    assert g.h.turn == 2
    g.play(2, "6-3")
    assert g.h.turn == 0
    out = g.play(0, "3-0")
    assert one(out, ev.TrickWon).seat == 2  # 6-3 outranks 3-2 in threes
    assert g.h.turn == 2 and g.h.current is None
    assert g.h.tricks_won == (0, 0, 1)


def test_s6_five_tricks_then_the_hand_is_complete():
    g = two("6-6 5-0 4-4 3-3 2-2", "6-1 4-1 3-1 2-1 1-0", turn_up="5-5")
    out = g.plays("1:6-6 0:6-1 1:5-0 0:1-0 1:4-4 0:4-1 1:3-3 0:3-1 1:2-2 0:2-1")
    tricks = of_type(out, ev.TrickWon)
    assert [t.trick for t in tricks] == [1, 2, 3, 4, 5]
    assert [t.seat for t in tricks] == [1] * 5
    done = one(out, ev.HandCompleted)
    assert done.tricks_won == (0, 5) and done.looed == (0,)
    assert g.h.phase == "complete" and g.h.turn is None
    assert all(h == () for h in g.h.hands)
    assert legal_actions(g.h, 0) == legal_actions(g.h, 1) == []


def test_s6_one_tile_a_trick_by_every_active_player():
    g = Game(players=4)
    g.deal({2: "6-6 4-4 3-3 2-0 1-0", 3: "6-0 4-0 3-0 2-1 1-1", 0: "6-4 4-3 6-3 2-2 0-0",
            1: "3-1 4-1 6-1 3-2 4-2"}, "5-0")
    g.decide(1, "drop")
    for seat in (2, 3, 0):
        g.decide(seat, "play")
    out = g.plays("2:6-6 3:6-0 0:6-3")
    won = one(out, ev.TrickWon)
    assert [s for s, _ in won.plays] == [2, 3, 0]  # seat 1 dropped: skipped
    assert len(g.h.hands[1]) == 5
