"""RULES §7 (end of hand, looed), §8 (pool scoring) and §9 (Loo points, Rounce)."""

from __future__ import annotations

import pytest

from ledger.core import events as ev
from ledger.core.errors import LedgerError
from ledger.core.rules import scoring
from ledger.core.rules.actions import Decide
from ledger.core.rules.legal import legal_actions
from tests.unit.rules_support import Game, of_type, one

# A 4-player deal with no trump in any hand (fives trump, turn-up 5-0): seat 1 drops, seat 2
# wins two tricks, the dealer (seat 0) three, seat 3 none.
NO_TRUMPS = {2: "6-6 4-4 3-3 2-0 1-0", 3: "6-0 4-0 3-0 2-1 1-1", 0: "6-4 4-3 6-3 2-2 0-0",
             1: "3-1 4-1 6-1 3-2 4-2"}
NO_TRUMPS_PLAY = ("2:6-6 3:6-0 0:6-3 2:4-4 3:4-0 0:4-3 2:2-0/0 3:3-0 0:0-0 "
                  "0:6-4/6 2:1-0 3:1-1 0:2-2 2:3-3 3:2-1")

# 2-player tie-break deals (blanks trump, nobody holds one): seat 1 and seat 0 split 2-3.
TIE_HANDS = {1: "6-6 5-5 2-1 3-1 4-1", 0: "6-5 5-4 2-2 3-3 4-4"}
SEAT1_FIRST = "1:6-6/6 0:6-5 1:5-5/5 0:5-4 1:2-1/2 0:2-2 0:3-3/3 1:3-1 0:4-4/4 1:4-1"
SEAT0_FIRST = "1:2-1/2 0:2-2 0:3-3/3 1:3-1 0:4-4/4 1:4-1 0:6-5/6 1:6-6 1:5-5/5 0:5-4"


def conserved(g: Game) -> None:
    assert sum(g.t.balances) + g.t.pool == 0


# ---- §7 end of the hand ----------------------------------------------------------------------

def test_s7_looed_vs_dropped():
    g = Game(players=4)
    g.deal(NO_TRUMPS, "5-0")
    g.decide(1, "drop")
    for seat in (2, 3, 0):
        g.decide(seat, "play")
    out = g.plays(NO_TRUMPS_PLAY)
    assert [t.seat for t in of_type(out, ev.TrickWon)] == [2, 2, 0, 0, 0]
    done = one(out, ev.HandCompleted)
    assert done.tricks_won == (3, 0, 2, 0)
    assert done.looed == (3,)    # stayed in, won nothing
    assert done.dropped == (1,)  # dropped: never looed, cannot win
    settled = g.settle()
    assert one(settled, ev.PlayerLooed).seat == 3
    assert one(settled, ev.TricksPaid).payments == (15, 0, 10, 0)
    # P = 25: seat 0 dealt (10), others 5; seat 3 pays the loo penalty of 25
    assert g.t.balances == (5, -5, 5, -30)
    assert g.t.pool == 25
    conserved(g)


def test_s7_dealer_playing_for_the_pool_is_never_looed():
    g = Game(players=4, deal="shuffled")
    g.shuffled(bytes(32))
    g.decide(1, "miss")
    g.act(legal_actions(g.h, 1)[0])
    g.decide(2, "drop")
    g.decide(3, "drop")
    g.decide(0, "play", for_pool=True)
    while g.t.live:
        g.act(legal_actions(g.h, g.h.turn)[0])
    done = one(g.events, ev.HandCompleted)
    assert done.for_pool
    assert 0 not in done.looed
    settled = g.settle()
    paid = one(settled, ev.TricksPaid)
    assert paid.payments[0] == 0  # his share stays in the pool
    assert paid.payments[1] == 5 * done.tricks_won[1]
    penalties = sum(e.amount for e in of_type(settled, ev.PenaltyAssessed))
    assert g.t.pool == 25 - paid.payments[1] + penalties
    conserved(g)


# ---- §8 pool scoring -------------------------------------------------------------------------

def test_s8_1_stakes_on_an_empty_pool_and_on_a_carried_pool():
    g = Game(players=4, deal="results", dealer=2)
    out = g.result({"decisions": {"3": "play", "0": "play", "1": "play", "2": "play"},
                    "tricks": {"3": 2, "0": 1, "1": 1, "2": 1}})
    stakes = of_type(out, ev.StakePosted)
    assert [(s.seat, s.amount, s.reason) for s in stakes] == [
        (3, 5, "ante"), (0, 5, "ante"), (1, 5, "ante"), (2, 5, "ante"), (2, 5, "dealer_ante")]
    assert g.h.pool_at_start == 25
    g.settle()
    assert g.t.pool == 0  # nobody looed: the pool is emptied
    out = g.result({"decisions": {"0": "play", "1": "play", "2": "play", "3": "play"},
                    "tricks": {"0": 5}})
    assert len(of_type(out, ev.StakePosted)) == 5  # empty again: everybody antes
    g.settle()
    assert g.t.pool == 3 * 25
    out = g.result({"decisions": {"1": "drop", "2": "drop", "3": "drop"}})
    stakes = of_type(out, ev.StakePosted)
    assert [(s.seat, s.amount, s.reason) for s in stakes] == [(0, 5, "dealer_ante")]
    assert g.h.pool_at_start == 80
    conserved(g)


@pytest.mark.parametrize(("players", "p"), [(2, 15), (3, 20), (4, 25)])
def test_s8_1_first_pool_per_player_count(players, p):
    g = Game(players=players, deal="shuffled")
    g.shuffled(bytes(32))
    assert g.h.pool_at_start == p == g.t.pool
    assert g.t.balances[0] == -10 and all(b == -5 for b in g.t.balances[1:])


def test_s8_1_stake_options():
    g = Game(players=3, deal="shuffled", options={"ante": 10, "dealer_ante": 20})
    g.shuffled(bytes(32))
    assert g.h.pool_at_start == 50 and g.t.balances == (-30, -10, -10)


def test_s8_worked_example():
    """RULES §8 worked example: A, B, C, D = seats 0-3, A deals first."""
    g = Game(players=4, deal="results", dealer=0)
    # Hand 1: A 3 tricks, B and C looed, D 2 tricks.
    out = g.result({"decisions": {"1": "play", "2": "play", "3": "play", "0": "play"},
                    "tricks": {"0": 3, "1": 0, "2": 0, "3": 2}})
    assert [(s.seat, s.amount) for s in of_type(out, ev.StakePosted)] == [
        (1, 5), (2, 5), (3, 5), (0, 5), (0, 5)]
    assert g.h.pool_at_start == 25
    settled = g.settle()
    assert one(settled, ev.TricksPaid).trick_value == 5
    assert one(settled, ev.TricksPaid).payments == (15, 0, 0, 10)
    assert [(e.seat, e.amount) for e in of_type(settled, ev.PenaltyAssessed)] == [(1, 25),
                                                                                   (2, 25)]
    assert g.t.balances == (5, -30, -30, 5) and g.t.pool == 50
    conserved(g)
    # Hand 2: B deals (+5): P = 55. A looed, B drops, C takes all five, D looed.
    out = g.result({"decisions": {"2": "play", "3": "play", "0": "play", "1": "drop"},
                    "tricks": {"2": 5}})
    assert [(s.seat, s.amount, s.reason) for s in of_type(out, ev.StakePosted)] == [
        (1, 5, "dealer_ante")]
    assert g.h.pool_at_start == 55
    settled = g.settle()
    assert one(settled, ev.TricksPaid).trick_value == 11
    assert one(settled, ev.TricksPaid).payments == (0, 0, 55, 0)
    assert [(e.seat, e.amount) for e in of_type(settled, ev.PenaltyAssessed)] == [(0, 55),
                                                                                   (3, 55)]
    assert g.t.balances == (-50, -35, 25, -50) and g.t.pool == 110
    conserved(g)
    # Hand 3: C deals (+5): P = 115, each trick worth 23.
    g.result({"decisions": {"3": "play", "0": "play", "1": "play", "2": "play"},
              "tricks": {"0": 2, "1": 2, "3": 1}})
    assert g.h.pool_at_start == 115
    settled = g.settle()
    assert one(settled, ev.TricksPaid).trick_value == 23
    assert one(settled, ev.TricksPaid).payments == (46, 46, 0, 23)
    assert [(e.seat, e.amount) for e in of_type(settled, ev.PenaltyAssessed)] == [(2, 115)]
    assert g.t.balances == (-4, 11, -95, -27) and g.t.pool == 115
    conserved(g)
    assert g.t.dealer == 3


@pytest.mark.parametrize(("penalty", "hand1", "p2", "hand2", "p3"), [
    ({"mode": "uncapped"}, (25, None, 25), 55, (55, None, 55), 115),
    ({"mode": "fixed"}, (25, 20, 20), 45, (45, 20, 20), 45),
    ({"mode": "capped", "multiplier": 10}, (25, 40, 25), 55, (55, 40, 40), 85),
    ({"mode": "capped", "multiplier": 20}, (25, 80, 25), 55, (55, 80, 55), 115),
])
def test_s8_5_penalty_caps(penalty, hand1, p2, hand2, p3):
    """The worked example under every cap: the record keeps uncapped amount, cap and paid."""
    g = Game(players=4, deal="results", dealer=0, options={"loo_penalty": penalty})
    g.result({"decisions": {"1": "play", "2": "play", "3": "play", "0": "play"},
              "tricks": {"0": 3, "3": 2}})
    settled = g.settle()
    for e in of_type(settled, ev.PenaltyAssessed):
        assert (e.uncapped, e.cap, e.amount) == hand1
        assert e.mode == penalty["mode"]
    g.result({"decisions": {"2": "play", "3": "play", "0": "play", "1": "drop"},
              "tricks": {"2": 5}})
    assert g.h.pool_at_start == p2
    settled = g.settle()
    assessed = of_type(settled, ev.PenaltyAssessed)
    assert [e.seat for e in assessed] == [0, 3]
    for e in assessed:
        assert (e.uncapped, e.cap, e.amount) == hand2
    g.result({"decisions": {"0": "drop", "1": "drop", "3": "drop"}})
    assert g.h.pool_at_start == p3
    conserved(g)


def test_s8_5_fixed_penalty_whatever_p_is():
    # ante 0: P is only the dealer's 5, yet the fixed penalty is 5 x 4 players
    g = Game(players=4, deal="results", dealer=0,
             options={"ante": 0, "loo_penalty": {"mode": "fixed"}})
    g.result({"decisions": {"1": "play", "2": "play", "3": "play", "0": "play"},
              "tricks": {"0": 5}})
    assert g.h.pool_at_start == 5
    settled = g.settle()
    assessed = of_type(settled, ev.PenaltyAssessed)
    assert [(e.seat, e.uncapped, e.cap, e.amount) for e in assessed] == [
        (1, 5, 20, 20), (2, 5, 20, 20), (3, 5, 20, 20)]
    conserved(g)


def test_s8_5_capped_penalty_never_more_than_p():
    g = Game(players=4, deal="results", dealer=0,
             options={"ante": 0, "loo_penalty": {"mode": "capped", "multiplier": 10}})
    g.result({"decisions": {"1": "play", "2": "play", "3": "play", "0": "play"},
              "tricks": {"0": 5}})
    settled = g.settle()
    assert {(e.uncapped, e.cap, e.amount) for e in of_type(settled, ev.PenaltyAssessed)} == {
        (5, 40, 5)}


def test_s8_3_dealer_winning_without_play_takes_the_whole_pool():
    g = Game(players=3, deal="shuffled")
    g.shuffled(bytes(32))
    g.decide(1, "drop")
    g.decide(2, "drop")
    settled = g.settle()
    paid = one(settled, ev.TricksPaid)
    assert paid.payments == (20, 0, 0) and paid.reason == "pool_award"
    assert g.t.pool == 0 and g.t.balances == (10, -5, -5)
    assert not of_type(settled, ev.PenaltyAssessed)


def test_s8_3_lone_player_takes_five_tricks_worth():
    g = Game(players=4, deal="shuffled")
    g.shuffled(bytes(32))
    g.decide(1, "drop")
    g.decide(2, "play")
    g.decide(3, "drop")
    g.decide(0, "drop")
    settled = g.settle()
    paid = one(settled, ev.TricksPaid)
    assert paid.payments == (0, 0, 25, 0) and paid.reason == "trick"
    assert g.t.pool == 0 and g.t.balances == (-10, -5, 20, -5)


def _pool_of_38(g: Game) -> None:
    """Two hands that leave 33 chips after a hand played for the pool (README decision):
    the third hand, dealt by seat 2, starts with P = 38, not a multiple of 5."""
    g.result({"decisions": {"1": "play", "2": "play", "3": "play", "0": "play"},
              "tricks": {"0": 3, "3": 2}})
    g.settle()
    g.result({"decisions": {"2": "miss", "3": "drop", "0": "drop", "1": "play"},
              "for_pool": True, "tricks": {"1": 3, "2": 2}})
    g.settle()
    assert g.t.pool == 33 and g.t.dealer == 2


def test_s8_3_lone_player_is_paid_five_tricks_not_the_whole_pool():
    """§4/§8.3: the lone player left in wins five tricks at P/5 each (the remainder of an odd
    P stays, as after a played hand); only a dealer winning without play takes the whole pool."""
    g = Game(players=4, deal="results", dealer=0)
    _pool_of_38(g)
    out = g.result({"decisions": {"3": "play", "0": "drop", "1": "drop", "2": "drop"}})
    assert one(out, ev.HandWonWithoutPlay).reason == "one_left" and g.h.pool_at_start == 38
    paid = one(g.settle(), ev.TricksPaid)
    assert (paid.trick_value, paid.payments, paid.reason) == (7, (0, 0, 0, 35), "trick")
    assert g.t.pool == 3
    conserved(g)


def test_s8_3_dealer_winning_without_play_takes_an_odd_pool_whole():
    g = Game(players=4, deal="results", dealer=0)
    _pool_of_38(g)
    out = g.result({"decisions": {"3": "drop", "0": "drop", "1": "drop"}})
    assert one(out, ev.HandWonWithoutPlay).reason == "all_dropped"
    paid = one(g.settle(), ev.TricksPaid)
    assert (paid.payments, paid.reason) == ((0, 0, 38, 0), "pool_award")
    assert g.t.pool == 0
    conserved(g)


def test_s8_3_for_pool_dealer_share_stays_in_the_pool():
    g = Game(players=4, deal="results", dealer=0)
    g.result({"decisions": {"1": "miss", "2": "drop", "3": "drop", "0": "play"},
              "for_pool": True, "tricks": {"0": 3, "1": 2}})
    assert one(g.events, ev.HandCompleted).for_pool
    settled = g.settle()
    assert one(settled, ev.TricksPaid).payments == (0, 10, 0, 0)
    assert g.t.pool == 15  # 3 tricks x 5 stay for the next hand
    assert g.t.balances == (-10, 5, -5, -5)
    # next hand: the pool is not empty, only the dealer antes; P = 20
    g.result({"decisions": {"2": "play", "3": "play", "0": "play", "1": "play"},
              "tricks": {"1": 5}})
    assert g.h.pool_at_start == 20
    conserved(g)


def test_s8_3_for_pool_dealer_not_looed_with_no_tricks():
    g = Game(players=4, deal="results", dealer=0)
    g.result({"decisions": {"1": "miss", "2": "drop", "3": "drop", "0": "play"},
              "for_pool": True, "tricks": {"1": 5}})
    assert one(g.events, ev.HandCompleted).looed == ()
    g.settle()
    assert g.t.balances == (-10, 20, -5, -5) and g.t.pool == 0


def test_s8_4_miss_taker_looed_pays_p():
    g = Game(players=4, deal="results", dealer=0)
    g.result({"decisions": {"1": "miss", "2": "drop", "3": "drop", "0": "play"},
              "tricks": {"0": 5}})
    settled = g.settle()
    assert [(e.seat, e.amount) for e in of_type(settled, ev.PenaltyAssessed)] == [(1, 25)]


def test_s8_8_close_reports_the_leftover_pool():
    g = Game(players=4, deal="results", dealer=0)
    g.result({"decisions": {"1": "play", "2": "play", "3": "play", "0": "play"},
              "tricks": {"0": 5}})
    g.settle()
    closed = one(g.close(), ev.TableClosed)
    assert closed.leftover == 75 == g.t.pool  # not shared out
    assert g.t.status == "closed"
    conserved(g)
    with pytest.raises(LedgerError) as info:
        g.result({"decisions": {"1": "drop", "2": "drop", "3": "drop"}})
    assert info.value.code == "table_closed"
    with pytest.raises(LedgerError):
        g.close()


def test_s8_8_close_mid_hand_reports_the_abandoned_hand():
    g = Game(players=4, deal="shuffled")
    g.shuffled(bytes(32))
    events = g.close()
    closed = one(events, ev.TableClosed)
    assert closed.abandoned_hand == 1 and closed.leftover == 25


def test_s10_close_mid_hand_reveals_the_abandoned_hands_seed():
    g = Game(players=4, deal="shuffled")
    g.shuffled(bytes(32))
    events = g.close()
    revealed = one(events, ev.SeedRevealed)
    assert revealed.seed == bytes(32).hex() and isinstance(events[-1], ev.TableClosed)
    assert g.t.seed is None


def test_s8_9_pool_scoring_with_two_players():
    g = Game(players=2, deal="results", dealer=0)
    g.result({"decisions": {"1": "play", "0": "miss"}, "tricks": {"0": 5}})
    assert g.h.pool_at_start == 15
    settled = g.settle()
    assert one(settled, ev.TricksPaid).payments == (15, 0)
    assert g.t.balances == (5, -20) and g.t.pool == 15


def test_s7_hand_in_progress_must_finish_first():
    g = Game(players=4, deal="shuffled")
    g.shuffled(bytes(32))
    with pytest.raises(LedgerError) as info:
        g.shuffled(bytes(range(32)))
    assert info.value.code == "hand_in_progress"
    with pytest.raises(LedgerError) as info:
        g.settle()
    assert info.value.code == "nothing_to_settle"


# ---- §9 Loo points ---------------------------------------------------------------------------

def test_s9_loo_points_per_trick_looed_and_dropped():
    g = Game(players=4, scoring="points", deal="results", dealer=0)
    g.result({"decisions": {"1": "drop", "2": "play", "3": "play", "0": "play"},
              "tricks": {"2": 3, "0": 2}})
    settled = g.settle()
    assert one(settled, ev.PointsScored).totals == (2, 0, 3, -5)
    assert not of_type(settled, ev.TricksPaid) and not of_type(g.events, ev.StakePosted)
    assert g.t.pool == 0 and g.t.balances == (0, 0, 0, 0)


def test_s9_loo_points_without_play_score_five():
    g = Game(players=3, scoring="points", deal="results", dealer=0)
    g.result({"decisions": {"1": "drop", "2": "drop"}})
    assert one(g.settle(), ev.PointsScored).deltas == ((0, 5, "won_without_play"),)
    g.result({"decisions": {"2": "play", "0": "drop", "1": "drop"}})
    assert one(g.settle(), ev.PointsScored).totals == (5, 0, 5)


def test_s9_loo_points_to_15():
    g = Game(players=3, scoring="points", deal="results", dealer=0)
    g.result({"decisions": {"1": "play", "2": "drop"}})  # seat 1 alone: 5
    assert not of_type(g.settle(), ev.GameWon)
    g.result({"decisions": {"2": "drop", "0": "drop"}})  # seat 1 deals, all drop: 10
    assert not of_type(g.settle(), ev.GameWon)
    assert g.t.scores == (0, 10, 0) and g.t.status == "playing"
    g.result({"decisions": {"0": "play", "1": "play", "2": "play"},
              "tricks": {"0": 1, "1": 4}})
    assert not of_type(g.settle(), ev.GameWon)
    assert g.t.scores == (1, 14, -5)
    assert g.t.status == "playing"  # 14 is not enough
    g.result({"decisions": {"1": "play", "2": "play", "0": "play"},
              "tricks": {"1": 3, "2": 2}})
    won = one(g.settle(), ev.GameWon)
    assert (won.seat, won.tied) == (1, ())
    assert g.t.scores == (-4, 17, -3)  # 15 or more: the game ends after this hand
    assert g.t.status == "finished" and g.t.winner == 1
    with pytest.raises(LedgerError) as info:
        g.result({"decisions": {"2": "drop", "0": "drop"}})
    assert info.value.code == "table_finished"


def _tie_hand(variant: str, script: str) -> Game:
    g = Game(variant=variant, scoring="points", players=2)
    g.deal(TIE_HANDS, "0-0")
    g.decide(1, "play")
    g.decide(0, "play")
    g.plays(script)
    assert g.h.tricks_won == (3, 2)
    return g


@pytest.mark.parametrize(("script", "winner"), [(SEAT1_FIRST, 1), (SEAT0_FIRST, 0)])
def test_s9_loo_points_to_15_tie_break(script, winner):
    g = _tie_hand("loo", script)
    out = scoring.settle(g.opts, g.h, 0, (0, 0), (12, 13))
    assert one(out, ev.PointsScored).totals == (15, 15)
    won = one(out, ev.GameWon)
    assert won.seat == winner and won.tied == (0, 1)


def test_s9_loo_points_highest_wins_without_tie():
    g = _tie_hand("loo", SEAT1_FIRST)
    won = one(scoring.settle(g.opts, g.h, 0, (0, 0), (14, 13)), ev.GameWon)
    assert (won.seat, won.tied, won.scores) == (0, (), (17, 15))


def test_s9_tie_on_a_results_table_stands():
    g = Game(players=2, scoring="points", deal="results", dealer=0)
    g.result({"decisions": {"1": "play", "0": "play"}, "tricks": {"0": 3, "1": 2}})
    won = one(scoring.settle(g.opts, g.h, 0, (0, 0), (12, 13)), ev.GameWon)
    assert won.seat is None and won.tied == (0, 1)


# ---- §9 Rounce -------------------------------------------------------------------------------

def test_s9_rounce_counts_down():
    g = Game(variant="rounce", players=3, deal="results", dealer=0)
    assert g.t.scores == (15, 15, 15)
    g.result({"decisions": {"1": "play", "2": "play", "0": "play"},
              "tricks": {"1": 3, "2": 2}})
    assert one(g.settle(), ev.PointsScored).deltas == (
        (1, -3, "trick"), (2, -2, "trick"), (0, 5, "rounce"))
    assert g.t.scores == (20, 12, 13)
    g.result({"decisions": {"2": "drop", "0": "play", "1": "play"},
              "tricks": {"0": 1, "1": 4}})
    g.settle()
    assert g.t.scores == (19, 8, 13)  # a pass scores nothing
    g.result({"decisions": {"0": "drop", "1": "drop"}})  # all pass: the trump-holder -5
    g.settle()
    assert g.t.scores == (19, 8, 8)
    g.result({"decisions": {"1": "play", "2": "play", "0": "drop"},
              "tricks": {"1": 5}})
    g.settle()
    assert g.t.scores == (19, 3, 13) and g.t.status == "playing"
    g.result({"decisions": {"2": "drop", "0": "drop"}})
    won = one(g.settle(), ev.GameWon)
    assert g.t.scores == (19, -2, 13)
    assert won.seat == 1 and g.t.winner == 1 and g.t.status == "finished"


def test_s9_rounce_lone_player_scores_minus_five():
    g = Game(variant="rounce", players=4, deal="results", dealer=0)
    g.result({"decisions": {"1": "drop", "2": "play", "3": "drop", "0": "drop"}})
    assert one(g.settle(), ev.PointsScored).totals == (15, 15, 10, 15)


def test_s9_rounce_target_option_sets_the_start():
    g = Game(variant="rounce", players=2, deal="results", dealer=0, options={"target": 5})
    assert g.t.scores == (5, 5)
    g.result({"decisions": {"1": "drop"}})
    won = one(g.settle(), ev.GameWon)
    assert won.seat == 0 and g.t.scores == (0, 5)  # reaching zero ends the game


@pytest.mark.parametrize(("script", "winner"), [(SEAT1_FIRST, 1), (SEAT0_FIRST, 0)])
def test_s9_rounce_tie_break_first_to_zero(script, winner):
    g = _tie_hand("rounce", script)
    out = scoring.settle(g.opts, g.h, 0, (0, 0), (3, 2))
    assert one(out, ev.PointsScored).totals == (0, 0)
    won = one(out, ev.GameWon)
    assert won.seat == winner and won.tied == (0, 1)


def test_s9_rounce_lowest_wins():
    g = _tie_hand("rounce", SEAT1_FIRST)
    won = one(scoring.settle(g.opts, g.h, 0, (0, 0), (2, 2)), ev.GameWon)
    assert (won.seat, won.scores) == (0, (-1, 0))


def test_s3_rounce_turn_up_exposed_by_right_hand_player():
    for players in (2, 3, 4):
        for dealer in range(players):
            g = Game(variant="rounce", players=players, deal="shuffled", dealer=dealer)
            turned = one(g.shuffled(bytes(32)), ev.TrumpTurned)
            assert turned.exposed_by == (dealer - 1) % players
            g = Game(variant="loo", players=players, deal="shuffled", dealer=dealer)
            assert one(g.shuffled(bytes(32)), ev.TrumpTurned).exposed_by == dealer


def test_s9_rounce_dealer_may_not_play_for_the_pool():
    g = Game(variant="rounce", players=4, deal="shuffled")
    g.shuffled(bytes(32))
    with pytest.raises(LedgerError):
        g.act(Decide(1, "play", for_pool=True))
