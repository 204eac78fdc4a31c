"""`loo bench engine` with tiny parameters: it plays real hands and prints its ratios."""

from __future__ import annotations

import re

import pytest

from bench import engine

RATIO = re.compile(r"^ratio (\w+) (-?[0-9.]+|nan|inf) target ([0-9.]+)$")


def test_bench_engine_plays_hands_through_the_rules_api() -> None:
    assert engine.play_hands(20) == engine.play_hands(20) > 20 * 10  # seeded: same events


def test_bench_engine_playout_plays_a_zero_sum_table() -> None:
    pool, balances = engine.playout_hands(200)
    assert (pool, balances) == engine.playout_hands(200)  # seeded
    assert pool + sum(balances) == 0 and pool >= 0 and len(set(balances)) > 1


def _ratios(lines: list[str]) -> dict[str, tuple[float, float]]:
    found = [m for m in map(RATIO.match, lines) if m]
    return {m.group(1): (float(m.group(2)), float(m.group(3))) for m in found}


def _run() -> list[str]:
    lines: list[str] = []
    engine.run(seconds=0.2, memory_hands=200, out=lines.append)
    return lines


def test_bench_engine_without_openspiel_says_so_and_skips_only_that_ratio(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine, "openspiel_playouts", lambda: None)
    lines = _run()
    assert RATIO.match(lines[-1]), lines
    ratios = _ratios(lines)
    assert list(ratios) == ["engine_peak_memory_mb"]
    assert ratios["engine_peak_memory_mb"][1] == 100
    assert 0 < ratios["engine_peak_memory_mb"][0] < 100  # MB for the whole process: flat
    assert sum("openspiel: not installed" in x for x in lines) == 1
    assert any(x.startswith("engine: ") and "hands/s" in x for x in lines)
    assert any(x.startswith("engine, event-sourced: ") and "hands/s" in x for x in lines)
    assert any(x.startswith("peak memory over 200 hands") for x in lines)


def test_bench_engine_sets_the_playout_engine_against_openspiel() -> None:
    pytest.importorskip("pyspiel")
    lines = _run()
    ratios = _ratios(lines)
    assert list(ratios) == ["engine_vs_openspiel", "engine_peak_memory_mb"]
    assert ratios["engine_vs_openspiel"][1] == 2.0 and ratios["engine_vs_openspiel"][0] > 0
    assert any(x.startswith("openspiel oh_hell: ") and "games/s" in x for x in lines)


def test_openspiel_playouts_play_whole_28_card_hands() -> None:
    pytest.importorskip("pyspiel")
    playouts = engine.openspiel_playouts()
    assert playouts is not None
    # chance: the number of tricks (one outcome: num_tricks_fixed), the dealer, 20 cards,
    # the trump card; then 4 bids and 20 plays
    assert playouts(3) == 3 * (1 + 1 + 20 + 1 + 4 + 20)


def test_rates_alternate_and_count_cpu_seconds() -> None:
    calls: list[str] = []
    a, b = engine._rates([lambda n: calls.append("a"), lambda n: calls.append("b")],
                         0.03, 10, slices=3)
    assert a > 0 and b > 0
    assert calls[0] == "a" and "b" in calls and calls[-1] == "b"
    flips = sum(1 for x, y in zip(calls, calls[1:], strict=False) if x != y)
    assert flips == 5  # a..b..a..b..a..b
