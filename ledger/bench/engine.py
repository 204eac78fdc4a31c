"""`loo bench engine`: random-legal 4-player hands/s, against OpenSpiel's oh_hell if installed."""

from __future__ import annotations

import random
import time
import tracemalloc
from collections.abc import Callable

from ledger.rules import table as tb
from ledger.rules.legal import legal_actions
from ledger.rules.options import make_options


def play_hands(count: int, seed: int = 7) -> int:
    """Deal, decide, play five tricks and settle `count` random-legal hands; returns events."""
    rng = random.Random(seed)
    opts = make_options("loo", "pool", 4, {})
    t = tb.replay(tb.create(opts, [("p", None)] * 4, 0, {}, bytes(32)))
    n_events = 0
    for _ in range(count):
        events = tb.start_hand(t, seed=rng.randbytes(32))
        t = tb.replay(events, t)
        n_events += len(events)
        while t.live:
            h = t.hand
            assert h is not None and h.turn is not None
            events = tb.act(t, rng.choice(legal_actions(h, h.turn)))
            t = tb.replay(events, t)
            n_events += len(events)
        events = tb.settle(t)
        t = tb.replay(events, t)
        n_events += len(events)
    return n_events


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


def peak_memory_mb(hands: int) -> float:
    tracemalloc.start()
    play_hands(hands)
    _cur, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / 1e6


def run(seconds: float = 3.0, memory_hands: int = 10_000,
        out: Callable[[str], None] = print) -> None:
    ours = _rate(play_hands, seconds, 50)
    out(f"engine: {ours:,.0f} hands/s (random-legal 4-player Loo, deal to settlement)")
    theirs = openspiel_rate(seconds)
    if theirs is None:
        out("openspiel: not installed (pip install '.[bench]'); ratio not measured")
    else:
        out(f"openspiel oh_hell: {theirs:,.0f} games/s")
    mem = peak_memory_mb(memory_hands)
    out(f"peak traced memory over {memory_hands:,} hands: {mem:.1f} MB")
    ratio = ours / theirs if theirs else 0.0
    out(f"ratio engine_vs_openspiel {ratio:.2f} target 1.0")
    out(f"ratio engine_peak_memory_mb_per_100 {mem / 100:.2f} target 1.0")
