"""The playout module against the event-sourced engine, in lockstep (RULES §3-§9).

Both play the same shuffled table from the same seeds: at every step the playout's legal
moves, turned into Actions, must equal `legal_actions` (same list, same order); the same
move is applied to both; every hand must end with the same tricks, loos, pool decision and
the same chips or points as the engine's settlement events. Each hand is also played once
more by `po.playout` (the fused loops rollouts use) with the same random choices: it must
be offered the same moves where there is a choice and end in the same state.
"""

from __future__ import annotations

import random
from itertools import product

import pytest
from hypothesis import given

from ledger.core.rules import playout as po
from ledger.core.rules import table as tb
from ledger.core.rules.deal import shuffle
from ledger.core.rules.legal import legal_actions
from ledger.core.rules.options import make_options
from ledger.core.rules.tiles import sort_tiles
from tests.unit.test_rules_properties import PROPS, Setup, setups


def _recording(rng: random.Random, chosen: list[po.Move]):
    def choose(moves: list[po.Move]) -> po.Move:
        chosen.append(moves[rng.randrange(len(moves))])
        return chosen[-1]

    return choose


def lockstep(setup: Setup) -> dict[str, int]:
    """Play `setup` on both; returns counts of what was compared (to prove it happened)."""
    opts = make_options(setup.variant, setup.scoring, setup.players, setup.options, "shuffled")
    rng = random.Random(setup.seed)
    t = tb.replay(tb.create(opts, [(f"p{i}", None) for i in range(setup.players)],
                            setup.first_dealer, {}, rng.randbytes(32)))
    pool, balances, scores = t.pool, list(t.balances), list(t.scores)
    seen = {"hands": 0, "moves": 0, "for_pool": 0, "without_play": 0, "looed": 0}
    for _ in range(setup.hands):
        if t.status != "playing":
            break
        dealer = t.dealer
        assert dealer is not None
        if opts.scoring == "pool":
            pool = po.post_stakes(opts, pool, dealer, balances)  # §8.1
        seed = rng.randbytes(32)
        t = tb.replay(tb.start_hand(t, seed=seed), t)
        h = t.hand
        assert h is not None
        assert pool == (h.pool_at_start if opts.scoring == "pool" else 0)
        p = po.deal(opts, dealer, shuffle(seed))  # §3 from the same fair deal
        assert [sort_tiles(x) for x in h.hands] == p.hands
        assert (h.turn_up, h.trump, h.boneyard) == (p.turn_up, p.trump, tuple(p.boneyard))
        fused_rng = random.Random()
        fused_rng.setstate(rng.getstate())
        fused_chosen: list[po.Move] = []
        fused = po.playout(po.deal(opts, dealer, shuffle(seed)),
                           _recording(fused_rng, fused_chosen))
        chosen = []
        while t.live:
            h = t.hand
            assert h is not None and p.turn == h.turn and p.phase != po.COMPLETE
            moves = po.legal(p)
            assert [po.to_action(p, m) for m in moves] == legal_actions(h, h.turn)
            k = rng.randrange(len(moves)) if len(moves) > 1 else 0  # as po.playout asks
            if len(moves) > 1:
                chosen.append(moves[k])
            t = tb.replay(tb.act(t, po.to_action(p, moves[k])), t)
            po.step(p, moves[k])
            seen["moves"] += 1
        assert fused_chosen == chosen
        assert {k: getattr(fused, k) for k in po.Playout.__slots__} == {
            k: getattr(p, k) for k in po.Playout.__slots__}
        h = t.hand
        assert h is not None and p.phase == po.COMPLETE and p.turn is None
        assert tuple(p.tricks_won) == h.tricks_won
        assert p.looed == h.looed and p.for_pool == h.for_pool
        assert p.won_without_play == h.won_without_play
        assert p.winners == [x.winner for x in h.tricks]
        assert p.decisions == list(h.decisions) and p.turn_up_taken == h.turn_up_taken
        assert [sort_tiles(x) for x in h.hands] == p.hands
        if opts.scoring == "pool":
            pool = po.pay_out(p, h.pool_at_start, pool, balances)
        else:
            scores = [a + b for a, b in zip(scores, po.points_deltas(p), strict=True)]
        t = tb.replay(tb.settle(t), t)
        assert (pool, tuple(balances), tuple(scores)) == (t.pool, t.balances, t.scores)
        assert pool + sum(balances) == 0  # §8.7
        seen["hands"] += 1
        seen["for_pool"] += p.for_pool
        seen["without_play"] += p.won_without_play is not None
        seen["looed"] += len(p.looed)
    return seen


@PROPS
@given(setups())
def test_prop_playout_moves_results_and_settlement_equal_the_engine(setup):
    assert lockstep(setup)["moves"] > 0


@pytest.mark.parametrize(("variant", "scoring", "players"), [
    (v, s, n) for v, s, n in product(("loo", "rounce"), ("pool", "points"), (2, 3, 4))
    if not (v == "rounce" and s == "pool")])
def test_playout_equals_the_engine_over_long_tables(variant, scoring, players):
    """§4 and §8: long runs reach the rare situations too (for the pool, won without play)."""
    options = {"loo_penalty": {"mode": "capped", "multiplier": 10}, "target": 1000}
    seen = lockstep(Setup(variant, scoring, players, options, "lots", 7 + players, 150))
    assert seen["hands"] == 150 and seen["looed"] > 0
    assert seen["without_play"] > 0 or not make_options(variant, scoring, players, {}).drop_allowed
    if (variant, scoring, players) == ("loo", "pool", 4):
        assert seen["for_pool"] > 0  # §4 playing for the pool was offered and taken


def test_playout_finishes_a_trick_part_played_and_equals_step_by_step():
    """A resumed hand (the expert's guesses) may start mid-trick: `playout` plays it out."""
    opts = make_options("loo", "pool", 4, {})
    rng = random.Random(5)
    resumed = 0
    for _ in range(200):
        seed, picks = rng.randbytes(32), random.Random(rng.random())
        p = po.deal(opts, 0, shuffle(seed))
        stop = picks.randrange(1, 25)
        for _ in range(stop):  # a few moves in, maybe mid-trick
            if p.phase == po.COMPLETE:
                break
            po.step(p, picks.choice(po.legal(p)))
        if p.phase != po.PLAYING or not p.plays:
            continue
        resumed += 1
        q = po.resume(opts, p.dealer, p.hands, p.turn_up, p.boneyard, phase=p.phase,
                      turn=p.turn, decisions=p.decisions, misses=p.misses,
                      for_pool=p.for_pool, turn_up_taken=p.turn_up_taken, plays=p.plays,
                      led=p.led, tricks_won=p.tricks_won, winners=p.winners)
        state = picks.getstate()
        po.playout(q, picks.choice)
        picks.setstate(state)
        while p.phase != po.COMPLETE:
            moves = po.legal(p)
            po.step(p, moves[0] if len(moves) == 1 else picks.choice(moves))
        assert {k: getattr(q, k) for k in po.Playout.__slots__} == {
            k: getattr(p, k) for k in po.Playout.__slots__}
    assert resumed > 20


def test_s4_playout_random_hands_end_and_keep_every_tile_once():
    opts = make_options("loo", "pool", 4, {})
    rng = random.Random(3)
    for dealer in range(40):
        p = po.playout(po.deal(opts, dealer % 4, shuffle(rng.randbytes(32))), rng.choice)
        assert p.phase == po.COMPLETE
        assert sum(p.tricks_won) == 5
        held = [t for hand in p.hands for t in hand]
        assert len(set(held)) == len(held) and not set(held) & set(p.boneyard)
