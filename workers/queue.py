"""Queue setup: how follow-up jobs leave a command, to RQ or run in-process (embedded default)."""

from __future__ import annotations

import importlib
import logging
import os
import re
import socket
import threading
from collections import deque
from typing import Any, Protocol

import redis
from rq import Queue, Retry
from rq.exceptions import DuplicateJobError
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer
from rq.utils import now
from rq.worker import Worker

log = logging.getLogger(__name__)

# rq 3 accepts only letters, digits, "_" and "-" in a job id.
_JOB_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
# A job that ended may run again under the same id (reconcile re-enqueues waiting tables).
_ENDED = {JobStatus.FINISHED, JobStatus.FAILED, JobStatus.STOPPED, JobStatus.CANCELED}
RETRY_MAX, RETRY_INTERVALS = 3, [1, 5, 15]  # seconds before each retry
DEFAULT_JOB_TIMEOUT = 180  # rq's default; past it (+ a margin) a started job is dead for sure


class Dispatcher(Protocol):
    def enqueue(self, func_path: str, *args: Any, job_id: str) -> None: ...

    def ping(self) -> dict[str, Any]: ...


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

    A job that enqueues another (a long bot run) does not recurse: the new job waits in
    this thread's backlog until the running one returns. A failing job is logged, not
    raised: its command has committed, and `loo worker --reconcile-every` or the next
    write picks the table up again.
    """

    def __init__(self, **inject: Any) -> None:
        self.inject = dict(inject)
        self._local = threading.local()

    def bind(self, **inject: Any) -> None:
        """Keyword arguments given to every job (the ledger, which is built after us)."""
        self.inject.update(inject)

    def enqueue(self, func_path: str, *args: Any, job_id: str) -> None:
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
        finally:
            local.running = False

    def ping(self) -> dict[str, Any]:
        return {"backend": "inline"}


def abandoned(job: Job) -> bool:
    """A "started" job whose worker is gone (killed mid-job): it will never end by itself.

    rq fails such a job only when its started-registry entry expires (job timeout + 60 s)
    and a maintenance pass notices, many minutes later; until then the reconciler could not
    re-enqueue the table's job under the same id. Running it again is safe: the expected
    version decides, so a worker that was alive after all only finds its job stale.
    """
    if job.get_status(refresh=False) != JobStatus.STARTED:
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
    return worker.hostname == socket.gethostname() and not _pid_alive(worker.pid)


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return True  # unknown: assume alive
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


class RqDispatcher:
    """Enqueues to RQ with a deterministic job id: a duplicate of a live job is a no-op."""

    def __init__(self, queue: Queue) -> None:
        self.queue = queue

    def enqueue(self, func_path: str, *args: Any, job_id: str) -> None:
        jid = rq_job_id(job_id)
        for _ in range(2):
            try:
                self._enqueue(func_path, args, jid)
                return
            except DuplicateJobError:
                job = self.queue.fetch_job(jid)
                if job is not None and job.get_status(refresh=False) not in _ENDED:
                    if not abandoned(job):
                        return  # queued, scheduled for a retry, or running
                    log.warning("job %s: its worker %s is gone; enqueued again", jid,
                                job.worker_name)
                if job is not None:
                    job.delete(remove_from_queue=True)
        log.warning("job %s: could not replace its ended predecessor", jid)

    def _enqueue(self, func_path: str, args: tuple[Any, ...], jid: str) -> None:
        self.queue.enqueue(func_path, *args, job_id=jid, unique=True,
                           retry=Retry(max=RETRY_MAX, interval=RETRY_INTERVALS),
                           description=f"{func_path}{args!r}")

    def ping(self) -> dict[str, Any]:
        self.queue.connection.ping()
        return {"backend": "rq", "queue": self.queue.name, "queued": self.queue.count}
