"""Bot policies (issue 3): pure functions of a seat view (RULES §10 hidden information),
always legal, and the heuristic plays better than random."""

from __future__ import annotations

import dataclasses
import hashlib
import random
import typing

import pytest

from ledger.core.rules import table as tb
from ledger.core.rules.actions import Action
from ledger.core.rules.bots import POLICIES
from ledger.core.rules.frozen import replace
from ledger.core.rules.legal import legal_actions
from ledger.core.rules.options import make_options
from ledger.core.rules.view import SeatView, seat_view
from tests.unit.rules_support import Game


def run_bots(policies: list[str], hands: int, seed: int, variant: str = "loo",
             scoring: str | None = None, options: dict | None = None,
             check=None) -> tb.Table:
    """A shuffled table where every seat is a bot; returns the final state."""
    opts = make_options(variant, scoring, len(policies), options or {})
    rng = random.Random(seed)
    t = tb.replay(tb.create(opts, [(p, p) for p in policies], 0, {}, bytes(32)))
    for _ in range(hands):
        t = tb.replay(tb.start_hand(t, seed=rng.randbytes(32)), t)
        steps = 0
        while t.live:
            seat = t.hand.turn
            assert seat is not None
            legal = legal_actions(t.hand, seat)
            view = seat_view(t.hand, seat)
            action = POLICIES[policies[seat]][0](view, legal, rng)
            assert action in legal
            if check is not None:
                check(t, seat, view, action)
            t = tb.replay(tb.act(t, action), t)
            steps += 1
            assert steps < 60
        t = tb.replay(tb.settle(t), t)
        if t.status != "playing":
            break
    return t


def test_s10_policies_take_a_seat_view_never_the_state():
    assert set(POLICIES) == {"random", "heuristic", "expert"}
    for name, (policy, version) in POLICIES.items():
        hints = typing.get_type_hints(policy)
        assert hints["view"] is SeatView, name
        assert list(hints)[:3] == ["view", "legal", "rng"]
        assert isinstance(version, str) and version


def test_s10_seat_view_holds_no_hidden_information():
    fields = {f.name for f in dataclasses.fields(SeatView)}
    for hidden in ("hands", "boneyard", "discards", "put_out", "drawn", "seed", "commitment",
                   "looed"):
        assert hidden not in fields
    assert {"hand", "turn_up", "counts", "boneyard_count", "tricks", "current"} <= fields


def test_s10_seat_view_same_whatever_the_others_hold():
    g = Game(players=4, deal="shuffled")
    g.shuffled(bytes(32))
    h = g.h
    # seat 2's tiles swapped with the boneyard: seat 1 must not see any difference
    swapped = replace(h, hands=(h.hands[0], h.hands[1], h.boneyard[:5], h.hands[3]),
                      boneyard=h.hands[2] + h.boneyard[5:])
    assert seat_view(swapped, 1) == seat_view(h, 1)
    assert seat_view(swapped, 2) != seat_view(h, 2)
    assert seat_view(h, 1).hand == h.hands[1]
    assert seat_view(h, 1).counts == (5, 5, 5, 5)
    assert seat_view(h, 1).boneyard_count == 7


def test_s10_discards_stay_hidden():
    g = Game(players=3, deal="shuffled")
    g.shuffled(bytes(32))
    g.decide(1, "miss")
    first, second = legal_actions(g.h, 1)[:2]
    a = tb.replay(tb.act(g.t, first), g.t)
    b = tb.replay(tb.act(g.t, second), g.t)
    assert a.hand.discards[1] != b.hand.discards[1]
    assert seat_view(a.hand, 2) == seat_view(b.hand, 2)
    assert seat_view(a.hand, 0) == seat_view(b.hand, 0)


@pytest.mark.parametrize("name", ["random", "heuristic"])
def test_s10_bot_decision_depends_only_on_the_view(name):
    policy = POLICIES[name][0]
    seen: list[Action] = []

    def check(t, seat, view, action):
        # the same view, legal list and rng state give the same action: nothing else is read
        legal = legal_actions(t.hand, seat)
        assert policy(view, legal, random.Random(0)) == policy(view, legal, random.Random(0))
        seen.append(action)

    run_bots([name] * 4, 5, seed=11, check=check)
    assert len(seen) > 20


@pytest.mark.parametrize(("variant", "scoring", "players"), [
    ("loo", "pool", 4), ("loo", "pool", 3), ("loo", "pool", 2), ("loo", "points", 2),
    ("loo", "points", 4), ("rounce", "points", 2), ("rounce", "points", 3),
    ("rounce", "points", 4),
])
def test_s7_heuristic_bots_play_hands_to_completion(variant, scoring, players):
    t = run_bots(["heuristic"] * players, 40, seed=players, variant=variant, scoring=scoring)
    assert not t.live and t.settled
    assert sum(t.balances) + t.pool == 0
    if scoring == "pool":
        assert t.hand.number == 40 and t.status == "playing"
    else:
        assert t.status == "finished" or t.hand.number == 40


def test_s9_heuristic_points_game_reaches_a_winner():
    t = run_bots(["heuristic"] * 3, 200, seed=5, variant="rounce")
    assert t.status == "finished" and t.winner is not None
    assert min(t.scores) <= 0 and t.scores[t.winner] == min(t.scores)


def test_heuristic_beats_random_over_200_hands():
    # seats alternate heuristic / random so each kind deals equally often
    t = run_bots(["heuristic", "random", "heuristic", "random"], 200, seed=2024,
                 options={"loo_penalty": {"mode": "fixed"}})
    assert t.hand.number == 200
    heuristic = t.balances[0] + t.balances[2]
    rand = t.balances[1] + t.balances[3]
    assert heuristic > 0 > rand
    assert min(t.balances[0], t.balances[2]) > max(t.balances[1], t.balances[3])


def test_heuristic_beats_random_uncapped_pool():
    seeds = [int.from_bytes(hashlib.sha256(bytes([i])).digest()[:4], "big") for i in range(3)]
    for seed in seeds:
        t = run_bots(["random", "heuristic", "random", "heuristic"], 200, seed=seed)
        assert t.balances[1] + t.balances[3] > t.balances[0] + t.balances[2]


def test_a_deterministic_policy_plays_the_same_moves_without_a_seeded_rng():
    # handlers.play_bot gives the policies in DETERMINISTIC the shared NO_DRAWS rather than
    # seeding a generator per move; their moves must be what a seeded one gives.
    from ledger.core.rules.bots import DETERMINISTIC, NO_DRAWS

    assert DETERMINISTIC <= set(POLICIES)
    for name in sorted(DETERMINISTIC):
        policy = POLICIES[name][0]

        def same(t, seat, view, action, policy=policy):
            assert policy(view, legal_actions(t.hand, seat), NO_DRAWS) == action

        run_bots([name] * 4, hands=6, seed=11, check=same)


def test_no_draws_refuses_every_draw():
    from ledger.core.rules.bots import NO_DRAWS

    for draw in (NO_DRAWS.random, lambda: NO_DRAWS.choice([1, 2]),
                 lambda: NO_DRAWS.shuffle([1, 2]), lambda: NO_DRAWS.randbytes(2),
                 lambda: NO_DRAWS.uniform(0, 1)):
        with pytest.raises(RuntimeError):
            draw()
