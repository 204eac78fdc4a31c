"""`loo bench bots` with tiny parameters: no rot."""

from __future__ import annotations


def test_bench_bots_prints_its_ratio() -> None:
    from bench import bots

    lines: list[str] = []
    results = bots.run(hands=16, samples=4, out=lines.append)
    assert set(results) == {"expert-heuristic", "expert-random", "heuristic-random"}
    assert all(r.hands == 16 for r in results.values())
    assert any(line.startswith("expert decision time") for line in lines)
    assert lines[-1].startswith("ratio expert_margin_ci_low ") and lines[-1].endswith(
        " target 0")
