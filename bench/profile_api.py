"""Where an API request's CPU goes: whole hands played in-process, measured, then profiled.

    python -m bench.profile_api [DATABASE_URL] [--requests N] [--rounds R] [--top K]

Four bench.api Players (the `loo bench api` driver) play through Flask's test client
against a scratch PostgreSQL database (created and dropped here), with rate limits on but
never refusing, as the bench runs them. First R rounds of N requests without a profiler,
each giving CPU per request of this process (every thread: the store's own threads too),
of the thread that runs the requests, and of the PostgreSQL backends serving this database
(read from /proc: run it on the database's host); the least of the rounds is the figure
least disturbed by other load on the machine. Then one round under cProfile, its top
entries by cumulative time. Run it at two commits to compare (check each out in turn).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
import uuid
from typing import Any

import psycopg

from bench.api import Player
from ledger.api.limits import LIMIT_VARS

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("database_url", nargs="?", default="postgresql://postgres@127.0.0.1:5432/test")
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5, help="rounds without the profiler")
    ap.add_argument("--top", type=int, default=45)
    args = ap.parse_args()
    os.environ.setdefault("LOO_LOG_LEVEL", "WARNING")
    for var, *_ in LIMIT_VARS:
        os.environ[var] = "1000000/second"
    os.environ["LOO_RATE_LIMIT_LOOPBACK"] = "limit"  # counted, as a public server counts
    db = "loo_profile_" + uuid.uuid4().hex[:8]
    with psycopg.connect(args.database_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {db}")
    try:
        _profile(args.database_url, args.database_url.rsplit("/", 1)[0] + "/" + db, args)
    finally:
        with psycopg.connect(args.database_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {db} WITH (FORCE)")


def backends_cpu(admin_url: str, db: str) -> float:
    """CPU seconds so far of the PostgreSQL backends connected to `db` (0 if not readable)."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        pids = [r[0] for r in conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s", (db,))]
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
        except (OSError, IndexError, ValueError):
            continue  # another host's server, or a backend that just ended
    return total / TICK


def _profile(admin_url: str, url: str, args: argparse.Namespace) -> None:
    from ledger.api.app import create_app

    client = create_app(test_config={"DATABASE_URL": url}).test_client()
    db = url.rsplit("/", 1)[1]

    class Client:
        calls = 0

        def call(self, method: str, path: str, body: Any = None,
                 token: str | None = None) -> tuple[int, Any]:
            Client.calls += 1
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            r = client.open(path, method=method, json=body, headers=headers)
            return r.status_code, r.get_json(silent=True)

    players = [Player(Client(), seed) for seed in range(4)]  # type: ignore[arg-type]

    def play(requests: int) -> int:
        Client.calls = 0
        while Client.calls < requests:
            for p in players:
                p.step()
        return Client.calls

    play(800)  # warm up: caches, prepared statements, a few hands
    rounds: list[tuple[float, float, float]] = []
    for _ in range(args.rounds):
        pg, cpu, thread = backends_cpu(admin_url, db), time.process_time(), time.thread_time()
        n = play(args.requests)
        rounds.append(((time.process_time() - cpu) / n * 1000,
                       (time.thread_time() - thread) / n * 1000,
                       (backends_cpu(admin_url, db) - pg) / n * 1000))
    if rounds:
        def col(i: int) -> str:
            values = sorted(r[i] for r in rounds)
            return f"{values[0]:.3f} (median {values[len(values) // 2]:.3f})"

        print(f"{args.rounds} rounds of {args.requests} requests, ms of CPU a request, least "
              f"of the rounds: process {col(0)}, request thread {col(1)}, PostgreSQL "
              f"backends {col(2)}")
    profiler = cProfile.Profile()
    cpu = time.process_time()
    profiler.enable()
    n = play(args.requests)
    profiler.disable()
    cpu = time.process_time() - cpu
    print(f"{n} requests, {cpu / n * 1000:.3f} ms CPU each (under cProfile)")
    if args.top:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
