"""RULES §4: decisions before play (play, miss, drop, the dealer's turn-up, playing for the pool,
dealer wins without play, one player left) and §9 Rounce passing."""

from __future__ import annotations

import pytest

from ledger.core import events as ev
from ledger.core.errors import LedgerError
from ledger.core.rules.actions import Decide, Discard
from ledger.core.rules.deal import deal, shuffle
from ledger.core.rules.legal import legal_actions
from ledger.core.rules.tiles import name
from tests.unit.rules_support import TS, Game, T, of_type, one

SEED = bytes(32)  # API.md vector 1: with 4 players and dealer 0 the hands are known


def shuffled(players=4, variant="loo", scoring=None, dealer=0, seed=SEED, options=None):
    g = Game(variant=variant, scoring=scoring, players=players, deal="shuffled", dealer=dealer,
             options=options)
    g.shuffled(seed)
    return g


def choices(g: Game, seat: int) -> set[str]:
    return {a.choice for a in legal_actions(g.h, seat) if isinstance(a, Decide)}


# ---- order of decisions ----------------------------------------------------------------------

@pytest.mark.parametrize("dealer", [0, 1, 2, 3])
def test_s4_decisions_start_left_of_dealer_and_end_with_dealer(dealer):
    g = shuffled(dealer=dealer)
    seen = []
    while g.h.phase == "deciding":
        seat = g.h.turn
        seen.append(seat)
        for other in range(4):
            if other != seat:
                assert legal_actions(g.h, other) == []
        g.decide(seat, "play")
    assert seen == [(dealer + 1) % 4, (dealer + 2) % 4, (dealer + 3) % 4, dealer]
    assert g.h.phase == "playing"
    assert g.h.turn == (dealer + 1) % 4  # the eldest leads


def test_s4_not_your_turn():
    g = shuffled()
    err = g.refuse(Decide(2, "play"))
    assert (err.code, err.rule) == ("not_your_turn", "4")
    assert "seat 1" in err.detail


def test_s4_each_player_decides_exactly_once():
    g = shuffled()
    g.decide(1, "play")
    err = g.refuse(Decide(1, "drop"))
    assert err.code == "not_your_turn"
    assert g.h.decisions == (None, "play", None, None)


def test_s4_unknown_choice_refused():
    g = shuffled()
    err = g.refuse(Decide(1, "pass"))
    assert (err.code, err.rule) == ("invalid_choice", "4")


def test_s4_no_seat_outside_the_table():
    g = shuffled()
    assert g.refuse(Decide(7, "play")).code == "invalid_seat"


# ---- the miss --------------------------------------------------------------------------------

@pytest.mark.parametrize(("players", "draw", "discard"), [(2, 6, 1), (3, 6, 1), (4, 7, 2)])
def test_s4_miss_sizes_2_3_4_players(players, draw, discard):
    g = shuffled(players=players)
    d = deal(shuffle(SEED), players, 0)
    out = g.decide(1, "miss")
    drawn = one(out, ev.MissDrawn)
    assert drawn.tiles == d.boneyard[:draw]  # §3.4: from the boneyard in shuffled order
    assert drawn.put_out == d.hands[1]
    assert g.h.phase == "discarding" and g.h.turn == 1
    assert sorted(g.h.hands[1]) == sorted(d.boneyard[:draw])
    assert len(g.h.boneyard) == len(d.boneyard) - draw
    # the discard must bring the hand back to five
    for wrong in (discard - 1, discard + 1):
        err = g.refuse(Discard(1, tuple(g.h.hands[1][:wrong])))
        assert (err.code, err.rule) == ("invalid_discard", "4")
    legal = legal_actions(g.h, 1)
    assert legal and all(isinstance(a, Discard) and len(a.tiles) == discard for a in legal)
    gone = g.h.hands[1][:discard]
    out = g.act(Discard(1, gone))
    assert one(out, ev.TilesDiscarded).tiles == gone
    assert len(g.h.hands[1]) == 5
    assert g.h.discards[1] == gone
    assert g.h.decisions[1] == "miss"
    assert g.h.phase == "deciding" and g.h.turn == 2 % players


def test_s4_discard_must_be_own_tiles():
    g = shuffled(players=3)
    g.decide(1, "miss")
    outsider = next(t for t in range(28) if t not in g.h.hands[1])
    err = g.refuse(Discard(1, (outsider,)))
    assert (err.code, err.rule) == ("tile_not_in_hand", "4")
    assert name(outsider) in err.detail
    err = g.refuse(Discard(1, (g.h.hands[1][0], g.h.hands[1][0])))
    assert err.code == "invalid_discard"


def test_s4_two_players_both_may_miss_and_never_draw_discards():
    g = shuffled(players=2)
    d = deal(shuffle(SEED), 2, 0)
    g.decide(1, "miss")
    g.act(Discard(1, (g.h.hands[1][0],)))
    assert "miss" in choices(g, 0)
    out = g.decide(0, "miss")
    second = one(out, ev.MissDrawn).tiles
    assert second == d.boneyard[6:12]  # fresh tiles, next in order
    assert not set(second) & set(g.h.discards[1] + g.h.put_out[1])
    g.act(Discard(0, (g.h.hands[0][-1],)))
    assert g.h.phase == "playing" and g.h.misses == 2


def test_s4_three_players_at_most_two_misses():
    g = shuffled(players=3, dealer=0)
    g.decide(1, "miss")
    g.act(legal_actions(g.h, 1)[0])
    g.decide(2, "miss")
    g.act(legal_actions(g.h, 2)[0])
    assert "miss" not in choices(g, 0)
    err = g.refuse(Decide(0, "miss"))
    assert (err.code, err.rule) == ("miss_unavailable", "4")
    assert choices(g, 0) == {"play", "drop"}


def test_s4_four_players_single_miss():
    g = shuffled(players=4)
    g.decide(1, "miss")
    assert len(one(g.events, ev.MissDrawn).tiles) == 7
    g.act(legal_actions(g.h, 1)[0])
    assert len(g.h.boneyard) == 0
    for seat in (2, 3, 0):
        assert "miss" not in choices(g, seat)
        err = g.refuse(Decide(seat, "miss"))
        assert (err.code, err.rule) == ("miss_unavailable", "4")
        g.decide(seat, "play")
    assert g.h.phase == "playing"


@pytest.mark.parametrize("variant", ["loo", "rounce"])
def test_s9_rounce_has_the_same_dummies(variant):
    # Rounce: two dummies of six with 2-3 players, one of seven with 4 (same as the miss)
    for players, draw in ((2, 6), (3, 6), (4, 7)):
        g = shuffled(players=players, variant=variant, scoring="points")
        out = g.decide(1, "miss")
        assert len(one(out, ev.MissDrawn).tiles) == draw


def test_s4_no_drop_after_miss():
    g = shuffled(players=4)
    g.decide(1, "miss")
    # while discarding the miss-taker cannot drop
    err = g.refuse(Decide(1, "drop"))
    assert err.code == "wrong_phase"
    assert all(isinstance(a, Discard) for a in legal_actions(g.h, 1))
    g.act(legal_actions(g.h, 1)[0])
    # and once the discard is done his one decision is made
    err = g.refuse(Decide(1, "drop"))
    assert err.code == "not_your_turn"
    assert g.h.decisions[1] == "miss" and 1 in g.h.active


def test_s4_miss_refuses_drawn_tiles_on_shuffled_tables():
    g = shuffled(players=3)
    err = g.refuse(Decide(1, "miss", drawn=tuple(g.h.boneyard[:6])))
    assert err.code == "drawn_not_allowed"


def test_s4_recorded_miss_names_the_drawn_tiles():
    g = Game(players=3, deal="recorded")
    g.deal({1: "1-1 6-4 4-1 5-3 5-4", 2: "1-0 6-0 6-1 5-0 3-3", 0: "4-4 2-1 5-2 4-3 0-0"},
           "5-1")
    unseen = g.h.boneyard
    assert len(unseen) == 12 and not g.h.ordered
    assert g.refuse(Decide(1, "miss")).code == "drawn_required"
    assert g.refuse(Decide(1, "miss", drawn=tuple(unseen[:5]))).code == "invalid_drawn"
    dealt = TS("6-0 5-1 5-0 4-0 3-0 2-0")  # 6-0 is seat 2's, 5-1 is the turn-up
    err = g.refuse(Decide(1, "miss", drawn=dealt))
    assert err.code == "invalid_drawn" and "5-1" in err.detail
    assert "6-0" not in err.detail  # §10: seat 2's tile is not named to seat 1
    g.decide(1, "miss", drawn=tuple(unseen[:6]))
    g.act(Discard(1, (unseen[0],)))
    # the discarded tile can never be drawn again
    err = g.refuse(Decide(2, "miss", drawn=(unseen[0],) + tuple(unseen[6:11])))
    assert err.code == "invalid_drawn"
    g.decide(2, "miss", drawn=tuple(unseen[6:12]))
    assert len(g.h.boneyard) == 0


def test_s4_recorded_four_player_miss_takes_the_whole_boneyard():
    g = Game(players=4, deal="recorded")
    g.deal({1: "1-1 6-4 4-1 5-3 5-4", 2: "1-0 6-0 6-1 5-0 3-3", 3: "4-4 2-1 5-2 4-3 0-0",
            0: "3-1 4-2 6-5 6-6 6-3"}, "5-1")
    assert sorted(g.h.boneyard) == sorted(TS("6-2 4-0 5-5 3-2 2-2 3-0 2-0"))
    [miss] = [a for a in legal_actions(g.h, 1) if a.choice == "miss"]
    assert miss == Decide(1, "miss")  # §10: the offer names no boneyard tile
    out = g.act(miss)
    assert sorted(one(out, ev.MissDrawn).tiles) == sorted(TS("6-2 4-0 5-5 3-2 2-2 3-0 2-0"))


def test_s10_invalid_drawn_never_locates_a_tile_the_seat_cannot_see():
    """A refused miss on a recorded table names the seat's own tiles and the turn-up, but never
    says which named tile lies in another hand (that would show the seat another's tiles)."""
    g = Game(players=3, deal="recorded")
    g.deal({1: "1-1 6-4 4-1 5-3 5-4", 2: "1-0 6-0 6-1 5-0 3-3", 0: "4-4 2-1 5-2 4-3 0-0"},
           "5-1")
    unseen = tuple(g.h.boneyard[:5])
    err = g.refuse(Decide(1, "miss", drawn=unseen + (T("6-0"),)))  # 6-0 is seat 2's
    assert (err.code, err.rule) == ("invalid_drawn", "4")
    assert "6-0" not in err.detail and all(name(t) not in err.detail for t in unseen)
    err = g.refuse(Decide(1, "miss", drawn=unseen + (T("6-4"),)))  # seat 1's own tile
    assert "6-4" in err.detail and "your hand" in err.detail
    err = g.refuse(Decide(1, "miss", drawn=(T("6-0"),) + unseen[:4] + (T("5-1"),)))
    assert "5-1" in err.detail and "turn-up" in err.detail and "6-0" not in err.detail


def test_s10_legal_actions_never_show_the_recorded_boneyard_before_a_miss():
    """A seat deciding on a recorded table must not learn the boneyard from its legal actions
    (it could then choose to miss or not knowing the draw): 4 players, and a 3-player second
    miss, which takes the six tiles left."""
    g = Game(players=4, deal="recorded")
    g.deal({1: "1-1 6-4 4-1 5-3 5-4", 2: "1-0 6-0 6-1 5-0 3-3", 3: "4-4 2-1 5-2 4-3 0-0",
            0: "3-1 4-2 6-5 6-6 6-3"}, "5-1")
    assert [a for a in legal_actions(g.h, 1) if a.choice == "miss"] == [Decide(1, "miss")]
    g = Game(players=3, deal="recorded")
    g.deal({1: "1-1 6-4 4-1 5-3 5-4", 2: "1-0 6-0 6-1 5-0 3-3", 0: "4-4 2-1 5-2 4-3 0-0"},
           "5-1")
    assert not [a for a in legal_actions(g.h, 1) if a.choice == "miss"]  # needs "drawn"
    g.decide(1, "miss", drawn=tuple(g.h.boneyard[:6]))
    g.act(Discard(1, (g.h.hands[1][0],)))
    left = set(g.h.boneyard)
    offered = [a for a in legal_actions(g.h, 2) if a.choice == "miss"]
    assert offered == [Decide(2, "miss")]
    out = g.act(offered[0])
    assert set(one(out, ev.MissDrawn).tiles) == left


# ---- drop ------------------------------------------------------------------------------------

def test_s4_no_drop_in_two_player_loo():
    g = shuffled(players=2)
    assert choices(g, 1) == {"play", "miss"}
    err = g.refuse(Decide(1, "drop"))
    assert (err.code, err.rule) == ("drop_not_allowed", "4")
    assert "3 or 4 players" in err.detail


@pytest.mark.parametrize("players", [3, 4])
def test_s4_drop_allowed_with_three_or_four(players):
    g = shuffled(players=players)
    assert choices(g, 1) == {"play", "miss", "drop"}
    g.decide(1, "drop")
    assert 1 not in g.h.active


def test_s9_rounce_pass_allowed_with_two():
    g = shuffled(players=2, variant="rounce")
    assert "drop" in choices(g, 1)
    out = g.decide(1, "drop")
    won = one(out, ev.HandWonWithoutPlay)
    assert (won.seat, won.reason) == (0, "all_dropped")
    settled = g.settle()
    assert one(settled, ev.PointsScored).totals == (10, 15)  # the trump-holder: minus 5


def test_s6_dropped_players_are_skipped_in_play():
    g = shuffled(players=4, dealer=0)
    g.decide(1, "drop")
    g.decide(2, "play")
    g.decide(3, "drop")
    g.decide(0, "play")
    assert g.h.phase == "playing"
    assert g.h.turn == 2  # the eldest *active* player leads
    assert g.h.eldest == 2


# ---- the dealer's turn-up --------------------------------------------------------------------

def test_s4_dealer_takes_turn_up_and_discards_one():
    g = shuffled()  # dealer 0 holds 3-1 4-2 6-5 6-6 6-3; the turn-up is 5-1
    for seat in (1, 2, 3):
        g.decide(seat, "play")
    takes = [a for a in legal_actions(g.h, 0) if a.take_turn_up]
    assert sorted(a.discard for a in takes) == sorted((t,) for t in g.h.hands[0])
    out = g.decide(0, "play", take_turn_up=True, discard=(T("3-1"),))
    assert one(out, ev.TurnUpTaken).tile == T("5-1")
    assert one(out, ev.TilesDiscarded).tiles == (T("3-1"),)
    assert sorted(g.h.hands[0]) == sorted(TS("4-2 6-5 6-6 6-3 5-1"))
    assert g.h.turn_up_taken and g.h.discards[0] == (T("3-1"),)
    assert g.h.phase == "playing"


def test_s4_only_the_dealer_takes_turn_up():
    g = shuffled()
    assert not any(a.take_turn_up for a in legal_actions(g.h, 1))
    err = g.refuse(Decide(1, "play", take_turn_up=True, discard=(g.h.hands[1][0],)))
    assert (err.code, err.rule) == ("turn_up_not_allowed", "4")


def test_s4_turn_up_discard_is_one_tile_of_the_dealers_own():
    g = shuffled()
    for seat in (1, 2, 3):
        g.decide(seat, "play")
    assert g.refuse(Decide(0, "play", take_turn_up=True)).code == "invalid_discard"
    assert g.refuse(Decide(0, "play", take_turn_up=True,
                           discard=TS("3-1 4-2"))).code == "invalid_discard"
    err = g.refuse(Decide(0, "play", take_turn_up=True, discard=(T("5-5"),)))
    assert err.code == "tile_not_in_hand" and "5-5" in err.detail
    err = g.refuse(Decide(0, "play", discard=(T("3-1"),)))  # a discard without the turn-up
    assert err.code == "turn_up_not_allowed"


def test_s3_3_dealer_who_takes_the_turn_up_holds_it_until_he_plays_it():
    """§4 says the turn-up joins the dealer's hand and he discards one tile; §3.3 says that
    once he takes it everyone knows he holds it until he plays it. So the tile discarded is
    one of his own five, never the turn-up itself (that would be a silent "play" that leaves
    the table believing a trump is in his hand)."""
    g = shuffled()  # dealer 0 holds 3-1 4-2 6-5 6-6 6-3; the turn-up is 5-1
    for seat in (1, 2, 3):
        g.decide(seat, "play")
    assert Decide(0, "play", take_turn_up=True, discard=(T("5-1"),)) not in legal_actions(g.h, 0)
    err = g.refuse(Decide(0, "play", take_turn_up=True, discard=(T("5-1"),)))
    assert (err.code, err.rule) == ("invalid_discard", "3.3")
    assert "5-1" in err.detail and "one of your own five" in err.detail


def test_s4_no_turn_up_after_miss():
    g = shuffled(players=3)
    g.decide(1, "play")
    g.decide(2, "play")
    legal = legal_actions(g.h, 0)
    assert not any(a.take_turn_up and a.choice != "play" for a in legal)
    err = g.refuse(Decide(0, "miss", take_turn_up=True, discard=(g.h.hands[0][0],)))
    assert (err.code, err.rule) == ("turn_up_not_allowed", "4")
    assert "miss" in err.detail
    g.decide(0, "miss")
    g.act(legal_actions(g.h, 0)[0])
    assert not g.h.turn_up_taken
    assert g.h.turn_up not in g.h.hands[0]
    assert not of_type(g.events, ev.TurnUpTaken)


# ---- playing for the pool --------------------------------------------------------------------

def _to_dealer(g: Game, script: list[str]) -> None:
    for seat, choice in zip((1, 2, 3), script, strict=False):
        if choice == "miss":
            g.decide(seat, "miss")
            g.act(legal_actions(g.h, seat)[0])
        else:
            g.decide(seat, choice)


def test_s4_for_pool_in_its_situation():
    g = shuffled()
    _to_dealer(g, ["miss", "drop", "drop"])
    assert g.h.turn == 0
    legal = legal_actions(g.h, 0)
    pool_plays = [a for a in legal if a.for_pool]
    assert pool_plays and all(a.choice == "play" for a in pool_plays)
    assert Decide(0, "play", for_pool=True) in legal
    assert Decide(0, "play", take_turn_up=True, discard=(T("3-1"),), for_pool=True) in legal
    out = g.decide(0, "play", for_pool=True)
    assert one(out, ev.PlayerDecided).for_pool
    assert g.h.for_pool and g.h.phase == "playing"


@pytest.mark.parametrize(("variant", "scoring", "players", "script", "choice"), [
    ("loo", "pool", 4, ["miss", "play", "drop"], "play"),   # two others still in
    ("loo", "pool", 4, ["miss", "play", "play"], "play"),
    ("loo", "pool", 4, ["play", "drop", "drop"], "play"),   # the one left did not miss:
    ("loo", "pool", 4, ["drop", "drop", "play"], "play"),   # a miss is still available
    ("loo", "pool", 4, ["miss", "drop", "drop"], "drop"),   # only with "play"
    ("loo", "points", 4, ["miss", "drop", "drop"], "play"),  # pool scoring only
    ("loo", "pool", 3, ["miss", "drop"], "play"),           # 4 players only
    ("rounce", "points", 4, ["miss", "drop", "drop"], "play"),
])
def test_s4_for_pool_only_in_its_situation(variant, scoring, players, script, choice):
    g = shuffled(players=players, variant=variant, scoring=scoring)
    _to_dealer(g, script)
    assert g.h.turn == 0
    assert not any(a.for_pool and a.choice == choice for a in legal_actions(g.h, 0))
    err = g.refuse(Decide(0, choice, for_pool=True))
    assert (err.code, err.rule) == ("for_pool_not_allowed", "4")


def test_s4_for_pool_never_for_a_non_dealer():
    g = shuffled()
    err = g.refuse(Decide(1, "play", for_pool=True))
    assert err.code == "for_pool_not_allowed"


# ---- ends without play -----------------------------------------------------------------------

@pytest.mark.parametrize(("variant", "players"), [("loo", 3), ("loo", 4), ("rounce", 2),
                                                  ("rounce", 3), ("rounce", 4)])
def test_s4_dealer_wins_without_play(variant, players):
    g = shuffled(players=players, variant=variant)
    out = []
    for seat in range(1, players):
        out = g.decide(seat, "drop")
    won = one(out, ev.HandWonWithoutPlay)
    assert (won.seat, won.reason) == (0, "all_dropped")
    done = one(out, ev.HandCompleted)
    assert done.tricks_won == (5,) + (0,) * (players - 1)
    assert done.looed == () and done.dropped == tuple(range(1, players))
    assert g.h.decisions[0] is None  # no decision to make
    assert g.h.tricks == () and g.h.phase == "complete"
    assert legal_actions(g.h, 0) == []
    with pytest.raises(LedgerError):
        g.act(Decide(0, "play"))


@pytest.mark.parametrize("first", ["play", "miss"])
def test_s4_lone_player_wins_five(first):
    g = shuffled(players=4)
    _to_dealer(g, [first, "drop", "drop"])
    out = g.decide(0, "drop")
    won = one(out, ev.HandWonWithoutPlay)
    assert (won.seat, won.reason) == (1, "one_left")
    done = one(out, ev.HandCompleted)
    assert done.tricks_won == (0, 5, 0, 0)
    assert done.dropped == (0, 2, 3) and done.looed == ()
    assert g.h.tricks == () and g.h.phase == "complete"


def test_s4_lone_player_wins_five_three_players():
    g = shuffled(players=3)
    g.decide(1, "drop")
    g.decide(2, "play")
    out = g.decide(0, "drop")
    assert one(out, ev.HandWonWithoutPlay).seat == 2
    assert one(out, ev.HandCompleted).tricks_won == (0, 0, 5)


def test_s4_hand_played_when_two_remain():
    g = shuffled(players=4)
    _to_dealer(g, ["drop", "drop", "play"])
    g.decide(0, "play")
    assert g.h.phase == "playing" and g.h.active == [0, 3]
    assert not of_type(g.events, ev.HandWonWithoutPlay)
