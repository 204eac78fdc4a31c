"""`loo bench engine` with tiny parameters: it plays real hands and prints its two ratios."""

from __future__ import annotations

import re

from bench import engine

RATIO = re.compile(r"^ratio (\w+) (-?[0-9.]+|nan|inf) target ([0-9.]+)$")


def test_bench_engine_plays_hands_through_the_rules_api() -> None:
    assert engine.play_hands(20) == engine.play_hands(20) > 20 * 10  # seeded: same events


def test_bench_engine_playout_plays_a_zero_sum_table() -> None:
    pool, balances = engine.playout_hands(200)
    assert (pool, balances) == engine.playout_hands(200)  # seeded
    assert pool + sum(balances) == 0 and pool >= 0 and len(set(balances)) > 1


def test_bench_engine_prints_speed_and_peak_memory_ratios() -> None:
    lines: list[str] = []
    engine.run(seconds=0.2, memory_hands=200, out=lines.append)
    found = [RATIO.match(x) for x in lines[-2:]]
    assert all(found), lines
    ratios = {m.group(1): (float(m.group(2)), float(m.group(3))) for m in found if m}
    assert list(ratios) == ["engine_vs_openspiel", "engine_peak_memory_mb"]
    assert ratios["engine_peak_memory_mb"][1] == 100
    assert 0 < ratios["engine_peak_memory_mb"][0] < 100  # MB for the whole process: flat
    assert any(x.startswith("engine: ") and "hands/s" in x for x in lines)
    assert any(x.startswith("engine, event-sourced: ") and "hands/s" in x for x in lines)
    assert any(x.startswith("peak memory over 200 hands") for x in lines)


def test_memory_probe_reports_peaks_that_never_go_down() -> None:
    mem = engine.memory_probe(30)
    assert 0 < mem["start"] <= mem["early"] <= mem["peak"]
    assert mem["hands"] == 30 and mem["early_hands"] == 3
