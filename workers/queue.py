"""Queue setup: how follow-up jobs leave a command, to RQ or run in-process (embedded default)."""

from __future__ import annotations

import heapq
import importlib
import itertools
import logging
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import redis
from rq import Queue, Retry
from rq.exceptions import DuplicateJobError
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from ledger.app.dispatch import Mode

log = logging.getLogger(__name__)

# rq 3 accepts only letters, digits, "_" and "-" in a job id.
_JOB_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
# A job that ended may run again under the same id (reconcile re-enqueues waiting tables).
_ENDED = {JobStatus.FINISHED, JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED}
# Seconds before each retry. The first is 0: RQ then enqueues the retry of a job whose
# worker died at once, without waiting for a scheduler (the dead worker may have held the
# scheduler's lock).
RETRY_MAX, RETRY_INTERVALS = 3, [0, 5, 15]
# A scheduled job's meta key for its exact Unix time (rq's scheduled registry keeps whole
# seconds).
DUE = "due"


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


def _meta() -> dict[str, Any] | None:
    """The request that caused the job: its log lines carry the same id (workers/jobs.py)."""
    from ledger.observe import request_id

    rid = request_id()
    return {"request_id": rid} if rid is not None else None


class RqDispatcher:
    """Enqueues to RQ with a deterministic job id: a duplicate of a live job is a no-op.

    A job is live while RQ holds it queued, scheduled (a retry, a timer) or started. A
    started job whose worker died is RQ's to retry: the worker's heartbeat keeps the job's
    execution in the started registry, and once it stops, the registry's cleanup (run by
    every `loo worker`, see workers/worker.py) retries the job; no pid or host is looked at.
    """

    mode: Mode = "queued"  # a worker runs the job later: callers must not wait for its events

    def __init__(self, queue: Queue) -> None:
        self.queue = queue
        # Called with (func_path, args, job_id) of a job Redis could not be reached for: an
        # API process hands it over again once Redis answers (workers/reconcile.py,
        # Redelivery), `loo worker` reconciles then.
        self.on_unreachable: Callable[[str, tuple[Any, ...], str], None] = (
            lambda *_: None)
        self.on_close: Callable[[], None] = lambda: None

    def enqueue(self, func_path: str, *args: Any, job_id: str) -> bool:
        """Enqueue after a commit; True if a job was enqueued now, False if the same job was
        still live (or Redis could not be reached: logged, not raised).

        The command has committed: raising would answer an error for a move that was
        recorded (and lose a new table's tokens, shown only in that answer). The table
        then waits until Redis answers again: `on_unreachable` hands the job over then
        (and should this process die first, a `loo worker`'s reconciler does).
        """
        from ledger.metrics import JOBS_ENQUEUED

        jid = rq_job_id(job_id)
        try:
            done = self._replace_ended(jid, lambda: self.queue.enqueue(
                func_path, *args, job_id=jid, unique=True, retry=_retry(),
                description=f"{func_path}{args!r}", meta=_meta()))
        except redis.RedisError as err:
            log.error("job %s not enqueued (%s): enqueued again once Redis answers", job_id,
                      err)
            self.on_unreachable(func_path, args, job_id)
            return False
        if done:
            JOBS_ENQUEUED.labels("rq").inc()
        return done

    def _replace_ended(self, jid: str, enqueue: Callable[[], Any]) -> bool:
        """Run `enqueue` (unique); a job of that id that has ended is deleted first, a live
        one is left alone (False)."""
        for _ in range(3):
            try:
                enqueue()
                return True
            except DuplicateJobError:
                job = self.queue.fetch_job(jid)
                if job is None:
                    continue  # expired meanwhile
                if job.get_status(refresh=False) not in _ENDED:
                    return False  # queued, scheduled (a retry or timer) or running
                forget(job)
        log.warning("job %s: could not replace its ended predecessor", jid)
        return False

    def schedule(self, func_path: str, *args: Any, at: float, job_id: str) -> bool:
        """Enqueue at Unix time `at` through rq's scheduler (every `loo worker` runs it);
        the id is deterministic, so scheduling twice is one job. An unreachable Redis is
        logged: the reconciler schedules it again."""
        jid = rq_job_id(job_id)
        # Its exact time in meta: the worker holding rq's scheduler lock enqueues it then
        # (workers/worker.py, Maintenance.time_upcoming); rq's own pass is the fallback.
        common = {"job_id": jid, "retry": _retry(), "description": f"{func_path}{args!r}",
                  "meta": {**(_meta() or {}), DUE: at}, "unique": True}
        if at <= time.time():  # already due (a timer recovered late): no scheduler needed
            def enqueue() -> Any:
                return self.queue.enqueue(func_path, *args, **common)
        else:
            # rq keeps whole seconds (it would truncate): round up, so that rq's own pass
            # never enqueues it early.
            when = datetime.fromtimestamp(math.ceil(at), UTC)

            def enqueue() -> Any:
                return self.queue.enqueue_at(when, func_path, *args, **common)
        try:
            return self._replace_ended(jid, enqueue)
        except redis.RedisError as err:
            log.error("timer %s not scheduled (%s): scheduled again once Redis answers",
                      job_id, err)
            self.on_unreachable(func_path, args, job_id)
            return False

    def close(self) -> None:
        """The process closes its store: nothing is handed over again after this."""
        self.on_close()

    def ping(self) -> dict[str, Any]:
        self.queue.connection.ping()
        return {"backend": "rq", "queue": self.queue.name, "queued": self.queue.count}


def _retry() -> Retry:
    return Retry(max=RETRY_MAX, interval=RETRY_INTERVALS)


def forget(job: Job, remove_from_queue: bool = True) -> None:
    """Delete an ended job, so that its id can be enqueued again.

    rq's `Job.delete` reads each of the job's executions; an execution's hash expires up to
    a minute before its entry in the job's execution registry, and `delete` then raises
    ValueError ("Execution ... not found"). The job has ended, so none of its executions
    is running: drop that registry first and delete again.
    """
    try:
        job.delete(remove_from_queue=remove_from_queue)
    except ValueError:
        job.connection.delete(job.execution_registry.key)
        job.delete(remove_from_queue=remove_from_queue)
