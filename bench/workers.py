"""`loo bench workers`: all-bot hands/minute through RQ with one worker vs in-process.

The same 4-bot tables (same seeds, so the same games) are played twice on one
database: once with the embedded default and once with the jobs going through Redis to
a single `loo worker` process. One job plays every consecutive bot turn and the
settlement in one append, so a hand costs one RQ job and two commits (POST /hands, the
job); the embedded default decides the same moves before POST /hands commits: one commit,
no queue. RQ's own cost per job (the trivial-job figure) is what separates the two.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import psycopg
from rq import Queue, SimpleWorker
from rq.job import Job, JobStatus

from bench.api import in_schema
from ledger.app.service import Ledger
from ledger.bootstrap import Settings, open_database
from ledger.core import commands as c
from ledger.store.base import EventStore
from workers.queue import InlineDispatcher, RqDispatcher, forget, make_queue, rq_job_id

Out = Callable[[str], None]
TABLES = 4
TRIVIAL_JOBS_PER_HAND = 5  # 200 trivial jobs for the default 40 hands
HAND_TIMEOUT = 30.0  # seconds a round of hands may take before the bench gives up
# The longest pause between two looks at Redis or the table: the time a round is seen to
# end late, which the RQ figure alone pays (the in-process round has ended at the first look).
POLL_MAX = 0.001


def constant() -> int:
    """The trivial job: RQ's own cost per job, for reference."""
    return 1


def purge_queue(queue: Queue) -> None:
    """Delete the queue, its registries and every job it ever held (bench and test queues)."""
    registries = [queue.started_job_registry, queue.finished_job_registry,
                  queue.failed_job_registry, queue.deferred_job_registry,
                  queue.scheduled_job_registry, queue.canceled_job_registry]
    ids = set(queue.get_job_ids())
    for registry in registries:
        ids.update(registry.get_job_ids(cleanup=False))
    for job_id in ids:
        job = queue.fetch_job(job_id)
        if job is not None:
            forget(job, remove_from_queue=False)
    queue.delete(delete_jobs=True)
    conn = queue.connection
    # Ended workers leave their record for a minute, no longer in any worker set.
    for key in conn.scan_iter(match=SimpleWorker.redis_worker_namespace_prefix + "*", count=500):
        if conn.type(key) != b"hash":
            continue  # a worker's set of executions: it expires with the worker
        queues, death = conn.hmget(key, "queues", "death")
        names = queues.decode() if isinstance(queues, bytes) else str(queues or "")
        if death and queue.name in names.split(","):
            conn.delete(key)
    # Registry, execution and worker-set keys carry the (unique) queue name.
    for key in conn.scan_iter(match=f"rq:*{queue.name}*", count=500):
        conn.delete(key)


def _seeds(seed: int) -> Callable[[], bytes]:
    rng = random.Random(seed)
    return lambda: rng.randbytes(32)


def _tables(ledger: Ledger, count: int) -> list[str]:
    seats = tuple((f"Bot {i}", "heuristic") for i in range(4))
    # auto_deal off: every hand, the first included, starts with the timed StartHand.
    cmd = c.CreateTable(variant="loo", scoring="pool", seats=seats, first_dealer=0,
                        deal="shuffled", options={"auto_deal": False})
    return [ledger.create_table(cmd)[0] for _ in range(count)]


def _all_settled(ledger: Ledger, tables: list[str], number: int) -> bool:
    for table_id in tables:
        t = ledger.load(table_id).table
        if t.hand is None or t.hand.number != number or not t.settled:
            return False
    return True


def _play(ledger: Ledger, tables: list[str], rounds: int,
          jobs: Callable[[dict[str, int]], None] | None = None) -> float:
    """Start a hand at every table, wait until all are settled; returns the seconds taken.

    `jobs` waits for the RQ jobs of the round first: it watches their status in Redis, so
    the driver does not compete with the worker for PostgreSQL while it waits.
    """
    start = time.perf_counter()
    for number in range(1, rounds + 1):
        versions = {t: ledger.execute(t, c.StartHand()).projection.version for t in tables}
        if jobs is not None:
            jobs(versions)
        _until(partial(_all_settled, ledger, tables, number), f"hand {number} settled")
    return time.perf_counter() - start


def _until(done: Callable[[], bool], what: str, alive: Callable[[], None] = lambda: None,
           ) -> None:
    deadline = time.monotonic() + HAND_TIMEOUT
    delay = 0.0005
    while not done():
        alive()
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {HAND_TIMEOUT}s")
        time.sleep(delay)
        delay = min(delay * 2, POLL_MAX)


def _job_waiter(queue: Queue, alive: Callable[[], None]) -> Callable[[dict[str, int]], None]:
    """Waits until the `advance` job of each (table, version) has ended."""
    ended = {JobStatus.FINISHED.value, JobStatus.FAILED.value}

    def wait(versions: dict[str, int]) -> None:
        keys = [Job.key_for(rq_job_id(f"advance:{t}:{v}")) for t, v in versions.items()]

        def done() -> bool:
            with queue.connection.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.hget(key, "status")
                return all(s is not None and s.decode() in ended for s in pipe.execute())

        _until(done, "the round's jobs", alive)

    return wait


def _start_worker(database_url: str, redis_url: str, queue: Queue) -> subprocess.Popen[bytes]:
    loo = os.path.join(os.path.dirname(sys.executable), "loo")
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url,
           "LOO_QUEUE_PREFIX": queue.name, "LOO_LOG_LEVEL": "WARNING"}
    # A session of its own, so that _stop can also reap rq's scheduler child.
    proc = subprocess.Popen([loo, "worker", "--reconcile-every", "0"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)
    # Ready once it has registered on the queue (its start-up is not part of the figure).
    deadline = time.monotonic() + 20
    while not any(queue.name in w.queue_names() for w in SimpleWorker.all(queue=queue)):
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc)
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise RuntimeError(f"`loo worker` did not start: {err.strip()[-500:]}")
        time.sleep(0.02)
    return proc


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # rq's warm shutdown
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # anything the worker left behind
    except ProcessLookupError:
        pass


def trivial_jobs_per_second(redis_url: str, count: int) -> float:
    """A burst SimpleWorker draining `count` jobs that return a constant."""
    queue = make_queue(redis_url, f"loo-bench-trivial-{uuid.uuid4().hex[:12]}")
    handlers: dict[int, Any] = {}
    try:
        with queue.connection.pipeline() as pipe:
            for _ in range(count):
                queue.enqueue(constant, pipeline=pipe)
            pipe.execute()
        handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
        start = time.perf_counter()
        SimpleWorker([queue], connection=queue.connection,
                     serializer=queue.serializer).work(burst=True, logging_level="WARNING")
        return count / (time.perf_counter() - start)
    finally:
        for sig, handler in handlers.items():  # rq installed its own: give Ctrl-C back
            signal.signal(sig, handler)
        purge_queue(queue)
        queue.connection.close()


@dataclass
class RqScratch:
    """A scratch PostgreSQL schema and RQ queue for a bench, and the workers it started."""

    store: EventStore
    queue: Queue
    url: str  # the database URL inside the scratch schema
    redis_url: str
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start_worker(self) -> subprocess.Popen[bytes]:
        proc = _start_worker(self.url, self.redis_url, self.queue)
        self.workers.append(proc)
        return proc


@contextmanager
def rq_scratch(database_url: str, redis_url: str, name: str) -> Iterator[RqScratch]:
    """A fresh schema and queue, so no run is slowed by the tables of earlier ones; the
    workers started, the queue and the schema are all gone at the end."""
    schema = f"loo_bench_{name}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}".encode())
    url = in_schema(database_url, schema)
    store: EventStore = open_database(Settings(database_url=url))
    queue = make_queue(redis_url, f"loo-bench-{name}-{uuid.uuid4().hex[:12]}")
    scratch = RqScratch(store, queue, url, redis_url)
    try:
        yield scratch
    finally:
        for proc in scratch.workers:
            _stop(proc)
        purge_queue(queue)
        queue.connection.close()
        store.close()
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE".encode())


def run(database_url: str, redis_url: str, hands: int = 40, out: Out = print) -> None:
    """Measure and print; ends with `ratio workers_vs_inprocess VALUE target 0.5`."""
    rounds = max(1, hands // TABLES)
    played = rounds * TABLES
    with rq_scratch(database_url, redis_url, "workers") as scratch:
        store, queue = scratch.store, scratch.queue
        inline = InlineDispatcher()
        local = Ledger(store, inline, seeds=_seeds(1))
        inline.bind(ledger=local)
        local_s = _play(local, _tables(local, TABLES), rounds)

        remote = Ledger(store, RqDispatcher(queue), seeds=_seeds(1))
        tables = _tables(remote, TABLES)
        proc = scratch.start_worker()

        def alive() -> None:
            if proc.poll() is not None:
                raise RuntimeError(f"`loo worker` exited with status {proc.returncode}")

        rq_s = _play(remote, tables, rounds, _job_waiter(queue, alive))
        _stop(proc)
        trivial = trivial_jobs_per_second(redis_url, max(20, played * TRIVIAL_JOBS_PER_HAND))
    local_hpm, rq_hpm = played * 60 / local_s, played * 60 / rq_s
    out(f"in-process (embedded default): {played} hands on {TABLES} all-bot tables in "
        f"{local_s:.2f} s = {local_hpm:,.0f} hands/min")
    out(f"RQ, one `loo worker` (SimpleWorker): {played} hands in {rq_s:.2f} s = "
        f"{rq_hpm:,.0f} hands/min")
    out(f"trivial RQ jobs (return a constant), burst SimpleWorker: {trivial:,.0f} jobs/s")
    out(f"info rq_seconds_per_hand {rq_s / played * 1000:.1f} ms; "
        f"in-process {local_s / played * 1000:.1f} ms")
    out(f"ratio workers_vs_inprocess {rq_hpm / local_hpm:.2f} target 0.5")
