"""`loo bench store`: our event store against bare psycopg/sqlite3 and `eventsourcing`.

Everything runs in a scratch schema of the given PostgreSQL database (dropped at the end)
and a temporary SQLite file. Append rates are measured in interleaved rounds (bare, ours,
eventsourcing, bare x8, ours x8, repeated) so a noisy machine skews all sides alike.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

import psycopg

from ledger.store.base import NewEvent
from ledger.store.postgres import PostgresStore
from ledger.store.sqlite import SqliteStore

Out = Callable[[str], None]
Worker = Callable[[float], int]  # runs until the deadline, returns appends done
ROUNDS = 3
CLIENTS = 8
_BARE_INSERT = ("INSERT INTO bare_events (table_id, version, position, type, hand, data,"
                " causation, recorded_at, prev_hash, hash)"
                " VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s)")
_SELECT = ("SELECT version, position, type, hand, data, recorded_at, causation, prev_hash,"
           " hash FROM events WHERE table_id = {p} ORDER BY version")


def _data(i: int) -> dict[str, Any]:
    """A tile_played-sized payload."""
    return {"seat": i % 4, "tile": [i % 7, (i // 7) % 7], "trick": i % 5}


def _clients(workers: list[Worker], seconds: float) -> tuple[int, float]:
    """Run the workers in threads from a common start until the deadline."""
    counts = [0] * len(workers)
    gate = threading.Barrier(len(workers) + 1)

    def go(k: int) -> None:
        gate.wait()
        counts[k] = workers[k](time.perf_counter() + seconds)

    threads = [threading.Thread(target=go, args=(k,)) for k in range(len(workers))]
    for t in threads:
        t.start()
    gate.wait()
    start = time.perf_counter()
    for t in threads:
        t.join()
    return sum(counts), time.perf_counter() - start


def _ours(store: PostgresStore, tag: str) -> Worker:
    table, state = f"bench-{tag}-{uuid.uuid4().hex[:8]}", {"version": 0}

    def work(deadline: float) -> int:
        n = 0
        while True:
            v = state["version"]
            store.append(table, [NewEvent("tile_played", 1, _data(v))], v)
            state["version"], n = v + 1, n + 1
            if time.perf_counter() >= deadline:
                return n

    work(0)  # warm up: pool connection, prepared statement, head cache
    return work


def _bare(url: str, schema: str, k: int) -> Worker:
    conn = psycopg.connect(url, autocommit=True, options=f"-c search_path={schema}")
    table, state = f"bare-{uuid.uuid4().hex[:8]}", {"version": 0}
    stamp, h = "2024-01-01T00:00:00.000000+00:00", "0" * 64

    def work(deadline: float) -> int:
        n = 0
        while True:
            v = state["version"] + 1
            conn.execute(_BARE_INSERT, (table, v, k * 10**9 + v, "tile_played", 1,
                                        json.dumps(_data(v)), None, stamp, h, h))
            state["version"], n = v, n + 1
            if time.perf_counter() >= deadline:
                return n

    work(0)
    return work


def _eventsourcing(url: str, schema: str) -> Worker | None:
    """One event per new aggregate through eventsourcing's PostgreSQL application recorder."""
    try:
        from eventsourcing.persistence import InfrastructureFactory, StoredEvent
        from eventsourcing.utils import Environment
    except ImportError:
        return None
    info = psycopg.conninfo.conninfo_to_dict(url)
    env = Environment("loobench", {
        "PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_SCHEMA": schema,
        "POSTGRES_DBNAME": str(info.get("dbname", "")),
        "POSTGRES_HOST": str(info.get("host", "127.0.0.1")),
        "POSTGRES_PORT": str(info.get("port", "5432")),
        "POSTGRES_USER": str(info.get("user", "")),
        "POSTGRES_PASSWORD": str(info.get("password", ""))})
    recorder = InfrastructureFactory.construct(env).application_recorder()

    def work(deadline: float) -> int:
        n = 0
        while True:
            state = json.dumps(_data(n)).encode()
            recorder.insert_events([StoredEvent(uuid.uuid4(), 1, "bench:TilePlayed", state)])
            n += 1
            if time.perf_counter() >= deadline:
                return n

    work(0)
    return work


def _append_rates(url: str, schema: str, store: PostgresStore,
                  seconds: float) -> dict[str, float]:
    """Appends/s per configuration, from ROUNDS interleaved slices of `seconds` in total."""
    setups: dict[str, Callable[[], list[Worker] | None]] = {
        "bare1": lambda: [_bare(url, schema, 0)],
        "ours1": lambda: [_ours(store, "one")],
        "es1": lambda: (lambda w: [w] if w else None)(_eventsourcing(url, schema)),
        "bare8": lambda: [_bare(url, schema, k + 1) for k in range(CLIENTS)],
        "ours8": lambda: [_ours(store, f"c{k}") for k in range(CLIENTS)],
    }
    workers = {name: setup() for name, setup in setups.items()}
    done = {name: [0, 0.0] for name in workers}
    for _ in range(ROUNDS):
        for name, ws in workers.items():
            if ws:
                n, took = _clients(ws, seconds / ROUNDS)
                done[name][0] += n
                done[name][1] += took
    return {name: (n / took if took else float("nan")) for name, (n, took) in done.items()}


def _fold_events(events: Iterable[Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for e in events:
        counts[e.type] = counts.get(e.type, 0) + 1
    return counts


def _fold_rows(rows: Iterable[tuple[Any, ...]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in rows:
        counts[r[2]] = counts.get(r[2], 0) + 1
    return counts


def _fill(store: PostgresStore | SqliteStore, table: str, count: int) -> None:
    batch = 1000
    for start in range(0, count, batch):
        n = min(batch, count - start)
        store.append(table, [NewEvent("tile_played", 1 + (start + i) // 20, _data(start + i))
                             for i in range(n)], start)


def _best_rate(count: int, run: Callable[[], object], repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return count / best


def _replay_pg(url: str, schema: str, store: PostgresStore, count: int) -> tuple[float, float]:
    table = f"replay-{uuid.uuid4().hex[:8]}"
    _fill(store, table, count)
    conn = psycopg.connect(url, autocommit=True, options=f"-c search_path={schema}")
    try:
        sql = _SELECT.format(p="%s")
        ours = _best_rate(count, lambda: _fold_events(store.load(table)))
        bare = _best_rate(count, lambda: _fold_rows(conn.execute(sql, (table,)).fetchall()))
    finally:
        conn.close()
    return ours, bare


def _replay_sqlite(count: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="loo-bench-") as tmp:
        path = os.path.join(tmp, "bench.db")
        store = SqliteStore(path)
        store.upgrade()
        table = "replay"
        _fill(store, table, count)
        conn = sqlite3.connect(path)
        try:
            sql = _SELECT.format(p="?")
            ours = _best_rate(count, lambda: _fold_events(store.load(table)))
            # The bare side decodes the JSON too: psycopg does that for jsonb on its side.
            bare = _best_rate(count, lambda: _fold_rows(
                (r[0], r[1], r[2], r[3], json.loads(r[4]))
                for r in conn.execute(sql, (table,)).fetchall()))
        finally:
            conn.close()
            store.close()
    return ours, bare


def run(database_url: str, out: Out = print, *, scale: float = 1.0) -> None:
    """Measure and print; `scale` shrinks durations and sizes (0.01 for a smoke run)."""
    seconds, count = 2.5 * scale, max(100, int(100_000 * scale))
    nan = float("nan")
    rates: dict[str, float] = dict.fromkeys(("bare1", "ours1", "es1", "bare8", "ours8"), nan)
    pg_replay = (nan, nan)
    if database_url.startswith(("postgresql://", "postgres://")):
        schema = f"loo_bench_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        admin = psycopg.connect(database_url, autocommit=True, connect_timeout=5)
        store: PostgresStore | None = None
        try:
            store = PostgresStore(database_url, schema=schema, max_size=CLIENTS + 2)
            store.upgrade()
            admin.execute(f"CREATE TABLE {schema}.bare_events"
                          f" (LIKE {schema}.events INCLUDING ALL)")
            rates = _append_rates(database_url, schema, store, seconds)
            pg_replay = _replay_pg(database_url, schema, store, count)
        finally:
            if store is not None:
                store.close()
            admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
            admin.close()
    else:
        out("skipped: PostgreSQL parts need a postgresql:// --database-url")
    sqlite_replay = _replay_sqlite(count)
    _report(out, rates, pg_replay, sqlite_replay, count)


def _report(out: Out, r: dict[str, float], pg: tuple[float, float],
            lite: tuple[float, float], count: int) -> None:
    out(f"append 1 client: ours {r['ours1']:.0f}/s, bare INSERT {r['bare1']:.0f}/s")
    out(f"append {CLIENTS} clients: ours {r['ours8']:.0f}/s, bare INSERT {r['bare8']:.0f}/s")
    if r["es1"] != r["es1"]:  # nan: not measured
        out("eventsourcing: skipped: eventsourcing not installed")
    else:
        out(f"eventsourcing 1 client: {r['es1']:.0f} events/s (one new aggregate each)")
    out(f"replay postgresql ({count} events): ours {pg[0]:.0f} events/s, bare {pg[1]:.0f}/s")
    out(f"replay sqlite ({count} events): ours {lite[0]:.0f} events/s, bare {lite[1]:.0f}/s")
    for name, value, target in (
        ("store_append_1client", r["ours1"] / r["bare1"], 0.7),
        ("store_append_8clients", r["ours8"] / r["bare8"], 0.5),
        ("store_vs_eventsourcing", r["ours1"] / r["es1"], 3.0),
        ("replay_vs_bare_pg", pg[0] / pg[1], 0.5),
        ("replay_vs_bare_sqlite", lite[0] / lite[1], 0.5),
    ):
        out(f"ratio {name} {value:.2f} target {target}")
