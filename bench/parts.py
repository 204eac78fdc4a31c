"""`loo bench parts`: each hand-made part against the stock part it stands in for (issue 16).

- json_encode: ledger/api/jsonio.py (orjson behind Flask's provider) against Flask's
  DefaultJSONProvider, on a real action answer, through `provider.response()`.
- json_decode: ledger/store/bulk.py's load_json (the json C scanner called directly)
  against json.loads and orjson.loads, on stored event data; and a PostgreSQL replay with
  each as psycopg's jsonb loader.
- pool: psycopg_pool's ConnectionPool (FIFO: it hands out the connection idle longest)
  against the LIFO subclass PostgresStore uses (ledger/store/postgres_lifo.py: the most
  recently returned first), one-event appends, 1 client after 8 have grown the pool, then
  8 clients; interleaved rounds.
- worker: `loo serve`'s BalancedThreadWorker against stock gthread and gthread with
  reuse_port, whole hands through the API (bench/api.py's driver), interleaved rounds.

Every figure is from this run: what matters is each ratio, not the absolute numbers.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
import timeit
import uuid
from collections.abc import Callable
from contextlib import contextmanager
from typing import Any

Out = Callable[[str], None]
SEATS = [{"name": n} for n in ("Ann", "Bob", "Cat", "Dan")]


def _best(fn: Callable[[], object], number: int, repeat: int = 5) -> float:
    """Seconds per call, the best of `repeat` runs of `number` calls."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


# ---- JSON: encoding answers, decoding stored events ---------------------------------------

@contextmanager
def _sample_game() -> Any:
    """A 4-seat table a few moves into its first hand, on a temporary SQLite file: the app
    (to take an answer from) and the store (for stored event data)."""
    from ledger.api.app import create_app

    with tempfile.TemporaryDirectory(prefix="loo-bench-parts-") as tmp:
        app = create_app(test_config={"DATABASE_URL": f"sqlite:///{tmp}/parts.db",
                                      "LOO_RATE_LIMITS": "off"})
        c = app.test_client()
        created = c.post("/v1/tables", json={"seats": SEATS, "first_dealer": 0}).get_json()
        tid, token = created["id"], created["admin_token"]
        auth = {"Authorization": f"Bearer {token}"}
        answer: dict[str, Any] = {}
        for _ in range(12):  # decisions, then plays: an answer with tricks and events
            view = c.get(f"/v1/tables/{tid}", headers=auth).get_json()
            legal = view.get("legal_actions") or []
            if not legal:
                break
            body = dict(legal[0], expected_version=view["version"])
            answer = c.post(f"/v1/tables/{tid}/actions", json=body, headers=auth).get_json()
        try:
            yield app, tid, answer
        finally:
            app.extensions["loo_container"].close()


def json_encode(out: Out) -> dict[str, float]:
    from flask.json.provider import DefaultJSONProvider

    from ledger.api.jsonio import OrjsonProvider

    with _sample_game() as (app, _tid, answer):
        ours, stock = OrjsonProvider(app), DefaultJSONProvider(app)
        stock.sort_keys = True  # Flask's default too; said so it is visible
        size = len(ours.response(answer).get_data())
        with app.app_context():
            t_ours = _best(lambda: ours.response(answer), 2000)
            t_stock = _best(lambda: stock.response(answer), 2000)
    out(f"json_encode: an action's answer ({size:,} bytes) through provider.response(): "
        f"jsonio (orjson) {t_ours * 1e6:.1f} µs, Flask's DefaultJSONProvider "
        f"{t_stock * 1e6:.1f} µs")
    return {"json_encode_stock_over_ours": t_stock / t_ours}


def _orjson_loads() -> Callable[[Any], Any]:
    import orjson

    def loads(data: Any) -> Any:
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:  # what orjson refuses (NaN, > 64-bit ints)
            return json.loads(bytes(data) if isinstance(data, memoryview) else data)

    return loads


def json_decode(out: Out) -> dict[str, float]:
    from ledger.store.bulk import load_json

    with _sample_game() as (app, tid, _answer):
        store = app.extensions["loo_container"].store
        texts = [json.dumps(e.data) for e in store.load(tid)]
    texts = (texts * (2000 // max(1, len(texts)) + 1))[:2000]  # a game's mix of events
    raw = [t.encode() for t in texts]  # psycopg hands the loader bytes
    loaders = {"load_json": load_json, "json.loads": json.loads, "orjson": _orjson_loads()}
    took = {name: _best(lambda f=f: [f(t) for t in texts], 5) / len(texts)
            for name, f in loaders.items()}
    took_raw = {name: _best(lambda f=f: [f(t) for t in raw], 5) / len(raw)
                for name, f in loaders.items()}
    avg = sum(map(len, texts)) / len(texts)
    out(f"json_decode: stored event data ({len(texts)} events, {avg:.0f} bytes each), per "
        "event from str / from bytes: " + ", ".join(
            f"{name} {took[name] * 1e6:.2f} / {took_raw[name] * 1e6:.2f} µs" for name in loaders))
    return {"json_decode_jsonloads_over_loadjson": took_raw["json.loads"] / took_raw["load_json"],
            "json_decode_loadjson_over_orjson": took_raw["load_json"] / took_raw["orjson"]}


def replay_decode(database_url: str, out: Out, count: int = 20_000) -> dict[str, float]:
    """A PostgreSQL replay of `count` events with each loader set on the connections."""

    from bench.store import _fill, _fold_events
    from ledger.store import postgres_pool
    from ledger.store.bulk import load_json
    from ledger.store.postgres import PostgresStore

    schema = f"loo_bench_parts_{uuid.uuid4().hex[:8]}"
    loaders = {"load_json": load_json, "json.loads": json.loads, "orjson": _orjson_loads()}
    best = dict.fromkeys(loaders, float("inf"))
    stores: dict[str, Any] = {}
    try:
        for name, loader in loaders.items():
            postgres_pool.load_json = loader  # read by _configure on each new connection
            stores[name] = PostgresStore(database_url, schema=schema, max_size=2)
        postgres_pool.load_json = load_json
        first = next(iter(stores.values()))
        first.upgrade()
        table = f"parts-{uuid.uuid4().hex[:8]}"
        _fill(first, table, count)
        for _ in range(3):
            for name, store in stores.items():
                start = time.perf_counter()
                _fold_events(store.load(table))
                best[name] = min(best[name], time.perf_counter() - start)
    finally:
        postgres_pool.load_json = load_json
        _close_and_drop(stores, database_url, schema)
    out(f"replay_decode: PostgreSQL replay of {count:,} events, events/s with psycopg's jsonb "
        "loader set to: " + ", ".join(f"{n} {count / t:,.0f}" for n, t in best.items()))
    return {"replay_jsonloads_over_loadjson": best["json.loads"] / best["load_json"],
            "replay_loadjson_over_orjson": best["load_json"] / best["orjson"]}


def _close_and_drop(stores: dict[str, Any], database_url: str, schema: str) -> None:
    """Close the stores a part compared, then drop the scratch schema they shared."""
    import psycopg

    for store in stores.values():
        store.close()
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE".encode())


# ---- the connection pool -------------------------------------------------------------------

def pool(database_url: str, out: Out, seconds: float = 8.0, rounds: int = 8) -> dict[str, float]:
    import psycopg_pool

    from bench.store import _clients, _ours
    from ledger.store import postgres_pool
    from ledger.store.postgres import PostgresStore

    schema = f"loo_bench_parts_{uuid.uuid4().hex[:8]}"
    ours = postgres_pool.POOL
    stores: dict[str, Any] = {}
    try:
        postgres_pool.POOL = psycopg_pool.ConnectionPool
        stores["stock"] = PostgresStore(database_url, schema=schema, max_size=10)
        postgres_pool.POOL = ours
        stores["lifo"] = PostgresStore(database_url, schema=schema, max_size=10)
        stores["stock"].upgrade()
        workers = {name: {"1": [_ours(s)], "8": [_ours(s) for _ in range(8)]}
                   for name, s in stores.items()}
        for ws in workers.values():
            _clients(ws["8"], 0.5)  # every pool grown to 8 connections or more
        done = {(name, k): [0, 0.0] for name in workers for k in ("1", "8")}
        for r in range(rounds):
            for k in ("1", "8"):
                order = list(workers.items())  # each side first in every other round
                for name, ws in order if r % 2 else order[::-1]:
                    n, took = _clients(ws[k], seconds / rounds / 2)
                    done[(name, k)][0] += n
                    done[(name, k)][1] += took
        kinds = {name: type(s._connections._pool).__name__ for name, s in stores.items()}
    finally:
        postgres_pool.POOL = ours
        _close_and_drop(stores, database_url, schema)
    rate = {key: n / took for key, (n, took) in done.items()}
    out(f"pool: one-event appends/s ({kinds['stock']} against {kinds['lifo']}): 1 client: "
        f"stock {rate[('stock', '1')]:,.0f}, LIFO {rate[('lifo', '1')]:,.0f}; 8 clients: "
        f"stock {rate[('stock', '8')]:,.0f}, LIFO {rate[('lifo', '8')]:,.0f}")
    return {"pool_lifo_over_stock_1client": rate[("lifo", "1")] / rate[("stock", "1")],
            "pool_lifo_over_stock_8clients": rate[("lifo", "8")] / rate[("stock", "8")]}


# ---- the gunicorn worker ---------------------------------------------------------------------

WORKERS = {
    "balanced": {"worker_class": "ledger.serve.gunicorn_worker.BalancedThreadWorker"},
    "gthread": {"worker_class": "gthread"},
    "gthread_reuse_port": {"worker_class": "gthread", "reuse_port": True},
}


def serve_api(port: int, kind: str, threads: int) -> None:
    """`loo serve --workers 2 --threads T` with the worker class (and reuse_port) of `kind`."""
    from bench.api import HOST
    from ledger.bootstrap import Settings
    from ledger.cli.main import GunicornApp, metrics_dir

    with metrics_dir():
        GunicornApp(Settings.from_env(), {"bind": f"{HOST}:{port}", "workers": 2,
                                          "threads": threads, **WORKERS[kind]}).run()


def worker(database_url: str, out: Out, seconds: float = 6.0, rounds: int = 2,
           clients: int = 16) -> dict[str, float]:
    import psycopg

    from bench.api import _measure, _percentile, _start, _stop, free_port, in_schema
    from ledger.bootstrap import Settings, bootstrap
    from ledger.cli.main import DEFAULT_THREADS

    schema = f"loo_bench_parts_{uuid.uuid4().hex[:8]}"
    scoped = in_schema(database_url, schema)
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}".encode())
    lat: dict[str, list[float]] = {k: [] for k in WORKERS}
    rps: dict[str, list[float]] = {k: [] for k in WORKERS}
    try:
        bootstrap(Settings(database_url=scoped)).close()  # the schema, upgraded once
        for _ in range(rounds):
            for kind in WORKERS:
                port = free_port()
                code = (f"from bench.parts import serve_api; "
                        f"serve_api({port}, {kind!r}, {DEFAULT_THREADS})")
                with tempfile.TemporaryFile() as log:
                    server = _start(kind, [sys.executable, "-c", code], scoped, port, log)
                    try:
                        stats = _measure("api", port, seconds, clients)
                    finally:
                        _stop(server)
                lat[kind].extend(stats["latencies"])
                rps[kind].append(len(stats["latencies"]) / stats["elapsed"])
    finally:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE".encode())
    p99 = {k: _percentile(sorted(v), 0.99) * 1000 for k, v in lat.items()}
    p50 = {k: _percentile(sorted(v), 0.50) * 1000 for k, v in lat.items()}
    out(f"worker: {clients} clients playing hands, 2 processes x {DEFAULT_THREADS} threads, "
        f"{rounds} interleaved rounds of {seconds:.0f} s: " + "; ".join(
            f"{k} {statistics.mean(rps[k]):,.0f} req/s p50 {p50[k]:.1f} ms p99 {p99[k]:.1f} ms"
            for k in WORKERS))
    return {"worker_p99_gthread_over_balanced": p99["gthread"] / p99["balanced"],
            "worker_p99_reuseport_over_balanced": p99["gthread_reuse_port"] / p99["balanced"]}


PARTS = ("json_encode", "json_decode", "replay_decode", "pool", "worker")


def run(database_url: str, only: tuple[str, ...] = (), out: Out = print) -> None:
    """Measure each part (or those in `only`) and print `ratio NAME V` lines (V > 1: the
    hand-made part is that many times quicker than the stock one it replaces)."""
    os.environ.setdefault("LOO_LOG_LEVEL", "WARNING")
    pg = database_url.startswith(("postgresql://", "postgres://"))
    ratios: dict[str, float] = {}
    for part in only or PARTS:
        if part in ("replay_decode", "pool", "worker") and not pg:
            out(f"{part}: skipped: needs a postgresql:// DATABASE_URL")
            continue
        fn = globals()[part]
        ratios |= fn(out) if part in ("json_encode", "json_decode") else fn(database_url, out)
    for name, value in ratios.items():
        out(f"ratio {name} {value:.2f}")
