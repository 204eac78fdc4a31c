"""Queue setup: how follow-up jobs leave a command, to RQ or run in-process (embedded default)."""

from __future__ import annotations

import heapq
import importlib
import itertools
import logging
import math
import os
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import redis
from rq import Queue, Retry
from rq.exceptions import DuplicateJobError, NoSuchJobError
from rq.job import Job, JobStatus
from rq.registry import ScheduledJobRegistry
from rq.serializers import JSONSerializer
from rq.utils import as_text, now
from rq.worker import Worker

from ledger.app.dispatch import Mode

log = logging.getLogger(__name__)

# rq 3 accepts only letters, digits, "_" and "-" in a job id.
_JOB_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
# A job that ended may run again under the same id (reconcile re-enqueues waiting tables).
_ENDED = {JobStatus.FINISHED, JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED}
RETRY_MAX, RETRY_INTERVALS = 3, [1, 5, 15]  # seconds before each retry
DEFAULT_JOB_TIMEOUT = 180  # rq's default; past it (+ a margin) a started job is dead for sure
SCHEDULED_GRACE = 30  # seconds past its time after which a scheduled retry has no scheduler
DEQUEUE_GRACE = 1.0  # seconds a live worker may hold a job it dequeued before starting it


def resolve(func_path: str) -> Any:
    """`"workers.jobs.advance"` -> the function (jobs are importable by path, STYLE.md #6)."""
    module, _, name = func_path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def rq_job_id(job_id: str) -> str:
    """The ledger's job id made acceptable to rq (same input, same id)."""
    return _JOB_ID_UNSAFE.sub("_", job_id)


def make_queue(redis_url: str, name: str, *, socket_timeout: float = 5.0) -> Queue:
    """The project's RQ queue; JSON-serialised, so jobs carry only primitive arguments."""
    conn = redis.Redis.from_url(redis_url, socket_connect_timeout=socket_timeout,
                                socket_timeout=socket_timeout)
    return Queue(name, connection=conn, serializer=JSONSerializer)


class InlineDispatcher:
    """Runs each job in the calling thread right after the command committed.

    Its mode "inline" tells the ledger so: it then decides what the job would append (the
    settlement, an auto-dealt hand, bot turns) before the command commits and appends it
    in the command's own transaction, so the job usually finds nothing left to do.

    A job that enqueues another (a long bot run) does not recurse: the new job waits in
    this thread's backlog until the running one returns. A failing job is logged, not
    raised: its command has committed, and `loo worker --reconcile-every` or the next
    write picks the table up again.
    """

    mode: Mode = "inline"

    def __init__(self, **inject: Any) -> None:
        self.inject = dict(inject)
        self._local = threading.local()

    def bind(self, **inject: Any) -> None:
        """Keyword arguments given to every job (the ledger, which is built after us)."""
        self.inject.update(inject)

    def enqueue(self, func_path: str, *args: Any, job_id: str) -> None:
        from ledger.metrics import JOBS_INLINE

        local = self._local
        if not hasattr(local, "backlog"):
            local.backlog, local.ids, local.running = deque(), set(), False
        if job_id in local.ids:
            return  # the same job is already waiting here
        local.backlog.append((func_path, args, job_id))
        local.ids.add(job_id)
        if local.running:
            return
        local.running = True
        try:
            while local.backlog:
                path, job_args, jid = local.backlog.popleft()
                local.ids.discard(jid)
                try:
                    resolve(path)(*job_args, **self.inject)
                except Exception:
                    log.exception("in-process job %s failed", jid)
                    JOBS_INLINE.labels("failed").inc()
                else:
                    JOBS_INLINE.labels("finished").inc()
        finally:
            local.running = False

    def schedule(self, func_path: str, *args: Any, at: float, job_id: str) -> None:
        """Run the job at Unix time `at`, on this process's one timer thread."""
        timers = self._timers
        if timers is None:
            with _TIMERS_LOCK:
                if self._timers is None:
                    self._timers = Timers(self._run_later)
                timers = self._timers
        timers.add(at, job_id, func_path, args)

    _timers: Timers | None = None

    def _run_later(self, func_path: str, args: tuple[Any, ...], job_id: str) -> None:
        """A due timer: the job runs in the timer thread, and what it enqueues there too."""
        self.enqueue(func_path, *args, job_id=job_id)

    def pending(self) -> list[tuple[float, str]]:
        """(Unix time, job id) of the timers waiting in this process, soonest first."""
        return [] if self._timers is None else self._timers.pending()

    def close(self) -> None:
        if self._timers is not None:
            self._timers.stop()

    def ping(self) -> dict[str, Any]:
        return {"backend": "inline"}


_TIMERS_LOCK = threading.Lock()


class Timers:
    """One daemon thread and a heap of (time, job): the embedded default's scheduler.

    A job id already waiting is not added twice. The thread sleeps until the soonest timer
    (or until one sooner is added), runs what is due and goes back to sleep. Times are Unix
    seconds (time.time), as the ledger computes them from recorded_at.
    """

    def __init__(self, run: Callable[[str, tuple[Any, ...], str], None],
                 clock: Callable[[], float] = time.time) -> None:
        self._run, self._clock = run, clock
        self._heap: list[tuple[float, int, str, str, tuple[Any, ...]]] = []
        self._ids: set[str] = set()
        self._seq = itertools.count()
        self._cond = threading.Condition()
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name="loo-timers", daemon=True)
        self._thread.start()

    def add(self, at: float, job_id: str, func_path: str, args: tuple[Any, ...]) -> None:
        with self._cond:
            if job_id in self._ids:
                return
            self._ids.add(job_id)
            heapq.heappush(self._heap, (at, next(self._seq), job_id, func_path, args))
            self._cond.notify()

    def pending(self) -> list[tuple[float, str]]:
        with self._cond:
            return sorted((at, jid) for at, _n, jid, _f, _a in self._heap)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._stopped:
                    wait = self._heap[0][0] - self._clock() if self._heap else None
                    if wait is not None and wait <= 0:
                        break
                    self._cond.wait(timeout=wait)
                if self._stopped:
                    return
                _at, _n, job_id, func_path, args = heapq.heappop(self._heap)
                self._ids.discard(job_id)
            try:
                self._run(func_path, args, job_id)
            except Exception:  # a timer thread must outlive a failing job
                log.exception("timer job %s failed", job_id)


def abandoned(job: Job) -> bool:
    """A "started" job whose worker is gone (killed mid-job), a retry no scheduler will
    enqueue (see _overdue), or a "queued" job a dead worker had taken off the queue (see
    _dequeued_by_the_dead): it will never end by itself.

    rq fails such a job only when its started-registry entry expires (job timeout + 60 s)
    and a maintenance pass notices, many minutes later; until then the reconciler could not
    re-enqueue the table's job under the same id. Running it again is safe: the expected
    version decides, so a worker that was alive after all only finds its job stale.
    """
    status = job.get_status(refresh=False)
    if status == JobStatus.SCHEDULED:
        return _overdue(job)
    if status == JobStatus.QUEUED:
        return _dequeued_by_the_dead(job)
    if status != JobStatus.STARTED:
        return False
    started = job.started_at
    timeout = job.timeout if job.timeout and job.timeout > 0 else DEFAULT_JOB_TIMEOUT
    if started is not None and (now() - started).total_seconds() > timeout + 60:
        return True  # the death penalty would have ended it by now
    if not job.worker_name:
        return False
    worker = Worker.find_by_key(Worker.redis_worker_namespace_prefix + job.worker_name,
                                connection=job.connection)
    if worker is None:
        return True  # its registration expired: no heartbeat for worker_ttl seconds
    return worker.hostname == socket.gethostname() and not _pid_alive(worker.pid,
                                                                      worker.birth_date)


def _dequeued_by_the_dead(job: Job) -> bool:
    """A queued job that a worker took off the queue and died with before starting it.

    rq's dequeue moves the job into the queue's intermediate list (BLMOVE), and the job
    leaves it when it starts. A worker killed in between (or while blocked in BLMOVE, when
    the job arrives before Redis has noticed the closed connection) leaves it there,
    "queued" but in no queue: rq's maintenance fails it only after 10 minutes or more. A
    live worker starts it within milliseconds, so one still there after DEQUEUE_GRACE is lost.
    """
    queue = Queue(job.origin, connection=job.connection, serializer=job.serializer)
    deadline = time.monotonic() + DEQUEUE_GRACE
    while True:
        dequeued = job.connection.lrange(queue.intermediate_queue_key, 0, -1)
        if job.id not in {as_text(x) for x in dequeued}:
            return False  # waiting in the queue, or started
        if job.id in queue.started_job_registry:
            return False
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.05)


def _overdue(job: Job) -> bool:
    """A scheduled job (a retry) well past its time: no scheduler is enqueueing it.

    Only the worker holding the queue's scheduler lock moves due jobs (every second). If it
    is killed, its lock outlives it and the other workers claim the lock only at their next
    maintenance, every 10 minutes; until then the retry would wait, and its table with it.
    """
    registry = ScheduledJobRegistry(job.origin, connection=job.connection,
                                    serializer=job.serializer)
    try:
        due = registry.get_scheduled_time(job)
    except NoSuchJobError:
        return False  # being enqueued by the scheduler right now
    return (now() - due).total_seconds() > SCHEDULED_GRACE


def _pid_alive(pid: int | None, born: datetime | None = None) -> bool:
    """Whether the process `pid`, registered as a worker born at `born`, still runs.

    A pid outlives its process as a zombie (a parent that never waits), and is reused: a
    restarted container runs its new `loo worker` as pid 1 again. Neither is the worker.
    """
    if not pid:
        return True  # unknown: assume alive
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    state, started = _proc_stat(pid)
    if state == "Z":
        return False
    if started is not None and born is not None:
        # The worker registers after its process starts; a process started well after the
        # registration holds a reused pid (margin: /proc/stat's btime is in whole seconds).
        if born.tzinfo is None:
            born = born.replace(tzinfo=UTC)  # rq keeps UTC
        return started <= born.timestamp() + _PID_REUSE_MARGIN
    return True


_PID_REUSE_MARGIN = 2.0  # seconds


def _proc_stat(pid: int) -> tuple[str | None, float | None]:
    """(state, start time as a Unix timestamp) of a process, from /proc (Linux only)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # after "pid (comm)": field 3 on
        with open("/proc/stat", encoding="ascii") as f:
            btime = next(int(line.split()[1]) for line in f if line.startswith("btime "))
        ticks = int(fields[19])  # field 22, starttime: clock ticks after boot
        return fields[0], btime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, StopIteration, ValueError):
        return None, None


def _meta() -> dict[str, Any] | None:
    """The request that caused the job: its log lines carry the same id (workers/jobs.py)."""
    from ledger.observe import request_id

    rid = request_id()
    return {"request_id": rid} if rid is not None else None


class RqDispatcher:
    """Enqueues to RQ with a deterministic job id: a duplicate of a live job is a no-op."""

    mode: Mode = "queued"  # a worker runs the job later: callers must not wait for its events

    def __init__(self, queue: Queue) -> None:
        self.queue = queue

    def enqueue(self, func_path: str, *args: Any, job_id: str) -> None:
        """Enqueue after a commit; a queue that cannot be reached is logged, not raised.

        The command has committed: raising would answer an error for a move that was
        recorded (and lose a new table's tokens, shown only in that answer). The table
        then waits as after a crash between commit and enqueue, until the reconciler of
        `loo worker` enqueues its job again.
        """
        try:
            self._enqueue_once(func_path, args, rq_job_id(job_id))
        except redis.RedisError as err:
            log.error("job %s not enqueued (%s): the reconciler will enqueue it", job_id, err)

    def _enqueue_once(self, func_path: str, args: tuple[Any, ...], jid: str) -> None:
        for _ in range(2):
            try:
                self._enqueue(func_path, args, jid)
                return
            except DuplicateJobError:
                job = self.queue.fetch_job(jid)
                if job is not None and job.get_status(refresh=False) not in _ENDED:
                    if not abandoned(job):
                        return  # queued, scheduled for a retry, or running
                    log.warning("job %s: abandoned (%s, worker %s); enqueued again", jid,
                                job.get_status(refresh=False), job.worker_name)
                if job is not None:
                    job.delete(remove_from_queue=True)
                    # A dead worker's dequeued job: rq must not fail the new one for it later.
                    self.queue.connection.lrem(self.queue.intermediate_queue_key, 0, jid)
        log.warning("job %s: could not replace its ended predecessor", jid)

    def _enqueue(self, func_path: str, args: tuple[Any, ...], jid: str) -> None:
        from ledger.metrics import JOBS_ENQUEUED

        self.queue.enqueue(func_path, *args, job_id=jid, unique=True,
                           retry=Retry(max=RETRY_MAX, interval=RETRY_INTERVALS),
                           description=f"{func_path}{args!r}", meta=_meta())
        JOBS_ENQUEUED.labels("rq").inc()

    def schedule(self, func_path: str, *args: Any, at: float, job_id: str) -> None:
        """Enqueue at Unix time `at` through rq's scheduler (`loo worker` runs it); the id
        is deterministic, so scheduling twice is one job. A scheduled job well past its time
        (no scheduler is moving it: its worker died holding the scheduler lock) is enqueued
        now instead. An unreachable Redis is logged: the reconciler schedules it again."""
        jid = rq_job_id(job_id)
        try:
            job = self.queue.fetch_job(jid)
            if job is not None:
                status = job.get_status(refresh=False)
                if status == JobStatus.SCHEDULED and _overdue(job):
                    log.warning("timer %s: overdue, no scheduler moved it; enqueued now", jid)
                    job.delete(remove_from_queue=True)
                elif status not in _ENDED and not abandoned(job):
                    return  # scheduled, queued or running
                else:
                    job.delete(remove_from_queue=True)
            retry = Retry(max=RETRY_MAX, interval=RETRY_INTERVALS)
            if at <= time.time():  # already due (a timer recovered late): no scheduler needed
                self.queue.enqueue(func_path, *args, job_id=jid, retry=retry,
                                   description=f"{func_path}{args!r}", meta=_meta())
                return
            # rq keeps whole seconds (it would truncate): round up, never early.
            self.queue.enqueue_at(datetime.fromtimestamp(math.ceil(at), UTC), func_path, *args,
                                  job_id=jid, retry=retry, description=f"{func_path}{args!r}",
                                  meta=_meta())
        except redis.RedisError as err:
            log.error("timer %s not scheduled (%s): the reconciler will schedule it", job_id,
                      err)

    def ping(self) -> dict[str, Any]:
        self.queue.connection.ping()
        return {"backend": "rq", "queue": self.queue.name, "queued": self.queue.count}
