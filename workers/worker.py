"""`loo worker`: an RQ worker whose liveness is RQ's own heartbeat, and the maintenance
every worker process runs beside it, each step on RQ's own machinery.

- Liveness. `LooWorker` runs jobs in its own process (rq's SimpleWorker: the ledger's
  cache stays warm) and, like rq's forking Worker does for its work horse, heartbeats the
  job's execution while it runs: every HEARTBEAT_SECONDS it extends the execution's entry
  in the queue's StartedJobRegistry to EXECUTION_TTL seconds ahead. A worker killed
  anywhere (this host or another) stops heartbeating, its entry expires, and rq's
  `StartedJobRegistry.cleanup` retries the job (`Retry`, first interval 0: enqueued at
  once). No pid, host or /proc is looked at.
- Maintenance (`Maintenance.tick`, every MAINTENANCE_SECONDS in a thread of each `loo
  worker`): that cleanup; a job a dead worker had dequeued but not started (rq's
  IntermediateQueue cleanup, after STUCK_DEQUEUED seconds rather than rq's minute); rq's
  scheduler (`RQScheduler`, run in this thread rather than a forked child: no child to
  leave a zombie), its queue lock never more than SCHEDULER_LOCK_SECONDS ahead (rq's 61 s),
  so that another worker takes over within seconds of a holder's death, and the jobs due
  within UPCOMING_SECONDS enqueued at their exact time (`time_upcoming`); a scheduled job
  overdue by OVERDUE_SCHEDULED seconds (its scheduler
  died holding the lock, which outlives it for a minute) requeued through rq's registry;
  and the reconciler, which derives what is owed from the event store (the outbox): every
  `reconcile_every` seconds, and at once when Redis answers again after an outage.
  Every step is isolated: one that raises is logged and the others still run.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import redis
from redis.exceptions import LockError
from rq import Queue, SimpleWorker
from rq.exceptions import InvalidJobOperation, NoSuchJobError
from rq.executions import Execution
from rq.intermediate_queue import IntermediateQueue
from rq.job import Job, JobStatus
from rq.scheduler import RQScheduler
from rq.scripts import acquire_or_refresh_lock, release_lock
from rq.utils import current_timestamp, now, utcformat
from rq.worker import WorkerStatus

from workers.queue import DUE, Timers

log = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 3  # a running job's execution is extended this often
WORKER_BEAT_SECONDS = 1  # the worker's own registration (it lives WORKER_TTL + 60 s)
SUSPENSION_CHECK_SECONDS = 1  # `rq suspend` is looked for at most this often
EXECUTION_TTL = 12  # seconds a started job's execution lives past its last heartbeat
WORKER_TTL = 20  # rq's worker_ttl: an idle worker blocks on the queue for 5 s at a time
MAINTENANCE_SECONDS = 1  # whole seconds: rq gives it to Redis as a lock time
STUCK_DEQUEUED = 5  # seconds a dequeued job may wait to start before it counts as lost
OVERDUE_SCHEDULED = 10  # seconds past its time a scheduled job waits for the scheduler
# One worker cleans at a time; a dead one's lock expires this soon (a pass takes ms).
MAINTENANCE_LOCK_SECONDS = 10
# rq's scheduler lock lives interval + 60 s, renewed each pass: a worker SIGKILLed holding
# it stalled every scheduled job (turn timers, webhook retries) for a minute. We renew it
# every MAINTENANCE_SECONDS, so a few seconds suffice; should a holder stall longer, the
# lock passes on and the stalled one finds it taken and stops (a job enqueued by both
# meanwhile runs twice: every job here is idempotent). It is taken and renewed only with
# this time to live (rq's script, `run_scheduler`): rq's acquire_locks and heartbeat give it
# 61 s each time, and a holder killed before the next round trip cut it back left it so.
SCHEDULER_LOCK_SECONDS = 3
# rq's scheduled registry keeps whole seconds (RqDispatcher rounds a time up, never early)
# and its pass runs once a MAINTENANCE_SECONDS: a turn timer ran 1-2 s after its time
# (measured: 1.02 s for a timer after a timer, up to 1.86 s). The scheduler's holder also
# looks this far ahead each pass, and enqueues every job whose meta gives its exact time
# (workers.queue.DUE) then, on a timer thread. A job is scheduled at least 2 s ahead (a turn
# timer 5 s and more; an early one again 2 s), so a pass at most a second apart sees it.
UPCOMING_SECONDS = 3


class LooWorker(SimpleWorker):
    """rq's SimpleWorker with its job's execution heartbeated while the job runs, and its
    own registration heartbeated at most every WORKER_BEAT_SECONDS.

    A job's own bookkeeping costs four Redis round trips rather than rq's eight: the
    dequeue (LMOVE, then the job's HGETALL), one pipeline before the job (rq sends two:
    the execution's registration, then the job's start) and rq's transaction after it
    (WATCH of its dependents, their SMEMBERS, MULTI/EXEC). rq's SimpleWorker also marks
    the worker idle (an HSET) before each dequeue and the job's last heartbeat (another) as
    it ends: both ride the transaction after the job here. The same keys and fields are
    written, in the same transactions or earlier ones.
    """

    # Redis gone: try again every second (rq backs off up to a minute), so a worker takes
    # jobs again within a second of Redis coming back.
    max_connection_wait_time = 1.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("worker_ttl", WORKER_TTL)
        kwargs.setdefault("job_monitoring_interval", HEARTBEAT_SECONDS)
        super().__init__(*args, **kwargs)
        self.stop_signalled = False
        self._beater: _Beater | None = None
        self._registration_beat = -float("inf")
        self._suspension_checked = -float("inf")
        self._state_sent: str | None = None  # the state last written to Redis
        self._starting: Any = None  # prepare_execution's pipeline, for prepare_job_execution

    def get_heartbeat_ttl(self, job: Job, working_time: float = 0.0) -> int:
        """The execution's time to live: short, because it is extended while the job runs
        (SimpleWorker's default, the job timeout + 60 s, assumes nobody heartbeats)."""
        return EXECUTION_TTL

    def heartbeat(self, timeout: int | None = None, pipeline: Any = None) -> None:
        """The worker's registration (rq: HSET and two EXPIREs). rq's loop sends it three
        times per job, each command its own round trip, though it lives worker_ttl + 60 s:
        at most once per WORKER_BEAT_SECONDS here, in one round trip. (Those rq puts in a
        pipeline with the job's own bookkeeping still go out each time.)"""
        if pipeline is not None:
            super().heartbeat(timeout, pipeline=pipeline)
            return
        at = time.monotonic()
        if timeout is None and at - self._registration_beat < WORKER_BEAT_SECONDS:
            return
        with self.connection.pipeline(transaction=False) as pipe:
            super().heartbeat(timeout, pipeline=pipe)
            pipe.execute()
        self._registration_beat = at

    def check_for_suspension(self, burst: bool) -> None:
        """rq looks for `rq suspend` before every job (a round trip, with the registration
        beat in it): at most once per SUSPENSION_CHECK_SECONDS here, so a suspension takes
        effect within a second, not at the very next job."""
        at = time.monotonic()
        if at - self._suspension_checked < SUSPENSION_CHECK_SECONDS:
            return
        super().check_for_suspension(burst)
        self._suspension_checked = time.monotonic()

    def set_state(self, state: str, pipeline: Any = None) -> None:
        """rq's, without the round trip when Redis holds that state already: the worker is
        marked idle by the transaction that ends each job (`cleanup_execution`), and rq's
        loop marks it idle again, alone, before it dequeues the next."""
        if pipeline is None and state == self._state_sent == self.get_state():
            return
        super().set_state(state, pipeline=pipeline)
        self._state_sent = state

    def prepare_execution(self, job: Job) -> Execution:
        """rq's `prepare_execution` (the execution registered in the started registry, the
        worker busy), sent by `prepare_job_execution` in its own pipeline: one round trip."""
        pipe = self.connection.pipeline()
        execution = Execution.create(job, self.get_heartbeat_ttl(job), pipeline=pipe,
                                     worker_name=self.name)
        self.executions[execution.id] = execution
        self.set_state(WorkerStatus.BUSY, pipeline=pipe)
        self._starting = pipe
        return execution

    def prepare_job_execution(self, job: Job, remove_from_intermediate_queue: bool = False
                              ) -> None:
        """rq's steps (registration and job heartbeats, the job started, its key kept, off
        the intermediate list), after those `prepare_execution` queued: one transaction."""
        pipe, self._starting = self._starting, None
        if pipe is None:  # prepare_execution did not run here: rq's own way
            super().prepare_job_execution(job, remove_from_intermediate_queue)
            return
        with pipe:
            ttl = self.get_heartbeat_ttl(job)
            self.heartbeat(ttl, pipeline=pipe)
            job.heartbeat(now(), ttl, pipeline=pipe)
            job.prepare_for_execution(self.name, pipeline=pipe)
            pipe.persist(job.key)
            if remove_from_intermediate_queue:
                origin = self.queue_class(job.origin, connection=self.connection)
                pipe.lrem(origin.intermediate_queue_key, 1, job.id)
            pipe.execute()
        self.procline(f"Processing {job.func_name} from {job.origin} since {time.time()}")

    def handle_execution_ended(self, job: Job, queue: Queue, heartbeat_ttl: int) -> None:
        """rq's sets the job's end and sends its last heartbeat at once (an HSET of its
        own); the heartbeat is written by the transaction that ends the job instead."""
        job.ended_at = now()
        job.last_heartbeat = job.ended_at

    def cleanup_execution(self, job: Job, pipeline: Any, execution: Execution | None = None
                          ) -> None:
        """rq's (the execution out of the started registry), in the transaction that ends
        the job (succeeded, failed or retried), with the job's last heartbeat and the
        worker marked idle."""
        super().cleanup_execution(job, pipeline, execution)
        # A finished job's whole hash is saved by rq in this transaction, its heartbeat
        # with it (or deleted, when it keeps no result: no field may bring it back).
        if job.get_status(refresh=False) != JobStatus.FINISHED and job.last_heartbeat:
            pipeline.hset(job.key, "last_heartbeat", utcformat(job.last_heartbeat))
        self.set_state(WorkerStatus.IDLE, pipeline=pipeline)

    def execute_job(self, job: Job, queue: Queue) -> None:
        # rq's SimpleWorker ends with set_state(IDLE), a round trip its loop repeats at once.
        execution = self.prepare_execution(job)
        if self._beater is None:
            self._beater = _Beater(self)
        self._beater.running(job, execution)
        try:
            self.perform_job(job, queue, execution)
        finally:
            self._beater.ended()

    def request_stop(self, signum: Any, frame: Any) -> None:
        self.stop_signalled = True  # SIGTERM / SIGINT: `loo worker` ends after this run
        super().request_stop(signum, frame)


class _Beater:
    """One thread per worker (rather than one per job) that extends the running job's
    execution every job_monitoring_interval seconds, as rq's forking worker does for its
    work horse. A beat holds the lock: `ended` returns once none is in flight, so no beat
    follows the job's end."""

    def __init__(self, worker: LooWorker) -> None:
        self.worker = worker
        self._cond = threading.Condition()
        self._job: tuple[Job, Any] | None = None
        self._due = 0.0
        threading.Thread(target=self._loop, name="loo-heartbeat", daemon=True).start()

    def running(self, job: Job, execution: Any) -> None:
        with self._cond:
            self._job = (job, execution)
            self._due = time.monotonic() + self.worker.job_monitoring_interval
            self._cond.notify()

    def ended(self) -> None:
        with self._cond:
            self._job = None

    def _loop(self) -> None:
        with self._cond:
            while True:
                wait = self._due - time.monotonic()
                if self._job is None or wait > 0:
                    self._cond.wait(None if self._job is None else wait)
                    continue
                job, execution = self._job
                try:
                    self.worker.maintain_heartbeats(job, execution)
                except redis.RedisError as err:
                    log.warning("job %s: heartbeat not sent (%s)", job.id, err)
                self._due = time.monotonic() + self.worker.job_monitoring_interval


class _Dequeued(IntermediateQueue):
    """rq's intermediate list (jobs a worker took off the queue and has not started yet),
    with a shorter grace than rq's minute: a live worker starts a job within milliseconds."""

    def should_be_cleaned_up(self, job_id: str) -> bool:
        first_seen = self.get_first_seen(job_id)
        return first_seen is not None and now() - first_seen > timedelta(
            seconds=STUCK_DEQUEUED)


class Maintenance:
    """What each `loo worker` runs beside its worker loop, once per MAINTENANCE_SECONDS."""

    def __init__(self, worker: LooWorker, queue: Queue, reconcile: Callable[[], Any],
                 reconcile_every: float, logging_level: str = "INFO") -> None:
        self.worker, self.queue, self.reconcile = worker, queue, reconcile
        self.reconcile_every = reconcile_every
        self.scheduler = RQScheduler([queue], connection=queue.connection,
                                     serializer=queue.serializer,
                                     interval=int(MAINTENANCE_SECONDS),
                                     logging_level=logging_level)
        self.upcoming: Timers | None = None  # started with the first look ahead
        self.scheduling = False  # this worker holds the scheduler lock
        self.redis_up = True  # bootstrap has just pinged it
        self.run_id: str | None = None  # Redis's: a new one means it restarted
        self._lost = threading.Event()
        self._step("Redis's run id", self._read_run_id)
        self.next_reconcile = (time.monotonic() + reconcile_every if reconcile_every > 0
                               else float("inf"))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # ---- the loop ------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="loo-maintenance", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self.upcoming is not None:
            self.upcoming.stop()
        self._step("scheduler stop", self.stop_scheduler)  # releases its lock

    def _loop(self) -> None:
        while not self._stop.wait(MAINTENANCE_SECONDS):
            self.tick()

    def tick(self) -> None:
        """One pass; never raises."""
        if not self._redis_answers():
            return
        self._step("abandoned jobs", self.retry_abandoned)
        self._step("scheduler", self.run_scheduler)
        if time.monotonic() >= self.next_reconcile:
            self.reconcile_now()

    def reconcile_now(self) -> None:
        """A reconciler pass now (none when `--reconcile-every 0` turned it off)."""
        if self.reconcile_every <= 0:
            return
        self.next_reconcile = time.monotonic() + self.reconcile_every
        self._step("reconcile", self.reconcile)

    def _read_run_id(self) -> None:
        self.run_id = self.queue.connection.info("server").get("run_id")

    def redis_lost(self, *_job: Any) -> None:
        """Something in this process lost Redis (the worker loop ended on it, a job's
        follow-up was not enqueued): reconcile as soon as it answers, however short the
        outage was."""
        self._lost.set()

    def _redis_answers(self) -> bool:
        try:
            run_id = self.queue.connection.info("server").get("run_id")
        except redis.RedisError as err:
            if self.redis_up:
                log.error("Redis unreachable (%s): jobs wait; reconciling when it is back",
                          err)
            self.redis_up = False
            return False
        # A restarted Redis (a new run_id) may have lost every queued job, even if no ping
        # of ours fell in its outage.
        restarted = self.run_id is not None and run_id != self.run_id
        self.run_id = run_id
        if not self.redis_up or restarted or self._lost.is_set():
            # Jobs enqueued while it was down were never recorded, and a restarted Redis
            # may have lost its queue: what is owed comes from the event store.
            log.warning("Redis answers again%s: enqueueing what the event store says is "
                        "owed", " (restarted)" if restarted else "")
            self.redis_up = True
            self._lost.clear()
            self._step("abandoned jobs", self.retry_abandoned)
            self.reconcile_now()
        return True

    @staticmethod
    def _step(what: str, fn: Callable[[], Any]) -> None:
        try:
            fn()
        except Exception:  # one failing step must not stop the others, nor the loop
            log.exception("maintenance: %s failed", what)

    # ---- the steps -----------------------------------------------------------------------
    def retry_abandoned(self) -> None:
        """rq's own cleanup, by one worker at a time: a started job whose execution was not
        heartbeated for EXECUTION_TTL seconds is retried (or failed, retries spent); a
        dequeued job not started within STUCK_DEQUEUED seconds likewise; a scheduled job
        OVERDUE_SCHEDULED seconds late is enqueued."""
        lock = self.queue.connection.lock(f"loo:maintenance:{self.queue.name}",
                                          timeout=MAINTENANCE_LOCK_SECONDS)
        if not lock.acquire(blocking=False):
            return
        try:
            self._step("started registry cleanup", self.queue.started_job_registry.cleanup)
            self._step("dequeued jobs", lambda: _Dequeued(
                self.queue.key, self.queue.connection).cleanup(self.worker, self.queue))
            self._step("overdue scheduled jobs", self.requeue_overdue)
        finally:
            try:
                lock.release()
            except LockError:
                pass  # expired meanwhile

    def requeue_overdue(self) -> int:
        registry = self.queue.scheduled_job_registry
        count = 0
        for job_id in registry.get_jobs_to_schedule(current_timestamp() - OVERDUE_SCHEDULED):
            try:
                registry.requeue(job_id)
            except (InvalidJobOperation, NoSuchJobError):
                continue  # the scheduler took it meanwhile, or it expired
            log.warning("job %s: overdue, no scheduler moved it; enqueued", job_id)
            count += 1
        return count

    def run_scheduler(self) -> None:
        """rq's scheduler, in this thread: the worker holding the queue's lock enqueues the
        scheduled jobs (retries, turn timers) that are due. The lock is taken or renewed by
        rq's own script, for SCHEDULER_LOCK_SECONDS (see there), and the registry is then
        rq's scheduler's; its metadata (who holds the lock, since when, last seen) as rq
        keeps it."""
        s = self.scheduler
        lock = s.get_locking_key(self.queue.name)
        if acquire_or_refresh_lock(s.connection, lock, s.name,
                                   SCHEDULER_LOCK_SECONDS) == "taken":
            self.scheduling = False  # another worker's (or ours expired and was taken)
            return
        if not self.scheduling:
            s.prepare_registries([self.queue.name])
            s.register_birth()
            self.scheduling = True
        else:
            s.last_heartbeat = now()
            s.save()
        s.enqueue_scheduled_jobs()
        self.time_upcoming()

    def stop_scheduler(self) -> None:
        """Let the scheduler lock go (if still ours), so that another worker takes it at its
        next pass, and rq's metadata with it."""
        s = self.scheduler
        self.scheduling = False
        release_lock(s.connection, s.get_locking_key(self.queue.name), s.name)  # if ours
        s.stop()

    def time_upcoming(self) -> None:
        """The scheduled jobs due within UPCOMING_SECONDS whose meta gives their exact time,
        each enqueued at that time on the `upcoming` timer thread (rq enqueues them only once
        their whole second has come, at its next pass). Whoever takes a job off rq's
        registry enqueues it: this thread, rq's own pass, or another worker's (a worker that
        lost the lock may still hold timers: the one that comes second finds it gone)."""
        registry = self.queue.scheduled_job_registry
        ids = registry.get_jobs_to_schedule(current_timestamp() + UPCOMING_SECONDS)
        if not ids:
            return
        if self.upcoming is None:
            self.upcoming = Timers(self._enqueue_due)
        for job in Job.fetch_many(ids, connection=self.queue.connection,
                                  serializer=self.queue.serializer):
            due = job.meta.get(DUE) if job is not None else None
            if isinstance(due, int | float):
                self.upcoming.add(float(due), job.id, "", ())

    def _enqueue_due(self, _func_path: str, _args: Any, job_id: str) -> None:
        """A job's exact time has come: rq's registry enqueues it (unless already done)."""
        try:
            self.queue.scheduled_job_registry.requeue(job_id)
        except (InvalidJobOperation, NoSuchJobError):
            return  # enqueued by rq's pass or another worker meanwhile, or deleted
        except redis.RedisError as err:  # rq's pass enqueues it once Redis answers
            log.warning("job %s: not enqueued at its time (%s)", job_id, err)
