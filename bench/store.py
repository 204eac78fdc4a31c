"""`loo bench store`: our event store against bare psycopg/sqlite3 and `eventsourcing`.

Everything runs in a scratch schema of the given PostgreSQL database (dropped at the end)
and a temporary SQLite file. Append rates are measured in many short interleaved rounds
(bare, ours, eventsourcing, bare x8, ours x8, again...) so that a busy machine slows all
sides alike instead of whichever happened to run during a burst.
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
from contextlib import ExitStack
from typing import Any

import psycopg

from ledger.store.base import NewEvent
from ledger.store.postgres import PostgresStore
from ledger.store.sqlite import SqliteStore

Out = Callable[[str], None]
Worker = Callable[[float], int]  # appends until the deadline, returns how many
ROUNDS = 10
CLIENTS = 8
_BARE_INSERT = ("INSERT INTO bare_events (table_id, version, position, type, hand, data,"
                " causation, recorded_at, prev_hash, hash)"
                " VALUES (%s, %s, %s, %s, %s, %s::jsonb, %s, %s, %s, %s)")


def _sample_data(i: int) -> dict[str, Any]:
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


def _loop(step: Callable[[int], object]) -> Worker:
    """A worker calling step(0), step(1), ... across rounds; warmed up once here."""
    done = [0]

    def work(deadline: float) -> int:
        n = 0
        while True:
            step(done[0])
            done[0], n = done[0] + 1, n + 1
            if time.perf_counter() >= deadline:
                return n

    work(0)  # connection, prepared statement, head cache
    return work


def _ours(store: PostgresStore) -> Worker:
    table = f"bench-{uuid.uuid4().hex[:12]}"
    return _loop(lambda v: store.append(table, [NewEvent("tile_played", 1, _sample_data(v))], v))


def _bare(url: str, schema: str, k: int, stack: ExitStack) -> Worker:
    """A single-row INSERT per transaction (autocommit) into a table shaped like ours."""
    conn = stack.enter_context(psycopg.connect(url, autocommit=True,
                                               options=f"-c search_path={schema}"))
    table, stamp, h = f"bare-{uuid.uuid4().hex[:12]}", "2024-01-01T00:00:00.000000+00:00", "0" * 64
    return _loop(lambda v: conn.execute(_BARE_INSERT, (
        table, v + 1, k * 10**9 + v + 1, "tile_played", 1, json.dumps(_sample_data(v)), None,
        stamp, h, h)))


def _eventsourcing(url: str, schema: str, stack: ExitStack) -> Worker | None:
    """One event per new aggregate through eventsourcing's PostgreSQL application recorder."""
    try:
        from eventsourcing.persistence import InfrastructureFactory, StoredEvent
        from eventsourcing.utils import Environment
    except ImportError:
        return None
    info = psycopg.conninfo.conninfo_to_dict(url)
    factory = InfrastructureFactory.construct(Environment("loobench", {
        "PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_SCHEMA": schema,
        "POSTGRES_DBNAME": str(info.get("dbname", "")),
        "POSTGRES_HOST": str(info.get("host", "127.0.0.1")),
        "POSTGRES_PORT": str(info.get("port", "5432")),
        "POSTGRES_USER": str(info.get("user", "")),
        "POSTGRES_PASSWORD": str(info.get("password", ""))}))
    stack.callback(factory.close)
    recorder = factory.application_recorder()
    return _loop(lambda v: recorder.insert_events([StoredEvent(
        uuid.uuid4(), 1, "bench:TilePlayed", json.dumps(_sample_data(v)).encode())]))


def _append_rates(url: str, schema: str, store: PostgresStore,
                  seconds: float) -> dict[str, float]:
    """Appends/s per configuration, from ROUNDS interleaved slices of `seconds` in total."""
    nan = float("nan")
    with ExitStack() as stack:
        es = _eventsourcing(url, schema, stack)
        workers = {
            "bare1": [_bare(url, schema, 0, stack)],
            "ours1": [_ours(store)],
            "es1": [es] if es else [],
            "bare8": [_bare(url, schema, k + 1, stack) for k in range(CLIENTS)],
            "ours8": [_ours(store) for _ in range(CLIENTS)],
        }
        done = {name: [0, 0.0] for name in workers}
        for _ in range(ROUNDS):
            for name, ws in workers.items():
                if ws:
                    n, took = _clients(ws, seconds / ROUNDS)
                    done[name][0] += n
                    done[name][1] += took
    return {name: (n / took if took else nan) for name, (n, took) in done.items()}


# ---- replay: load and fold one long table ----------------------------------------------
_SELECT = ("SELECT version, position, type, hand, data, recorded_at, causation, prev_hash,"
           " hash FROM events WHERE table_id = {p} ORDER BY version")


def _fold_events(events: Iterable[Any]) -> dict[str, int]:
    """The trivial fold: events per type."""
    counts: dict[str, int] = {}
    for e in events:
        counts[e.type] = counts.get(e.type, 0) + 1
    return counts


def _fold_rows(rows: Iterable[tuple[Any, ...]]) -> dict[str, int]:
    """The same fold over bare rows (type is the third column)."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[r[2]] = counts.get(r[2], 0) + 1
    return counts


def _fill(store: PostgresStore | SqliteStore, table: str, count: int, batch: int = 1000) -> None:
    """`count` events through the store itself, so hashes and positions are real."""
    for start in range(0, count, batch):
        n = min(batch, count - start)
        batch_events = [NewEvent("tile_played", 1 + (start + i) // 20, _sample_data(start + i))
                        for i in range(n)]
        store.append(table, batch_events, start)


def _side_by_side(count: int, ours: Callable[[], object],
                  bare: Callable[[], object]) -> tuple[float, float]:
    """Events/s for each, alternating runs, best of three."""
    times: dict[str, float] = {"ours": float("inf"), "bare": float("inf")}
    for _ in range(3):
        for name, run in (("ours", ours), ("bare", bare)):
            start = time.perf_counter()
            run()
            times[name] = min(times[name], time.perf_counter() - start)
    return count / times["ours"], count / times["bare"]


def _replay_postgres(url: str, schema: str, store: PostgresStore,
                     count: int) -> tuple[float, float]:
    table = f"replay-{uuid.uuid4().hex[:8]}"
    _fill(store, table, count)
    sql = _SELECT.format(p="%s")
    with psycopg.connect(url, autocommit=True, options=f"-c search_path={schema}") as conn:
        return _side_by_side(
            count, lambda: _fold_events(store.load(table)),
            lambda: _fold_rows(conn.execute(sql, (table,)).fetchall()))  # psycopg decodes jsonb


def _replay_sqlite(count: int) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="loo-bench-") as tmp:
        path = os.path.join(tmp, "bench.db")
        store = SqliteStore(path)
        conn = sqlite3.connect(path)
        try:
            store.upgrade()
            _fill(store, "replay", count)
            sql = _SELECT.format(p="?")
            # The bare side decodes the JSON too, as psycopg does for jsonb on its side.
            return _side_by_side(
                count, lambda: _fold_events(store.load("replay")),
                lambda: _fold_rows([(*r[:4], json.loads(r[4]), *r[5:])
                                   for r in conn.execute(sql, ("replay",)).fetchall()]))
        finally:
            conn.close()
            store.close()


def run(database_url: str, out: Out = print, *, scale: float = 1.0) -> None:
    """Measure and print; `scale` shrinks durations and sizes (0.01 for a smoke run)."""
    seconds, count = 2.5 * scale, max(100, int(100_000 * scale))
    nan = float("nan")
    rates = dict.fromkeys(("bare1", "ours1", "es1", "bare8", "ours8"), nan)
    pg = (nan, nan)
    if database_url.startswith(("postgresql://", "postgres://")):
        schema = f"loo_bench_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        with psycopg.connect(database_url, autocommit=True, connect_timeout=5) as admin:
            store = PostgresStore(database_url, schema=schema, max_size=CLIENTS + 2)
            try:
                store.upgrade()
                admin.execute(f"CREATE TABLE {schema}.bare_events"
                              f" (LIKE {schema}.events INCLUDING ALL)".encode())
                rates = _append_rates(database_url, schema, store, seconds)
                pg = _replay_postgres(database_url, schema, store, count)
            finally:
                store.close()
                admin.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE".encode())
    else:
        out("skipped: the PostgreSQL parts need a postgresql:// database URL")
    _report(out, rates, pg, _replay_sqlite(count), count)


def _report(out: Out, r: dict[str, float], pg: tuple[float, float],
            lite: tuple[float, float], count: int) -> None:
    out(f"append 1 client:  ours {r['ours1']:.0f}/s, bare INSERT {r['bare1']:.0f}/s")
    out(f"append {CLIENTS} clients: ours {r['ours8']:.0f}/s, bare INSERT {r['bare8']:.0f}/s")
    if r["es1"] != r["es1"]:  # nan: not measured
        out("eventsourcing: skipped: eventsourcing not installed")
    else:
        out(f"eventsourcing 1 client: {r['es1']:.0f}/s (one event per new aggregate)")
    out(f"replay postgresql, {count} events: ours {pg[0]:.0f} events/s, bare {pg[1]:.0f}/s")
    out(f"replay sqlite, {count} events: ours {lite[0]:.0f} events/s, bare {lite[1]:.0f}/s")
    for name, value, target in (
        ("store_append_1client", r["ours1"] / r["bare1"], 0.8),  # issue 16
        ("store_append_8clients", r["ours8"] / r["bare8"], 0.5),
        ("store_vs_eventsourcing", r["ours1"] / r["es1"], 3.0),
        ("replay_vs_bare_pg", pg[0] / pg[1], 0.5),
        ("replay_vs_bare_sqlite", lite[0] / lite[1], 0.5),
    ):
        out(f"ratio {name} {value:.2f} target {target}")

