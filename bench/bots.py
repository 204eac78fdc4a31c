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
from typing import Any

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


# ---- bot replies through RQ vs in-process ------------------------------------------------

def _reply_times(ledger: Any, moves: int, wait: Callable[[str, int], bool]) -> list[float]:
    """Seconds from a person's move (seat 0; three heuristic bots) until the first bot move
    after it is visible in the store; moves after which no bot is to act are not counted."""
    from ledger.core import commands as c
    from ledger.core.rules.legal import legal_actions

    seats = (("Ann", None),) + tuple((f"Bot {i}", "heuristic") for i in (1, 2, 3))
    table_id, _tokens, _p = ledger.create_table(c.CreateTable(
        variant="loo", scoring="pool", seats=seats, first_dealer=0, deal="shuffled",
        options={"max_hands": 100_000}))
    out: list[float] = []
    for _ in range(moves * 4):
        if len(out) >= moves:
            break
        wait(table_id, 0)  # the bots have played up to Ann's turn
        p = ledger.load(table_id)
        h = p.table.hand
        assert h is not None and h.turn == 0, "Ann is not to act"
        start = time.perf_counter()
        done = ledger.execute(table_id, c.Act(legal_actions(h, 0)[0]), expected_version=p.version)
        if ledger.load(table_id).table.hand.turn == 0 and not any(
                (s.causation or "").startswith("bot:") for s in done.stored):
            continue  # Ann acts again (she won the trick): no bot reply to time
        # In-process the reply came in the move's own append; through RQ a worker's job.
        if wait(table_id, p.version):
            out.append(time.perf_counter() - start)
    return out


def _reply(ledger: Any, table_id: str, version: int) -> bool | None:
    """True once a bot moved after `version`; False if Ann is to act again without one (a
    new hand she opens); None while neither."""
    after = ledger.store.load(table_id, after_version=version)
    if any((s.causation or "").startswith("bot:") for s in after):
        return True
    return False if len(after) > 1 and _ann_to_act(ledger, table_id) else None


def _ann_to_act(ledger: Any, table_id: str) -> bool:
    p = ledger.load(table_id)
    return p.table.hand is not None and p.table.live and p.table.hand.turn == 0


def bot_replies(database_url: str, redis_url: str, moves: int = 60,
                out: Callable[[str], None] = print) -> float:
    """p99 of the bot reply time in-process and through RQ with one `loo worker`, one run;
    prints and returns `bot_reply_p99_vs_inprocess` (in-process p99 / RQ p99)."""
    from bench.workers import _until, rq_scratch
    from ledger.app.service import Ledger
    from workers.queue import InlineDispatcher, RqDispatcher

    with rq_scratch(database_url, redis_url, "bots") as scratch:
        store = scratch.store
        inline = InlineDispatcher()
        local = Ledger(store, inline)
        inline.bind(ledger=local)

        def visible(led: Any) -> Callable[[str, int], bool]:
            def wait(table_id: str, version: int) -> bool:
                if version == 0:
                    _until(lambda: _ann_to_act(led, table_id), "Ann's turn")
                    return True
                found: list[bool] = []

                def seen() -> bool:
                    got = _reply(led, table_id, version)
                    if got is not None:
                        found.append(got)
                    return got is not None

                _until(seen, "a bot's reply")
                return found[0]
            return wait

        local_t = _reply_times(local, moves, visible(local))
        remote = Ledger(store, RqDispatcher(scratch.queue))
        scratch.start_worker()
        rq_t = _reply_times(remote, moves, visible(remote))
    lp99, rp99 = _pct(local_t, 0.99) * 1000, _pct(rq_t, 0.99) * 1000
    out(f"bot reply after a person's move (3 heuristic bots, PostgreSQL), {len(local_t)} and "
        f"{len(rq_t)} moves: in-process p50 {_pct(local_t, 0.5) * 1000:.1f} ms, p99 "
        f"{lp99:.1f} ms; RQ with one `loo worker` p50 {_pct(rq_t, 0.5) * 1000:.1f} ms, "
        f"p99 {rp99:.1f} ms")
    ratio = lp99 / rp99 if rp99 else float("nan")
    out(f"ratio bot_reply_p99_vs_inprocess {ratio:.2f} target 0.5")
    return ratio
