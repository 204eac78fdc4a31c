"""Bot policies: pure functions of a seat view and the legal actions (never the full state)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from ledger.core.rules import mc
from ledger.core.rules.actions import Action, Decide, Discard, Play
from ledger.core.rules.mc import hand_strength, tile_value
from ledger.core.rules.tiles import DOUBLE, follows, is_trump, trick_winner
from ledger.core.rules.view import SeatView

Policy = Callable[[SeatView, list[Action], random.Random], Action]

EXPERT_BUDGET_MS = 200  # API.md: the expert plays with a time budget per move
EXPERT_MAX_SAMPLES = 400  # ... and never more guesses than this, however fast


def random_policy(view: SeatView, legal: list[Action], rng: random.Random) -> Action:
    """Uniform over the legal actions."""
    return rng.choice(legal)


def heuristic_policy(view: SeatView, legal: list[Action], rng: random.Random) -> Action:
    """Miss or drop weak hands, win with the cheapest winner, keep trumps, avoid the loo."""
    first = legal[0]
    assert view.trump is not None
    if isinstance(first, Decide):
        return _decide(view, legal)
    if isinstance(first, Discard):
        return min(legal, key=lambda a: hand_strength(a.tiles, view.trump))  # type: ignore[union-attr]
    return _play(view, legal)


def _decide(view: SeatView, legal: list[Action]) -> Action:
    trump = view.trump
    assert trump is not None
    strength = hand_strength(view.hand, trump)
    by_choice: dict[str, list[Decide]] = {}
    for a in legal:
        assert isinstance(a, Decide)
        by_choice.setdefault(a.choice, []).append(a)
    plays = by_choice["play"]
    best = max(plays, key=lambda a: _after_exchange(view, a))
    if _after_exchange(view, best) >= 24 or strength >= 24:
        return _prefer_pool(best, plays)
    if "miss" in by_choice:
        return by_choice["miss"][0]
    if "drop" in by_choice and _after_exchange(view, best) < 14:
        return by_choice["drop"][0]
    return _prefer_pool(best, plays)


def _after_exchange(view: SeatView, a: Decide) -> float:
    assert view.trump is not None
    tiles = list(view.hand)
    if a.take_turn_up and view.turn_up is not None:
        tiles = [t for t in tiles if t not in a.discard] + [view.turn_up]
    return hand_strength(tiles, view.trump) - (3 if a.for_pool else 0)


def _prefer_pool(best: Decide, plays: list[Decide]) -> Decide:
    # Playing for the pool removes the loo risk; worth it unless the hand is strong.
    for a in plays:
        if a.for_pool and a.take_turn_up == best.take_turn_up and a.discard == best.discard:
            return a
    return best


def _play(view: SeatView, legal: list[Action]) -> Action:
    trump = view.trump
    assert trump is not None
    plays = [a for a in legal if isinstance(a, Play)]
    cur = view.current
    if cur is None:
        # Lead: a sure winner (top trump) if held, else the cheapest lead, kept off trumps.
        top = max(plays, key=lambda a: tile_value(a.tile, trump))
        if is_trump(top.tile, trump) and DOUBLE[top.tile]:
            return top
        return min(plays, key=lambda a: tile_value(a.tile, trump))
    winners = [a for a in plays
               if trick_winner(cur.plays + ((view.seat, a.tile),), cur.suit, trump) == view.seat]
    if winners:
        return min(winners, key=lambda a: tile_value(a.tile, trump))
    followers = [a for a in plays if follows(a.tile, cur.suit, trump)]
    pool = followers or plays
    return min(pool, key=lambda a: tile_value(a.tile, trump))


def expert(budget_ms: float | None = EXPERT_BUDGET_MS,
           max_samples: int = EXPERT_MAX_SAMPLES) -> Policy:
    """The expert with its own budget: `budget_ms=None` plays exactly `max_samples` guesses,
    a deterministic function of the view and the rng (what tests and benches use)."""

    def expert_policy(view: SeatView, legal: list[Action], rng: random.Random) -> Action:
        return expert_estimate(view, legal, rng, budget_ms, max_samples).action

    return expert_policy


def expert_estimate(view: SeatView, legal: list[Action], rng: random.Random,
                    budget_ms: float | None = EXPERT_BUDGET_MS,
                    max_samples: int = EXPERT_MAX_SAMPLES) -> mc.Estimate:
    """Determinized Monte Carlo from the seat's view (ledger/core/rules/mc.py)."""
    clock = time.perf_counter
    deadline = None if budget_ms is None else clock() + budget_ms / 1000
    return mc.search(view, legal, rng, max_samples=max_samples, deadline=deadline, clock=clock)


def expert_policy(view: SeatView, legal: list[Action], rng: random.Random) -> Action:
    """Samples the tiles it cannot see (consistently with everything its seat has seen),
    plays every legal action out with the heuristic for all seats, takes the best mean."""
    return expert_estimate(view, legal, rng).action


DESCRIPTIONS = {
    "random": "plays a uniformly random legal action (a baseline)",
    "heuristic": "misses or drops weak hands, wins with its cheapest winner, keeps trumps "
                 "and avoids the loo",
    "expert": f"determinized Monte Carlo from its seat's view only: guesses the hidden tiles "
              f"consistently with what its seat has seen, plays each legal action out with "
              f"the heuristic, and takes the best expected chips or points "
              f"({EXPERT_BUDGET_MS} ms and at most {EXPERT_MAX_SAMPLES} guesses a move)",
}

POLICIES: dict[str, tuple[Policy, str]] = {
    "random": (random_policy, "1"),
    "heuristic": (heuristic_policy, "1"),
    "expert": (expert_policy, "1"),
}
# Policies that never draw from the rng they are given: the caller may hand them NO_DRAWS
# instead of seeding a generator per move (from a string: SHA-512 and a Mersenne Twister
# initialisation, a twentieth of a bot job's CPU). Their moves are the same either way.
DETERMINISTIC = frozenset({"heuristic"})


class _NoDraws(random.Random):
    """An rng for the policies in DETERMINISTIC: any draw raises, so one that starts to
    draw fails loudly instead of playing other moves than a seeded rng would give."""

    def random(self) -> float:
        raise RuntimeError("a policy declared deterministic drew from its rng")

    def getrandbits(self, k: int) -> int:
        raise RuntimeError("a policy declared deterministic drew from its rng")

    def randbytes(self, n: int) -> bytes:
        raise RuntimeError("a policy declared deterministic drew from its rng")


NO_DRAWS: random.Random = _NoDraws(0)
