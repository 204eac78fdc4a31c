"""`loo bench bots`: duplicate matches of the bot policies, chips per hand with 95% CIs.

A match is a 4-player Loo pool table (every option at its default) playing `hands` hands
from fresh seeds through the service's rules engine (decide -> events -> fold), each bot
choosing from its seat view only. Two policies A and B sit A B A B, and the same deals are
then played again with B A B A: each deal is played by both policies from both seats, so
most of the luck of the deal cancels. One sample is one pair of matches; a policy's chips
per hand is the mean over its seats and both arrangements, and the margin A - B has a 95%
confidence interval from the spread of the samples.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from ledger.core.rules.bots import POLICIES, Policy, expert
from ledger.core.rules.tournament import Timing, mean_ci, play_table

PAIRS = (("expert", "heuristic"), ("expert", "random"), ("heuristic", "random"))


def policies(budget_ms: float | None, samples: int) -> dict[str, Policy]:
    found = {name: p for name, (p, _version) in POLICIES.items()}
    found["expert"] = expert(budget_ms, samples)
    return found


def match(names: list[str], seed: int, hands: int, table: dict[str, Policy],
          timing: Timing | None = None) -> list[int]:
    """One table of `hands` hands; returns each seat's balance at the end."""
    return play_table(names, table, seed, hands, timing=timing)


def duplicate(a: str, b: str, seed: int, hands: int, table: dict[str, Policy],
              timing: Timing | None = None) -> tuple[float, float]:
    """Chips per seat-hand of `a` and of `b` over the same deals, both arrangements."""
    first = match([a, b, a, b], seed, hands, table, timing)
    second = match([b, a, b, a], seed, hands, table, timing)
    chips_a = first[0] + first[2] + second[1] + second[3]
    chips_b = first[1] + first[3] + second[0] + second[2]
    per = 4 * hands  # two seats, two arrangements
    return chips_a / per, chips_b / per


@dataclass
class PairResult:
    a: str
    b: str
    hands: int
    chips_a: tuple[float, float, float]
    chips_b: tuple[float, float, float]
    margin: tuple[float, float, float]
    seconds: float


def play_pair(a: str, b: str, deals: int, hands: int, table: dict[str, Policy],
              timing: Timing | None = None, seed: int = 1) -> PairResult:
    """`deals` duplicate samples of `hands`-hand matches (deals * hands * 2 hands played)."""
    start = time.perf_counter()
    xs, ys = [], []
    for k in range(deals):
        x, y = duplicate(a, b, seed * 1_000_003 + k, hands, table, timing)
        xs.append(x)
        ys.append(y)
    return PairResult(a, b, deals * hands * 2, mean_ci(xs), mean_ci(ys),
                      mean_ci([x - y for x, y in zip(xs, ys, strict=True)]),
                      time.perf_counter() - start)


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def run(hands: int = 2000, budget_ms: float | None = None, samples: int = 48,
        match_hands: int = 4, out: Callable[[str], None] = print) -> dict[str, PairResult]:
    """Every pair of PAIRS over `hands` hands each (rounded up to whole duplicate samples)."""
    table = policies(budget_ms, samples)
    deals = max(2, math.ceil(hands / (2 * match_hands)))
    budget = "no time limit" if budget_ms is None else f"{budget_ms:g} ms"
    out(f"bots: 4-player Loo pool, default options; duplicate matches of {match_hands} hands "
        f"(seats A B A B, then the same deals B A B A); expert budget in this bench: "
        f"{samples} guesses a move, {budget} (the service's expert: "
        f"{_service_budget()})")
    timing = Timing()
    results = {}
    for a, b in PAIRS:
        r = play_pair(a, b, deals, match_hands, table, timing)
        results[f"{a}-{b}"] = r
        out(f"{a} vs {b}: {r.hands:,} hands in {r.seconds:.0f} s; chips/hand "
            f"{a} {_fmt(r.chips_a)}, {b} {_fmt(r.chips_b)}; margin {_fmt(r.margin)}")
    moves = timing.times.get("expert", [])
    p50, p99 = _pct(moves, 0.5) * 1000, _pct(moves, 0.99) * 1000
    out(f"expert decision time (moves with a choice, {len(moves):,}): p50 {p50:.1f} ms, "
        f"p99 {p99:.1f} ms")
    low = results["expert-heuristic"].margin[1]
    out(f"ratio expert_margin_ci_low {low:.2f} target 0")
    return results


def _service_budget() -> str:
    from ledger.core.rules.bots import EXPERT_BUDGET_MS, EXPERT_MAX_SAMPLES

    return f"{EXPERT_BUDGET_MS} ms, at most {EXPERT_MAX_SAMPLES} guesses"


def _fmt(ci: tuple[float, float, float]) -> str:
    m, lo, hi = ci
    return f"{m:+.2f} [{lo:+.2f}, {hi:+.2f}]"


if __name__ == "__main__":
    run(int(sys.argv[1]) if len(sys.argv) > 1 else 2000)
