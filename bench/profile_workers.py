"""Where a worker's CPU goes per bot job: cProfile of `loo worker`'s job loop, in-process.

    python -m bench.profile_workers [DATABASE_URL] [REDIS_URL] [--hands N] [--tables T]

The `loo bench workers` RQ run's jobs, one per hand: T all-bot tables (a scratch
PostgreSQL schema and queue, both removed at the end) each start a hand through the RQ
dispatcher, as the API does, then a burst LooWorker in this process runs the T jobs under
cProfile, round after round. Only the worker's side is profiled (the driver's StartHand is
not). Prints CPU per job, per hand, the Redis commands and SQL statements a job sends,
and the top entries by cumulative time, to compare two commits. With --auto, the jobs of
the 1/2/4-worker runs instead: auto-dealing tables, each job playing many hands.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time
from collections import Counter
from typing import Any

import redis

from bench.workers import _scale_tables, _seeds, _tables, rq_scratch
from ledger.app.service import Ledger
from ledger.core import commands as c
from workers import runtime
from workers.queue import RqDispatcher


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("database_url", nargs="?", default="postgresql://postgres@127.0.0.1:5432/test")
    ap.add_argument("redis_url", nargs="?", default="redis://127.0.0.1:6379/15")
    ap.add_argument("--hands", type=int, default=400)
    ap.add_argument("--tables", type=int, default=20)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--auto", action="store_true",
                    help="the 1/2/4-worker runs' jobs instead: auto-dealing tables played "
                         "to their end, a job playing up to 400 steps (many hands)")
    ap.add_argument("--no-profile", action="store_true", help="CPU figures only")
    ap.add_argument("--cold", action="store_true",
                    help="forget the worker's cached tables before each job, as when the "
                         "table's previous job ran on another worker")
    args = ap.parse_args()
    os.environ.setdefault("LOO_LOG_LEVEL", "WARNING")
    with rq_scratch(args.database_url, args.redis_url, "profile") as scratch:
        _profile(scratch, args.hands, args.tables, args.top, args.auto, not args.no_profile,
                 args.cold)


class _Counted(redis.Redis):
    """Counts the commands this connection sends (a pipeline's count as one round trip; a
    watching pipeline's immediate commands, WATCH and its reads, one each)."""

    commands = 0
    round_trips = 0
    names: Counter[str] = Counter()

    def execute_command(self, *args: Any, **options: Any) -> Any:
        _Counted.commands += 1
        _Counted.round_trips += 1
        _Counted.names[str(args[0])] += 1
        return super().execute_command(*args, **options)

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Any:
        pipe = super().pipeline(transaction, shard_hint)
        execute = pipe.execute

        def counted(raise_on_error: bool = True) -> Any:
            _Counted.commands += len(pipe.command_stack)
            _Counted.names.update(f"{a[0][0]} (pipelined)" for a in pipe.command_stack)
            _Counted.round_trips += 1
            return execute(raise_on_error)

        pipe.execute = counted
        immediate = pipe.immediate_execute_command

        def counted_now(*args: Any, **options: Any) -> Any:
            # WATCH, and what a watching pipeline reads before MULTI: each a round trip.
            _Counted.commands += 1
            _Counted.round_trips += 1
            _Counted.names[f"{args[0]} (watching)"] += 1
            return immediate(*args, **options)

        pipe.immediate_execute_command = counted_now
        return pipe


def _profile(scratch: Any, hands: int, tables: int, top: int, auto: bool,
             profile: bool, cold: bool) -> None:
    from workers.worker import LooWorker

    class Worker(LooWorker):
        def execute_job(self, job: Any, queue: Any) -> None:
            if cold:
                runtime.current_ledger()._cache.clear()
            super().execute_job(job, queue)

    queue = scratch.queue
    driver = Ledger(scratch.store, RqDispatcher(queue), seeds=_seeds(1))
    rounds = max(1, hands // tables)
    if auto:  # one warm-up round of one-hand tables, then tables of `rounds` hands
        warm, ids = _scale_tables(driver, tables, 1), _scale_tables(driver, tables, rounds)
        queue.empty()  # their first jobs: enqueued again, round by round below
        plan = [warm, ids]
    else:
        ids = _tables(driver, tables)
        plan = [ids] * rounds
    # The worker's side: its own store connection and ledger, jobs back onto the queue.
    from ledger.bootstrap import Settings, open_database

    wstore = open_database(Settings(database_url=scratch.url), upgrade=False)
    conn = _Counted(connection_pool=queue.connection.connection_pool)
    wqueue = type(queue)(queue.name, connection=conn, serializer=queue.serializer)
    runtime.install(Ledger(wstore, RqDispatcher(wqueue)))
    statements = _count_statements(wstore)
    profiler = cProfile.Profile(time.process_time)  # CPU, not time spent waiting
    cpu = 0.0
    jobs = sql = played = 0
    for number, round_ids in enumerate(plan):
        for t in round_ids:
            if auto:
                driver.dispatch(t)
            else:
                driver.execute(t, c.StartHand())
        count = _finished(queue)
        worker = Worker([wqueue], connection=conn, serializer=queue.serializer)
        if number == 1:  # the first round warms caches and prepared statements
            _Counted.commands = _Counted.round_trips = 0
            _Counted.names.clear()
        before = statements[0]
        start = time.process_time()
        if number >= 1 and profile:
            profiler.enable()
        worker.work(burst=True, logging_level="WARNING")
        if number >= 1:
            profiler.disable()
            cpu += time.process_time() - start
            jobs += _finished(queue) - count
            played += len(round_ids) * (rounds if auto else 1)
            sql += statements[0] - before
    print(f"{jobs} jobs playing {played} hands in {len(plan) - 1} burst runs: "
          f"{cpu / jobs * 1000:.3f} ms CPU per job, {cpu / played * 1000:.3f} ms per hand "
          f"({'under cProfile, ' if profile else ''}the worker's start-up and end per run "
          f"included); Redis {_Counted.commands / jobs:.1f} commands in "
          f"{_Counted.round_trips / jobs:.1f} round trips per job; SQL "
          f"{sql / jobs:.1f} statements per job")
    print("Redis commands per job: " + ", ".join(
        f"{name} {n / jobs:.2f}" for name, n in _Counted.names.most_common()))
    if profile:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(top)
    wstore.close()


def _finished(queue: Any) -> int:
    return int(queue.finished_job_registry.count + queue.failed_job_registry.count)


def _count_statements(store: Any) -> list[int]:
    """Count the statements the store's connections execute (psycopg's Connection.execute
    and cursors' execute), in a one-element list."""
    import psycopg

    counter = [0]
    original = psycopg.Cursor.execute

    def execute(self: Any, *a: Any, **k: Any) -> Any:
        counter[0] += 1
        return original(self, *a, **k)

    psycopg.Cursor.execute = execute  # type: ignore[method-assign]
    return counter


if __name__ == "__main__":
    main()
