"""`loo bench workers`: all-bot hands/minute through RQ against in-process, against RQ's
own floor, and with 1, 2 and 4 workers.

The same 4-bot tables (same seeds, so the same games) are played twice on one
database: once with the embedded default and once with the jobs going through Redis to
a single `loo worker` process. One job plays every consecutive bot turn and the
settlement in one append, so a hand costs one RQ job and two commits (POST /hands, the
job); the embedded default decides the same moves before POST /hands commits: one commit,
no queue. The floor is what RQ alone would cost for the same number of jobs (a burst
SimpleWorker draining as many trivial jobs) plus the in-process time of the same hands:
`workers_vs_rq_floor` = floor / the RQ run's time, 1.0 meaning the worker adds nothing of
its own. Then 1, 2 and 4 `loo worker` processes play auto-dealing all-bot tables to their
end while the bench only watches Redis; `workers_scaling_2` is two workers' hands/min
over one's, and each run says how many cores its workers kept busy.
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
TRIVIAL_JOBS_PER_HAND = 5  # 800 trivial jobs for the default 160 hands
SCALE_TABLES = 8  # auto-dealing tables of the 1/2/4-worker runs
SCALE_FACTOR = 12  # those runs play 12 times the hands asked for, over the tables
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
           timeout: float = HAND_TIMEOUT, poll: float = POLL_MAX) -> None:
    deadline = time.monotonic() + timeout
    delay = 0.0005
    while not done():
        alive()
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not within {timeout}s")
        time.sleep(delay)
        delay = min(delay * 2, poll)


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
    return count / trivial_jobs_seconds(redis_url, count)


def trivial_jobs_seconds(redis_url: str, count: int) -> float:
    """Seconds a burst SimpleWorker takes to drain `count` jobs that return a constant:
    RQ's own cost for that many jobs (enqueue excluded: the API pays it, not a worker)."""
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
        return time.perf_counter() - start
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


def _scale_tables(ledger: Ledger, count: int, hands: int) -> list[str]:
    """All-bot tables that deal and play `hands` hands by themselves, through the jobs."""
    seats = tuple((f"Bot {i}", "heuristic") for i in range(4))
    cmd = c.CreateTable(variant="loo", scoring="pool", seats=seats, first_dealer=0,
                        deal="shuffled", options={"auto_deal": True, "max_hands": hands})
    return [ledger.create_table(cmd)[0] for _ in range(count)]


def _queue_idle(queue: Queue) -> bool:
    """Nothing queued, dequeued or started (a job enqueues its successor before it ends)."""
    with queue.connection.pipeline(transaction=False) as pipe:
        pipe.llen(queue.key)
        pipe.llen(queue.intermediate_queue_key)
        pipe.zcard(queue.started_job_registry.key)
        return not any(pipe.execute())


def _closed(store: EventStore, table_id: str) -> bool:
    """The table's last event closed it: two index probes, where folding the table (as
    `Ledger.load` does) would replay every hand it played. Inside the timed window the
    bench shares the cores with the workers; folding the 8 tables' ~20,000 events at the
    end took it ~0.5 s of CPU (1 ms per hand, a quarter of the 1-worker run's wall time)."""
    last = store.load(table_id, after_version=store.version(table_id) - 1)
    return bool(last) and last[-1].type == "table_closed"


def _job_seconds(queue: Queue) -> float:
    """Seconds the queue's finished jobs ran, by rq's own started and ended times."""
    ids = queue.finished_job_registry.get_job_ids()
    jobs = Job.fetch_many(ids, connection=queue.connection, serializer=queue.serializer)
    return sum((j.ended_at - j.started_at).total_seconds() for j in jobs
               if j is not None and j.started_at and j.ended_at)


@dataclass
class Scaled:
    workers: int
    hands: int
    seconds: float
    cpu: float  # CPU seconds the worker processes used (user + system) while they played
    machine: float  # CPU seconds the whole machine used meanwhile (PostgreSQL included)

    @property
    def hands_per_min(self) -> float:
        return self.hands * 60 / self.seconds


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far, from /proc (Linux)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def _machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine so far, from /proc/stat (Linux)."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            ticks = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return float("nan"), float("nan")
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    hz = os.sysconf("SC_CLK_TCK")
    return (sum(ticks) - idle) / hz, sum(ticks) / hz


def scaled_run(scratch: RqScratch, workers: int, tables: int, hands: int, seed: int) -> Scaled:
    """`workers` `loo worker` processes play `tables` auto-dealing all-bot tables of
    `hands` hands each to their end; the bench process only watches Redis meanwhile."""
    ledger = Ledger(scratch.store, RqDispatcher(scratch.queue), seeds=_seeds(seed))
    procs = [scratch.start_worker() for _ in range(workers)]
    cpu_before = sum(_proc_cpu(p.pid) for p in procs)  # their start-up is not counted
    machine_before = _machine_busy()[0]

    def alive() -> None:
        for proc in procs:
            if proc.poll() is not None:
                raise RuntimeError(f"`loo worker` exited with status {proc.returncode}")

    start = time.perf_counter()
    ids = _scale_tables(ledger, tables, hands)

    def done() -> bool:
        return _queue_idle(scratch.queue) and all(_closed(scratch.store, t) for t in ids)

    _until(done, f"{tables} tables played by {workers} worker(s)", alive,
           timeout=HAND_TIMEOUT * hands, poll=0.005)
    seconds = time.perf_counter() - start
    cpu = sum(_proc_cpu(p.pid) for p in procs) - cpu_before
    machine = _machine_busy()[0] - machine_before
    for proc in procs:
        _stop(proc)
        scratch.workers.remove(proc)
    return Scaled(workers, tables * hands, seconds, cpu, machine)


def run(database_url: str, redis_url: str, hands: int = 160, out: Out = print) -> None:
    """Measure and print; ends with the ratios `workers_vs_inprocess` (target 0.5),
    `workers_vs_rq_floor` (target 0.8) and `workers_scaling_2` (target 1.5)."""
    rounds = max(1, hands // TABLES)
    played = rounds * TABLES
    scale_tables = SCALE_TABLES
    scale_hands = max(1, (hands * SCALE_FACTOR) // scale_tables)
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
        scratch.workers.remove(proc)
        jobs = queue.finished_job_registry.count + queue.failed_job_registry.count
        ran = _job_seconds(queue)
        # RQ's cost per job from a larger sample (the worker's start-up amortised), times
        # the jobs the RQ run ran.
        trivial = trivial_jobs_per_second(redis_url, max(20, played * TRIVIAL_JOBS_PER_HAND))
        trivial_s = jobs / trivial
        scaled = [scaled_run(scratch, k, scale_tables, scale_hands, seed=10 + k)
                  for k in (1, 2, 4)]
    local_hpm, rq_hpm = played * 60 / local_s, played * 60 / rq_s
    floor_s = trivial_s + local_s
    out(f"in-process (embedded default): {played} hands on {TABLES} all-bot tables in "
        f"{local_s:.2f} s = {local_hpm:,.0f} hands/min")
    out(f"RQ, one `loo worker`: {played} hands ({jobs} jobs) in {rq_s:.2f} s = "
        f"{rq_hpm:,.0f} hands/min")
    out(f"trivial RQ jobs (return a constant), burst SimpleWorker: {trivial:,.0f} jobs/s, "
        f"so {jobs} of them {trivial_s * 1000:.0f} ms")
    out(f"info rq_seconds_per_hand {rq_s / played * 1000:.1f} ms; "
        f"in-process {local_s / played * 1000:.1f} ms")
    out(f"info the jobs ran {ran:.2f} s of the RQ run's {rq_s:.2f} s (rq's started..ended "
        "times); the rest is the driver's POST /hands commits, which the in-process run "
        "folds into one commit with the bots' moves, and the queue's hand-overs")
    out(f"floor: RQ's own cost for {jobs} trivial jobs + the in-process hands = "
        f"{trivial_s:.2f} + {local_s:.2f} = {floor_s:.2f} s, against {rq_s:.2f} s")
    cpus = os.cpu_count() or 1
    for r in scaled:
        out(f"throughput workers={r.workers}: {r.hands} hands ({scale_tables} auto-dealing "
            f"all-bot tables) in {r.seconds:.2f} s = {r.hands_per_min:,.0f} hands/min; the "
            f"workers kept {r.cpu / r.seconds:.2f} of the {cpus} cores busy "
            f"({r.cpu / r.hands * 1000:.2f} ms CPU per hand), the machine "
            f"{r.machine / r.seconds:.2f} (PostgreSQL, the bench, other processes)")
    one, two, four = scaled
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    busy, machine = four.cpu / four.seconds, four.machine / four.seconds
    if machine >= 0.85 * cpus:
        bound = (f"the machine's {cpus} cores: with 4 workers they were {machine:.2f} busy, "
                 f"{busy:.2f} of it the workers' and the rest PostgreSQL's appends, the bench "
                 "and other processes; past that, more workers only share the same cores")
    else:
        bound = (f"waiting, not CPU: with 4 workers the machine was only {machine:.2f} of "
                 f"{cpus} cores busy (the workers {busy:.2f}); each job waits on its "
                 f"PostgreSQL and Redis round trips (load average {load:.1f})")
    out(f"info workers_scaling_4 {four.hands_per_min / one.hands_per_min:.2f}: bounded by "
        f"{bound}")
    out(f"ratio workers_vs_inprocess {rq_hpm / local_hpm:.2f} target 0.5")
    out(f"ratio workers_vs_rq_floor {floor_s / rq_s:.2f} target 0.8")
    out(f"ratio workers_scaling_2 {two.hands_per_min / one.hands_per_min:.2f} target 1.5")
