"""`loo bench store` in smoke mode, so the benchmark cannot rot."""

from __future__ import annotations

import importlib.util
import re

import psycopg

from bench.store import run

TARGETS = {"store_append_1client": "0.8", "store_append_8clients": "0.5",
           "store_vs_eventsourcing": "3.0", "replay_vs_bare_pg": "0.5",
           "replay_vs_bare_sqlite": "0.5"}


def test_store_bench_prints_one_ratio_line_per_target_and_cleans_up(pg_url: str) -> None:
    lines: list[str] = []
    run(pg_url, lines.append, scale=0.01)
    ratios = [line.split() for line in lines if line.startswith("ratio ")]
    assert [(r[1], r[4]) for r in ratios] == list(TARGETS.items())
    has_es = importlib.util.find_spec("eventsourcing") is not None  # the `bench` extra
    for r in ratios:
        if r[1] == "store_vs_eventsourcing" and not has_es:
            assert r[2] == "nan", r  # not measured, and says so
            assert "eventsourcing: skipped: eventsourcing not installed" in lines
            continue
        assert r[3] == "target" and re.fullmatch(r"\d+\.\d\d", r[2]), r
    assert lines[-len(TARGETS):] == [" ".join(r) for r in ratios]  # the ratio lines end it
    with psycopg.connect(pg_url) as conn:
        left = conn.execute("SELECT count(*) FROM pg_namespace"
                            " WHERE nspname LIKE 'loo_bench_%'").fetchone()
    assert left == (0,)


def test_store_bench_without_postgres_still_reports_sqlite() -> None:
    lines: list[str] = []
    run("sqlite:///ignored.db", lines.append, scale=0.01)
    assert lines[0].startswith("skipped:")
    assert lines[-1].startswith("ratio replay_vs_bare_sqlite ")
    assert lines[-2] == "ratio replay_vs_bare_pg nan target 0.5"
