"""Smoke runs of `loo bench workers`, `api` and `parts` with tiny parameters: no rot."""

from __future__ import annotations

import re

import psycopg
import pytest
import redis

pytestmark = [pytest.mark.postgres]

RATIO = re.compile(r"^ratio (\w+) (-?[0-9.]+|nan|inf) target ([0-9.]+)$")


def _ratios(lines: list[str]) -> dict[str, float]:
    found = {}
    for line in lines:
        m = RATIO.match(line)
        if m:
            found[m.group(1)] = float(m.group(2))
    return found


@pytest.mark.redis
def test_bench_workers_prints_its_ratio_and_cleans_up(pg_url: str, redis_url: str) -> None:
    from bench import workers

    lines: list[str] = []
    workers.run(pg_url, redis_url, hands=4, out=lines.append)
    assert [RATIO.match(x).group(1) for x in lines[-3:]] == [
        "workers_vs_inprocess", "workers_vs_rq_floor", "workers_scaling_2"]
    ratios = _ratios(lines)
    assert ratios["workers_vs_inprocess"] > 0 and ratios["workers_scaling_2"] > 0
    assert 0 < ratios["workers_vs_rq_floor"]
    assert any("jobs/s" in line for line in lines)
    assert [line.split(":")[0] for line in lines if line.startswith("throughput ")] == [
        "throughput workers=1", "throughput workers=2", "throughput workers=4"]
    assert any(line.startswith("info workers_scaling_4 ") for line in lines)
    leftovers = list(redis.Redis.from_url(redis_url).scan_iter(match="*loo-bench-*"))
    assert leftovers == []
    assert _schemas(pg_url, "loo_bench_workers_%") == []  # its scratch schema is dropped


def test_bench_api_prints_its_ratios_and_stops(pg_url: str) -> None:
    from bench import api

    lines: list[str] = []
    api.run(pg_url, seconds=0.5, clients=2, out=lines.append)
    ratios = _ratios(lines)
    assert set(ratios) == {"api_vs_bare", "api_p99_ms", "api_p99_vs_bare"}
    assert all(value > 0 for value in ratios.values())
    assert [RATIO.match(x).group(1) for x in lines[-3:]] == ["api_vs_bare", "api_p99_ms",
                                                              "api_p99_vs_bare"]
    assert all(" 0 errors" in x for x in lines if x.startswith(("api:", "bare:")))
    cpu = [x for x in lines if x.startswith("info cpu_per_request ")]
    assert [x.split()[2] for x in cpu] == ["api:", "bare:"], cpu
    # this machine's /proc is readable: the servers and the database did some work
    assert all(float(x.split("server ")[1].split(" ms")[0]) > 0 for x in cpu), cpu
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT to_regclass(%s)", (api.BARE_TABLE,)).fetchone() == (None,)
    assert _schemas(pg_url, "loo_bench_api_%") == []  # both servers' scratch schema is dropped


def test_bench_parts_prints_each_parts_ratios_and_cleans_up(pg_url: str) -> None:
    from bench import parts

    lines: list[str] = []
    ratios = {**parts.json_encode(lines.append), **parts.json_decode(lines.append),
              **parts.replay_decode(pg_url, lines.append, count=200),
              **parts.pool(pg_url, lines.append, seconds=0.4, rounds=2),
              **parts.worker(pg_url, lines.append, seconds=0.5, rounds=1, clients=2)}
    assert set(ratios) == {
        "json_encode_stock_over_ours", "json_decode_jsonloads_over_loadjson",
        "json_decode_loadjson_over_orjson", "replay_jsonloads_over_loadjson",
        "replay_loadjson_over_orjson", "pool_lifo_over_stock_1client",
        "pool_lifo_over_stock_8clients", "worker_p99_gthread_over_balanced",
        "worker_p99_reuseport_over_balanced"}
    assert all(value > 0 for value in ratios.values()), ratios
    assert [line.split(":")[0] for line in lines] == [
        "json_encode", "json_decode", "replay_decode", "pool", "worker"]
    assert _schemas(pg_url, "loo_bench_parts_%") == []


def _schemas(url: str, like: str) -> list[str]:
    with psycopg.connect(url) as conn:
        return [r[0] for r in conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE %s", (like,))]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_bench_export_prints_its_ratio_and_cleans_up(pg_url: str, backend: str) -> None:
    from bench import export

    lines: list[str] = []
    export.run(pg_url if backend == "postgres" else "", hands=3, repeat=1, out=lines.append)
    assert RATIO.match(lines[-1]) and lines[-1].startswith("ratio export_vs_read ")
    assert _ratios(lines)["export_vs_read"] >= 0  # 3 hands on a loaded machine may print 0.00
    assert _schemas(pg_url, "loo_bench_export_%") == []


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_bench_standings_prints_its_ratio_and_cleans_up(pg_url: str, backend: str) -> None:
    from bench import standings

    lines: list[str] = []
    standings.run(pg_url if backend == "postgres" else "", tables=3, hands=4, members=6,
                  clients=2, seconds=0.05, out=lines.append)
    assert RATIO.match(lines[-1]) and lines[-1].startswith("ratio standings_read_vs_bare ")
    # A p99 ratio: one stall of the loaded machine in 0.05 s of standings reads prints 0.00
    assert _ratios(lines)["standings_read_vs_bare"] >= 0
    assert any(line.startswith("scan (fold every table)") for line in lines)
    assert _schemas(pg_url, "loo_bench_standings_%") == []


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_bench_feed_prints_its_ratio_and_cleans_up(pg_url: str, backend: str) -> None:
    from bench import feed

    lines: list[str] = []
    feed.run(pg_url if backend == "postgres" else "", seconds=2.5, clients=3, tables=2,
             out=lines.append)
    assert RATIO.match(lines[-1]) and lines[-1].startswith("ratio feed_vs_poll ")
    assert _ratios(lines)["feed_vs_poll"] >= 0  # 0 only when nothing arrived (a busy CI)
    assert any(line.startswith("SSE: ") for line in lines)
    assert _schemas(pg_url, "loo_bench_feed_%") == []


@pytest.mark.redis
def test_bench_bots_times_bot_replies_through_rq_and_in_process(pg_url: str,
                                                               redis_url: str) -> None:
    from bench import bots

    lines: list[str] = []
    ratio = bots.bot_replies(pg_url, redis_url, moves=8, out=lines.append)
    assert "bot_reply_p99_vs_inprocess" in _ratios(lines)
    assert ratio > 0 and lines[0].startswith("bot reply after a person's move")
    leftovers = list(redis.Redis.from_url(redis_url).scan_iter(match="*loo-bench-bots-*"))
    assert leftovers == []
    assert _schemas(pg_url, "loo_bench_bots_%") == []


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_bench_audit_prints_its_ratios_and_cleans_up(pg_url: str, backend: str) -> None:
    from bench import audit

    lines: list[str] = []
    audit.run(pg_url if backend == "postgres" else "", hands=3, repeat=1, out=lines.append)
    assert [RATIO.match(x).group(1) for x in lines[-2:]] == ["audit_vs_read", "ledger_vs_read"]
    assert all(value > 0 for value in _ratios(lines).values())
    assert any(line.startswith("audit: first ") for line in lines)
    assert any(line.startswith("ledger page (?limit=50): ") for line in lines)
    assert _schemas(pg_url, "loo_bench_audit_%") == []
