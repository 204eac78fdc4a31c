"""`loo bench workers`: all-bot hands/minute through RQ with one worker vs in-process.

The same 4-bot tables (same seeds, so the same games) are played twice on one
database: once with the embedded default (jobs run in the calling thread) and once
with the jobs going through Redis to a single `loo worker` process. One job plays
every consecutive bot turn and the settlement, so a hand costs one RQ round trip.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable

from rq import Queue, SimpleWorker

from ledger import commands as c
from ledger.bootstrap import Settings, open_database
from ledger.service import Ledger
from ledger.store.base import EventStore
from workers.queue import InlineDispatcher, RqDispatcher, make_queue

Out = Callable[[str], None]
TABLES = 4
TRIVIAL_JOBS = 300
HAND_TIMEOUT = 30.0  # seconds a round of hands may take before the bench gives up


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
            job.delete(remove_from_queue=False)
    queue.delete(delete_jobs=True)
    conn = queue.connection
    # Registry and execution keys carry the (unique) queue name.
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


def _settled(ledger: Ledger, table_id: str, number: int) -> bool:
    t = ledger.load(table_id).table
    return t.hand is not None and t.hand.number == number and t.settled


def _play(ledger: Ledger, tables: list[str], rounds: int,
          alive: Callable[[], None] = lambda: None) -> float:
    """Start a hand at every table, wait until all are settled; returns the seconds taken."""
    start = time.perf_counter()
    for number in range(1, rounds + 1):
        for table_id in tables:
            ledger.execute(table_id, c.StartHand())
        deadline = time.monotonic() + HAND_TIMEOUT
        pending = list(tables)
        delay = 0.001
        while pending:
            pending = [t for t in pending if not _settled(ledger, t, number)]
            if not pending:
                break
            alive()
            if time.monotonic() > deadline:
                raise RuntimeError(f"hand {number} not settled within {HAND_TIMEOUT}s")
            time.sleep(delay)
            delay = min(delay * 2, 0.01)
    return time.perf_counter() - start


def _start_worker(database_url: str, redis_url: str, queue: Queue) -> subprocess.Popen[bytes]:
    loo = os.path.join(os.path.dirname(sys.executable), "loo")
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url,
           "LOO_QUEUE_PREFIX": queue.name, "LOO_LOG_LEVEL": "WARNING"}
    proc = subprocess.Popen([loo, "worker", "--reconcile-every", "0"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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


def trivial_jobs_per_second(redis_url: str, count: int = TRIVIAL_JOBS) -> float:
    """A burst SimpleWorker draining `count` jobs that return a constant."""
    queue = make_queue(redis_url, f"loo-bench-trivial-{uuid.uuid4().hex[:12]}")
    try:
        with queue.connection.pipeline() as pipe:
            for _ in range(count):
                queue.enqueue(constant, pipeline=pipe)
            pipe.execute()
        start = time.perf_counter()
        SimpleWorker([queue], connection=queue.connection,
                     serializer=queue.serializer).work(burst=True, logging_level="WARNING")
        return count / (time.perf_counter() - start)
    finally:
        purge_queue(queue)
        queue.connection.close()


def run(database_url: str, redis_url: str, hands: int = 40, out: Out = print) -> None:
    """Measure and print; ends with `ratio workers_vs_inprocess VALUE target 0.5`."""
    rounds = max(1, hands // TABLES)
    played = rounds * TABLES
    store: EventStore = open_database(Settings(database_url=database_url))
    queue = make_queue(redis_url, f"loo-bench-{uuid.uuid4().hex[:12]}")
    proc: subprocess.Popen[bytes] | None = None
    try:
        inline = InlineDispatcher()
        local = Ledger(store, inline, seeds=_seeds(1))
        inline.bind(ledger=local)
        local_s = _play(local, _tables(local, TABLES), rounds)

        remote = Ledger(store, RqDispatcher(queue), seeds=_seeds(1))
        tables = _tables(remote, TABLES)
        proc = _start_worker(database_url, redis_url, queue)

        def alive() -> None:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"`loo worker` exited with status {proc.returncode}")

        rq_s = _play(remote, tables, rounds, alive)
        _stop(proc)
        trivial = trivial_jobs_per_second(redis_url)
    finally:
        if proc is not None:
            _stop(proc)
        purge_queue(queue)
        queue.connection.close()
        store.close()
    local_hpm, rq_hpm = played * 60 / local_s, played * 60 / rq_s
    out(f"in-process (embedded default): {played} hands on {TABLES} all-bot tables in "
        f"{local_s:.2f} s = {local_hpm:,.0f} hands/min")
    out(f"RQ, one `loo worker` (SimpleWorker): {played} hands in {rq_s:.2f} s = "
        f"{rq_hpm:,.0f} hands/min")
    out(f"trivial RQ jobs (return a constant), burst SimpleWorker: {trivial:,.0f} jobs/s")
    out(f"info rq_seconds_per_hand {rq_s / played * 1000:.1f} ms; "
        f"in-process {local_s / played * 1000:.1f} ms")
    out(f"ratio workers_vs_inprocess {rq_hpm / local_hpm:.2f} target 0.5")
