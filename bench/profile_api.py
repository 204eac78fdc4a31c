"""Where an API request's CPU goes: cProfile of whole hands played in-process.

    python -m bench.profile_api [DATABASE_URL] [--requests N] [--top K]

Four bench.api Players (the `loo bench api` driver) play through Flask's test client
against a scratch PostgreSQL database (created and dropped here), with rate limits on but
never refusing, as the bench runs them. Prints CPU per request and the top entries by
cumulative time, to compare two commits (check each out, run this in each).
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("database_url", nargs="?", default="postgresql://postgres@127.0.0.1:5432/test")
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--top", type=int, default=45)
    args = ap.parse_args()
    os.environ.setdefault("LOO_LOG_LEVEL", "WARNING")
    for var, *_ in LIMIT_VARS:
        os.environ[var] = "1000000/second"
    db = "loo_profile_" + uuid.uuid4().hex[:8]
    with psycopg.connect(args.database_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {db}")
    try:
        _profile(args.database_url.rsplit("/", 1)[0] + "/" + db, args.requests, args.top)
    finally:
        with psycopg.connect(args.database_url, autocommit=True) as conn:
            conn.execute(f"DROP DATABASE {db} WITH (FORCE)")


def _profile(url: str, requests: int, top: int) -> None:
    from ledger.api.app import create_app

    client = create_app(test_config={"DATABASE_URL": url}).test_client()

    class Client:
        calls = 0

        def call(self, method: str, path: str, body: Any = None,
                 token: str | None = None) -> tuple[int, Any]:
            Client.calls += 1
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            r = client.open(path, method=method, json=body, headers=headers)
            return r.status_code, r.get_json(silent=True)

    players = [Player(Client(), seed) for seed in range(4)]  # type: ignore[arg-type]
    for _ in range(200):  # warm up: caches, prepared statements, a few hands
        for p in players:
            p.step()
    Client.calls = 0
    profiler = cProfile.Profile()
    cpu = time.process_time()
    profiler.enable()
    while Client.calls < requests:
        for p in players:
            p.step()
    profiler.disable()
    cpu = time.process_time() - cpu
    print(f"{Client.calls} requests, {cpu / Client.calls * 1000:.3f} ms CPU each "
          "(under cProfile)")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(top)


if __name__ == "__main__":
    main()
