"""Duplicate tournaments of bot policies (`loo tournament`, `loo bench bots`).

A *deal set* is `hands` hands from fresh seeds at one table. Every deal set is played once
per rotation of the seating (policy i on seats i, i+k, ...; then everyone moves one seat
left), so each policy meets the same tiles from every seat and most of the luck of the deal
cancels. A policy's result is its chips (pool) or points (Loo points; Rounce counted as
points shed) per seat-hand, one sample per deal set; the 95% interval is over the samples.
Everything goes through the rules engine the service records games with (decide -> events
-> fold), each bot choosing from its seat view only.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ledger.core.rules import table as tb
from ledger.core.rules.actions import Action
from ledger.core.rules.legal import legal_actions
from ledger.core.rules.options import make_options
from ledger.core.rules.view import SeatView, seat_view

Policy = Callable[[SeatView, list[Action], random.Random], Action]
POINTS_TARGET = 1000  # points games play every hand of a deal set (nobody reaches it)


@dataclass
class Timing:
    """Decision times (seconds) per policy, moves with a choice only."""

    times: dict[str, list[float]] = field(default_factory=dict)

    def add(self, name: str, seconds: float) -> None:
        self.times.setdefault(name, []).append(seconds)


def play_table(names: Sequence[str], policies: Mapping[str, Policy], seed: int, hands: int,
               variant: str = "loo", scoring: str = "pool",
               timing: Timing | None = None) -> list[int]:
    """One table of `hands` hands; each seat's result (chips, or points won; higher better)."""
    options = {} if scoring == "pool" else {"target": POINTS_TARGET}
    opts = make_options(variant, scoring, len(names), options)
    deals = random.Random(seed)
    t = tb.replay(tb.create(opts, [(n, n) for n in names], 0, {}, bytes(32)))
    start_scores = list(t.scores)
    for number in range(hands):
        t = tb.replay(tb.start_hand(t, seed=deals.randbytes(32)), t)
        step = 0
        while t.live:
            h = t.hand
            assert h is not None and h.turn is not None
            seat = h.turn
            legal = legal_actions(h, seat)
            # The bot's own randomness: the deal, the hand and the move, never the seats.
            rng = random.Random(f"{seed}:{number}:{step}")
            began = time.perf_counter()
            action = policies[names[seat]](seat_view(h, seat), legal, rng)
            if timing is not None and len(legal) > 1:
                timing.add(names[seat], time.perf_counter() - began)
            t = tb.replay(tb.act(t, action), t)
            step += 1
        t = tb.replay(tb.settle(t), t)
    if scoring == "pool":
        return list(t.balances)
    sign = -1 if opts.is_rounce else 1  # Rounce counts down: points shed are won
    return [sign * (s - s0) for s, s0 in zip(t.scores, start_scores, strict=True)]


def rotations(names: Sequence[str], seats: int) -> list[tuple[str, ...]]:
    """The seatings of a deal set: policy i on seats i, i+k, ..., each rotated (distinct)."""
    base = tuple(names[s % len(names)] for s in range(seats))
    out: list[tuple[str, ...]] = []
    for r in range(seats):
        seating = base[r:] + base[:r]
        if seating not in out:
            out.append(seating)
    return out


def mean_ci(xs: Sequence[float]) -> tuple[float, float, float]:
    """Mean and its 95% confidence interval (normal approximation)."""
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, float("nan"), float("nan")
    half = 1.96 * statistics.stdev(xs) / math.sqrt(len(xs))
    return m, m - half, m + half


@dataclass(frozen=True)
class Standing:
    rank: int
    policy: str
    per_hand: tuple[float, float, float]  # mean, 95% CI low, high (per seat-hand)
    seat_hands: int
    samples: tuple[float, ...]


def tournament(names: Sequence[str], policies: Mapping[str, Policy], *, seats: int = 4,
               deal_sets: int = 25, hands: int = 4, variant: str = "loo",
               scoring: str = "pool", seed: int = 1, timing: Timing | None = None,
               progress: Callable[[int], None] | None = None) -> list[Standing]:
    """Every deal set in every seating; standings best first."""
    if len(set(names)) != len(names) or not 2 <= len(names) <= seats:
        raise ValueError(f"2 to {seats} different policies")
    samples: dict[str, list[float]] = {n: [] for n in names}
    seat_hands = dict.fromkeys(names, 0)
    for d in range(deal_sets):
        total = dict.fromkeys(names, 0)
        count = dict.fromkeys(names, 0)
        for seating in rotations(names, seats):
            result = play_table(seating, policies, seed * 1_000_003 + d, hands, variant,
                                scoring, timing)
            for s, name in enumerate(seating):
                total[name] += result[s]
                count[name] += hands
        for n in names:
            samples[n].append(total[n] / count[n])
            seat_hands[n] += count[n]
        if progress is not None:
            progress(d + 1)
    ranked = sorted(names, key=lambda n: -statistics.fmean(samples[n]))
    return [Standing(i + 1, n, mean_ci(samples[n]), seat_hands[n], tuple(samples[n]))
            for i, n in enumerate(ranked)]
