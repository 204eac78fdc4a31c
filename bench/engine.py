"""`loo bench engine`: random-legal 4-player hands/s, against OpenSpiel's oh_hell if installed.

Two engines play the same rules, and both are measured:
- the playout engine (ledger/rules/playout.py): one mutable state per hand, no record, what
  rollouts use. Like OpenSpiel's C++ state it applies moves in place, so it is the one set
  against oh_hell (ratio engine_vs_openspiel, target 2.0: issue 18).
- the event-sourced engine the service records games with (decide -> events -> fold): every
  action an immutable event, every state a frozen value. Its rate is printed beside it, and
  the memory probe runs it, a long-lived table being what must stay flat.

What is compared with OpenSpiel (pyspiel, driven from Python as ours is): whole hands, each
move of each seat picked by the same `random.Random.choice` over the legal moves (on both
sides a lone legal move, or a lone chance outcome, is taken without calling it).
- ours: 4-player Loo, pool scoring: the stakes, the fair deal from a fresh 32-byte seed
  (HMAC-SHA256 Fisher-Yates over the 28 tiles, as the service deals), the decisions (play,
  take the turn-up, miss and discard, drop), up to five tricks, the settlement;
- oh_hell: 4 players, 4 suits x 7 = 28 cards, 5 tricks a hand (num_tricks_fixed): every
  chance node (the dealer, twenty cards dealt one by one, the trump card) picked among
  its chance outcomes, then the four bids and twenty plays, to the terminal state.
The machine is shared, so each rate is this process's CPU seconds (time.process_time), not
the wall clock, and the two are measured in alternating slices over the same span.
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
from ledger.core.rules.deal import shuffle_once
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
        hand = po.playout(po.deal(opts, dealer, shuffle_once(rng.randbytes(32))), choose)
        pool = po.pay_out(hand, start, pool, balances)  # §8.3-8.5
        dealer = (dealer + 1) % 4  # §2
    return pool, tuple(balances)


def _rate(fn: Callable[[int], object], seconds: float, chunk: int) -> float:
    """Calls of `fn(chunk)` for `seconds` of this process's CPU time: units per CPU second."""
    done, start = 0, time.process_time()
    while time.process_time() - start < seconds:
        fn(chunk)
        done += chunk
    return done / (time.process_time() - start)


def _rates(fns: list[Callable[[int], object]], seconds: float, chunk: int,
           slices: int = 6) -> list[float]:
    """Each `fn` for `seconds` of CPU time, in `slices` alternating turns: whatever else the
    machine does meanwhile falls on all of them alike."""
    done, spent = [0] * len(fns), [0.0] * len(fns)
    for _ in range(slices):
        for i, fn in enumerate(fns):
            start = time.process_time()
            while True:
                fn(chunk)
                done[i] += chunk
                if time.process_time() - start >= seconds / slices:
                    break
            spent[i] += time.process_time() - start
    return [d / s for d, s in zip(done, spent, strict=True)]


OH_HELL = {"players": 4, "num_suits": 4, "num_cards_per_suit": 7, "num_tricks_fixed": 5}


def openspiel_playouts(seed: int = 3) -> Callable[[int], object] | None:
    """`n` random playouts of oh_hell as a 4-player, 28-card, 5-trick game, chance nodes
    and moves alike picked by random.choice (unless there is one); returns the actions
    applied. None when open_spiel is not installed."""
    try:
        import pyspiel  # type: ignore[import-not-found]
    except ImportError:
        return None
    game = pyspiel.load_game("oh_hell", OH_HELL)
    choose = random.Random(seed).choice

    def playouts(n: int) -> int:
        moves = 0
        for _ in range(n):
            state = game.new_initial_state()
            while not state.is_terminal():
                if state.is_chance_node():
                    options = state.chance_outcomes()
                    state.apply_action((options[0] if len(options) == 1 else choose(options))[0])
                else:
                    options = state.legal_actions()
                    state.apply_action(options[0] if len(options) == 1 else choose(options))
                moves += 1
        return moves

    return playouts


def openspiel_version() -> str:
    try:
        from importlib.metadata import version

        return version("open_spiel")
    except Exception:  # noqa: BLE001 - only a label
        return "?"


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
    theirs_fn = openspiel_playouts()
    seeds = itertools.count(7)  # fresh deals in every chunk (no deal comes from a cache)

    def ours_fn(n: int) -> object:
        return playout_hands(n, next(seeds))

    def recorded_fn(n: int) -> object:
        return play_hands(n, next(seeds))

    if theirs_fn is None:
        ours, theirs = _rates([ours_fn], seconds, 50)[0], None
    else:
        ours, theirs = _rates([ours_fn, theirs_fn], seconds, 50)
    out(f"engine: {ours:,.0f} hands/s (playout engine: random-legal 4-player Loo, "
        "fair deal to settlement; per CPU second)")
    recorded = _rate(recorded_fn, seconds, 50)
    out(f"engine, event-sourced: {recorded:,.0f} hands/s (the same hands as immutable events "
        "folded into frozen states, as the service records them)")
    if theirs is None:
        out("openspiel: not installed (pip install -e '.[bench]'); "
            "ratio engine_vs_openspiel not measured")
    else:
        out(f"openspiel oh_hell: {theirs:,.0f} games/s (open_spiel {openspiel_version()}, "
            "pyspiel from Python: 4 players, 28 cards, 5 tricks, random chance and moves; "
            "measured in turns with ours)")
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
    if theirs:
        out(f"info event_sourced_vs_openspiel {recorded / theirs:.2f} (no target)")
        out(f"ratio engine_vs_openspiel {ours / theirs:.2f} target 2.0")
    out(f"ratio engine_peak_memory_mb {peak:.1f} target 100")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--memory"]:
        print(json.dumps(memory_probe(int(sys.argv[2]))))
