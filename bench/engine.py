"""`loo bench engine`: random-legal 4-player hands/s, against OpenSpiel's oh_hell if installed.

Two engines play the same rules, and both are measured:
- the playout engine (ledger/rules/playout.py): one mutable state per hand, no record, what
  rollouts use. Like OpenSpiel's C++ state it applies moves in place, so it is the one set
  against oh_hell (ratio engine_vs_openspiel).
- the event-sourced engine the service records games with (decide -> events -> fold): every
  action an immutable event, every state a frozen value. Its rate is printed beside it, and
  the memory probe runs it, a long-lived table being what must stay flat.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ledger.core.rules import playout as po
from ledger.core.rules import table as tb
from ledger.core.rules.deal import shuffle
from ledger.core.rules.legal import legal_actions
from ledger.core.rules.options import make_options


def _hands(seed: int) -> Iterator[int]:
    """One table playing hand after hand through the service's rules API; yields events a hand."""
    rng = random.Random(seed)
    opts = make_options("loo", "pool", 4, {})
    t = tb.replay(tb.create(opts, [("p", None)] * 4, 0, {}, bytes(32)))
    while True:
        events = tb.start_hand(t, seed=rng.randbytes(32))
        t = tb.replay(events, t)
        n_events = len(events)
        while t.live:
            h = t.hand
            assert h is not None and h.turn is not None
            events = tb.act(t, rng.choice(legal_actions(h, h.turn)))
            t = tb.replay(events, t)
            n_events += len(events)
        events = tb.settle(t)
        t = tb.replay(events, t)
        yield n_events + len(events)


def play_hands(count: int, seed: int = 7) -> int:
    """Deal, decide, play five tricks and settle `count` random-legal hands; returns events."""
    return sum(itertools.islice(_hands(seed), count))


def playout_hands(count: int, seed: int = 7) -> tuple[int, tuple[int, ...]]:
    """The same on the playout engine: `count` hands at one table, from stakes to settlement.

    Each hand is dealt by the fair deal from a fresh 32-byte seed, as the service deals;
    returns the pool and the balances at the end (they sum to zero).
    """
    rng = random.Random(seed)
    opts = make_options("loo", "pool", 4, {})
    choose = rng.choice
    pool, balances, dealer = 0, [0] * 4, 0
    for _ in range(count):
        pool = start = po.post_stakes(opts, pool, dealer, balances)  # §8.1
        hand = po.playout(po.deal(opts, dealer, shuffle(rng.randbytes(32))), choose)
        pool = po.pay_out(hand, start, pool, balances)  # §8.3-8.5
        dealer = (dealer + 1) % 4  # §2
    return pool, tuple(balances)


def _rate(fn: Callable[[int], object], seconds: float, chunk: int) -> float:
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        fn(chunk)
        done += chunk
    return done / (time.perf_counter() - start)


def openspiel_rate(seconds: float) -> float | None:
    """Random playouts of oh_hell configured as a 4-player, 28-card, 5-trick game."""
    try:
        import pyspiel  # type: ignore[import-not-found]
    except ImportError:
        return None
    game = pyspiel.load_game("oh_hell", {"players": 4, "num_suits": 4,
                                         "num_cards_per_suit": 7, "num_tricks_fixed": 5})
    rng = random.Random(3)

    def playouts(n: int) -> None:
        for _ in range(n):
            state = game.new_initial_state()
            while not state.is_terminal():
                if state.is_chance_node():
                    outcomes = state.chance_outcomes()
                    state.apply_action(rng.choice(outcomes)[0])
                else:
                    state.apply_action(rng.choice(state.legal_actions()))

    return _rate(playouts, seconds, 50)


# ---- memory -------------------------------------------------------------------------------

def _peak_rss_mb() -> float:
    """This process's peak resident set size so far, in MB."""
    try:  # Linux: VmHWM is this image's own high-water mark
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024 / 1e6  # kB
    except OSError:
        pass
    # Elsewhere getrusage (Unix only); on Linux its figure would survive exec from the parent.
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1e6 if sys.platform == "darwin" else peak * 1024 / 1e6  # bytes vs KiB


def memory_probe(hands: int) -> dict[str, float]:
    """Peak RSS of this process after the first hand, after a tenth of them and after all.

    One table plays every hand, as a long-running table would; growth between the two later
    figures is what the engine accumulates (it should keep nothing from settled hands).
    """
    table = _hands(11)
    next(table)  # the first hand builds the lookup tables and caches
    start = _peak_rss_mb()
    early = max(1, hands // 10)
    for _ in itertools.islice(table, early - 1):
        pass
    after_early = _peak_rss_mb()
    for _ in itertools.islice(table, hands - early):
        pass
    return {"hands": hands, "start": start, "early_hands": early, "early": after_early,
            "peak": _peak_rss_mb()}


def peak_memory(hands: int) -> dict[str, float] | None:
    """`memory_probe` in a fresh interpreter, so the figure is the engine's, not OpenSpiel's."""
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        x for x in (root, os.environ.get("PYTHONPATH")) if x)}
    try:
        done = subprocess.run([sys.executable, "-m", "bench.engine", "--memory",
                               str(hands)], capture_output=True, text=True, env=env,
                              timeout=600, check=True)
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def run(seconds: float = 3.0, memory_hands: int = 10_000,
        out: Callable[[str], None] = print) -> None:
    ours = _rate(playout_hands, seconds, 50)
    out(f"engine: {ours:,.0f} hands/s (playout engine: random-legal 4-player Loo, "
        "fair deal to settlement)")
    recorded = _rate(play_hands, seconds, 50)
    out(f"engine, event-sourced: {recorded:,.0f} hands/s (the same hands as immutable events "
        "folded into frozen states, as the service records them)")
    theirs = openspiel_rate(seconds)
    if theirs is None:
        out("openspiel: not installed (pip install '.[bench]'); ratio not measured")
    else:
        out(f"openspiel oh_hell: {theirs:,.0f} games/s")
    mem = peak_memory(memory_hands)
    if mem is None:
        out("peak memory: not measured (the probe process failed)")
        peak = float("nan")
    else:
        peak = mem["peak"]
        out(f"peak memory over {memory_hands:,} hands at one table: {peak:.1f} MB "
            f"(peak RSS of a fresh process; {mem['start']:.1f} MB after the first hand, "
            f"{mem['early']:.1f} MB after {mem['early_hands']:,}: "
            f"{peak - mem['early']:+.1f} MB over the last {memory_hands - mem['early_hands']:,})")
    ratio = ours / theirs if theirs else float("nan")
    if theirs:
        out(f"info event_sourced_vs_openspiel {recorded / theirs:.2f} (no target)")
    out(f"ratio engine_vs_openspiel {ratio:.2f} target 1.0")
    out(f"ratio engine_peak_memory_mb {peak:.1f} target 100")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--memory"]:
        print(json.dumps(memory_probe(int(sys.argv[2]))))
