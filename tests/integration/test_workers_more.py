"""RQ workers, the harder failures: partial progress then a retry, an overdue retry, Redis
down at enqueue, the reconciler's cost and its isolation."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from rq import Queue, Retry
from rq.job import JobStatus
from rq.scheduler import RQScheduler

from ledger.app import handlers
from ledger.app.service import JOB_ADVANCE, Ledger
from ledger.core import commands as c
from ledger.store.base import EventStore
from tests.integration.conftest import fresh_database
from tests.integration.worker_helpers import (
    blocked_backends,
    check_table,
    drain,
    four_bots,
    hand_done,
    hold_version,
    play_hands,
    reaped,
    seeded,
    wait_until,
    worker_process,
)
from workers import reconcile
from workers.queue import RETRY_INTERVALS, RETRY_MAX, RqDispatcher, make_queue, rq_job_id

pytestmark = [pytest.mark.postgres, pytest.mark.redis]



def test_retry_of_a_job_whose_connection_dropped_mid_append_finishes_the_hand(
        db_url: str, store: EventStore, queue: Any, redis_url: str) -> None:
    """The connection drops while the job appends its moves: none of them stand (one
    transaction), and RQ's retry plays the hand out (reconciler off)."""
    ledger = Ledger(store, RqDispatcher(queue), seeds=seeded(4))
    worker = worker_process(db_url, redis_url, queue.name, "--reconcile-every", "0")
    with reaped([worker]):
        table_id, _, _ = ledger.create_table(four_bots())
        play_hands(ledger, table_id, 1)  # the running worker plays it
        version = ledger.execute(table_id, c.StartHand(), dispatch=False).projection.version
        with hold_version(db_url, table_id, version + 3) as hold:
            ledger.dispatch(table_id)
            (backend,) = wait_until(lambda: blocked_backends(hold), what="worker blocked")
            # Its connection dies mid-job (a PostgreSQL restart, a network cut): the job
            # fails with nothing appended, and RQ retries it.
            hold.execute("SELECT pg_terminate_backend(%s)", (backend,))
        assert ledger.load(table_id).version == version
        wait_until(lambda: hand_done(ledger, table_id), timeout=20,
                   what="the retried job's table moving on")
        assert handlers.next_command(ledger.load(table_id)) is None
        check_table(store, table_id, hands=2)


class CountingStore:
    """The store, recording which tables were read in full (from version 1)."""

    def __init__(self, store: EventStore) -> None:
        self.store, self.full_loads = store, []

    def load(self, table_id: str, after_version: int = 0, **kw: Any) -> Any:
        if after_version == 0:
            self.full_loads.append(table_id)
        return self.store.load(table_id, after_version=after_version, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def test_reconcile_folds_again_only_the_tables_that_changed(store: EventStore) -> None:
    """Every pass scans every table ever played; one whose version has not moved since it
    was found idle is not replayed again, even once the ledger's cache dropped it."""
    counting = CountingStore(store)
    ledger = Ledger(counting, seeds=seeded(6))  # type: ignore[arg-type]
    seats = (("Ann", None), ("Bot B", "heuristic"), ("Bot C", "heuristic"))
    mixed = c.CreateTable(variant="loo", scoring="pool", seats=seats, first_dealer=0,
                          deal="shuffled")
    bots, _, _ = ledger.create_table(four_bots())
    person, _, _ = ledger.create_table(mixed)
    ledger.advance(bots, ledger.load(bots).version)  # settled: idle until POST /hands
    ledger.advance(person, ledger.load(person).version)  # Ann's turn: idle
    assert bots not in reconcile.waiting_tables(ledger)
    assert person not in reconcile.waiting_tables(ledger)
    ledger._cache.clear()  # as past 2000 tables
    counting.full_loads.clear()
    reconcile.waiting_tables(ledger)
    assert not {bots, person} & set(counting.full_loads), counting.full_loads
    # A table that moved is looked at again, and found waiting on the workers.
    ledger.execute(bots, c.StartHand(), dispatch=False)
    assert bots in reconcile.waiting_tables(ledger)
    assert bots in reconcile.waiting_tables(ledger)  # still waiting: still reported
    assert person not in reconcile.waiting_tables(ledger)


def test_a_move_committed_while_redis_is_down_stands_and_the_reconciler_enqueues_it(
        store: EventStore, queue: Any, worker_ledger: Ledger) -> None:
    """The enqueue comes after the commit: a queue that cannot be reached must not turn a
    recorded move into an error (the API would answer 500 for a move it kept); the table
    waits, like after a crash between commit and enqueue, until the reconciler's pass."""
    down = make_queue("redis://127.0.0.1:1/0", queue.name, socket_timeout=1)
    ledger = Ledger(store, RqDispatcher(down), seeds=seeded(7))
    table_id, _, p = ledger.create_table(four_bots())
    p = ledger.execute(table_id, c.StartHand()).projection
    assert handlers.next_command(p) is not None  # the first hand, waiting on a bot
    ledger.advance(table_id, p.version)
    out = ledger.execute(table_id, c.StartHand())
    assert ledger.load(table_id).version == out.projection.version  # recorded
    assert reconcile.reconcile(worker_ledger).enqueued >= 1
    drain(queue)  # what `loo worker` would run
    assert hand_done(ledger, table_id)
    check_table(store, table_id, hands=2)


def test_a_retry_overdue_because_no_scheduler_runs_is_enqueued_again(
        db_url: str, store: EventStore, queue: Any, redis_url: str) -> None:
    """A failed job waits in RQ's scheduled registry for its retry, which only the worker
    holding the queue's scheduler lock enqueues. Killed, its lock outlives it and the other
    workers claim it only at their next maintenance (every 10 minutes): the reconciler must
    not count such an overdue retry as live."""
    ledger = Ledger(store, RqDispatcher(queue), seeds=seeded(8))
    table_id, _, _ = ledger.create_table(four_bots())
    ledger.advance(table_id, ledger.execute(table_id, c.StartHand(), dispatch=False)
                   .projection.version)  # hand 1, played here
    version = ledger.execute(table_id, c.StartHand(), dispatch=False).projection.version
    lock = RQScheduler.get_locking_key(queue.name)
    queue.connection.set(lock, "a-killed-worker", ex=60)  # its lock, not yet expired
    try:
        queue.enqueue_at(datetime.now(UTC) - timedelta(minutes=1), JOB_ADVANCE, table_id,
                         version, job_id=rq_job_id(f"advance:{table_id}:{version}"),
                         retry=Retry(max=RETRY_MAX, interval=RETRY_INTERVALS))
        fresh = worker_process(db_url, redis_url, queue.name, "--burst")  # reconciles first
        out, _ = fresh.communicate(timeout=60)
        assert fresh.returncode == 0, out.decode(errors="replace")
        assert hand_done(ledger, table_id), out.decode(errors="replace")
        check_table(store, table_id, hands=2)
    finally:
        queue.connection.delete(lock)


def _waiting_table(ledger: Ledger) -> str:
    """An all-bot table with a hand started and its job not dispatched: owed a job."""
    table_id, _, _ = ledger.create_table(four_bots())
    ledger.execute(table_id, c.StartHand(), dispatch=False)
    return table_id


class TestReconcileCounts:
    """reconcile() counts every table of the store with work owed: each test here has a
    database of its own, so tables the module's other tests left waiting are not counted
    (with them, on the same xdist worker, the counts came out 3 and 6 for 2 and 3)."""

    @pytest.fixture
    def db_url(self) -> Iterator[str]:
        with fresh_database("reconcile") as url:
            yield url

    def test_reconcile_counts_the_jobs_it_enqueued_not_the_tables_waiting(
            self, store: EventStore, queue: Any, worker_ledger: Ledger) -> None:
        """"reconcile: enqueued N" counted every waiting table, a job still queued included: a
        second pass over unchanged tables reported them all again."""
        ledger = Ledger(store, None, seeds=seeded(9))
        first, second = _waiting_table(ledger), _waiting_table(ledger)
        worker_ledger.dispatch(first)  # its job is queued already
        done = reconcile.reconcile(worker_ledger)
        assert (done.waiting, done.enqueued, done.failed) == (2, 1, 0)
        assert reconcile.reconcile(worker_ledger) == (2, 0, 0)  # nothing new to enqueue
        assert queue.count == 2
        drain(queue)
        assert hand_done(ledger, first) and hand_done(ledger, second)
        assert reconcile.reconcile(worker_ledger) == (0, 0, 0)


    def test_a_job_rq_cannot_delete_does_not_abort_the_reconcile_pass(
            self,
            store: EventStore, queue: Any, worker_ledger: Ledger,
            monkeypatch: pytest.MonkeyPatch) -> None:
        """rq's Job.delete raised ValueError ("Execution ... not found") for a job whose
        execution hash had expired before its registry entry, and that aborted the whole pass:
        no table after it was enqueued. Such an ended job is now replaced, and any table whose
        step still raises is logged and counted while the pass goes on."""
        ledger = Ledger(store, None, seeds=seeded(10))
        tables = [_waiting_table(ledger) for _ in range(3)]
        for table_id in tables[:2]:  # an ended job under the id each table now needs
            version = ledger.load(table_id).version
            job = queue.enqueue(JOB_ADVANCE, table_id, version,
                                job_id=rq_job_id(f"advance:{table_id}:{version}"))
            queue.remove(job)
            job.set_status(JobStatus.FINISHED)
            queue.connection.zadd(job.execution_registry.key, {"gone": 4_000_000_000})
            with pytest.raises(ValueError, match="not found"):  # what rq does with it
                queue.fetch_job(job.id).delete()
        done = reconcile.reconcile(worker_ledger)
        assert (done.waiting, done.enqueued, done.failed) == (3, 3, 0)
        assert sorted(queue.get_job_ids()) == sorted(
            rq_job_id(f"advance:{t}:{ledger.load(t).version}") for t in tables)
        # A table whose step raises anyway: logged, counted, and the others still enqueued.
        queue.empty()
        real = worker_ledger.dispatch

        def dispatch(table_id: str, *args: Any, **kw: Any) -> bool:
            if table_id == tables[0]:
                raise RuntimeError("boom")
            return real(table_id, *args, **kw)

        monkeypatch.setattr(worker_ledger, "dispatch", dispatch)
        done = reconcile.reconcile(worker_ledger)
        assert (done.waiting, done.failed) == (3, 1) and done.enqueued == 2


def _advance_jobs(queue: Any) -> list[Any]:
    ids = queue.finished_job_registry.get_job_ids() + queue.failed_job_registry.get_job_ids()
    return [j for j in (queue.fetch_job(i) for i in ids)
            if j is not None and j.func_name == JOB_ADVANCE]


@pytest.mark.parametrize("run_seconds, one_job", [(60.0, True), (0.0, False)])
def test_a_long_all_bot_run_goes_on_in_its_job_while_its_time_lasts(
        store: EventStore, queue: Any, worker_ledger: Ledger, monkeypatch: pytest.MonkeyPatch,
        run_seconds: float, one_job: bool) -> None:
    """An RQ job plays a long all-bot run batch after batch (MAX_STEPS steps, one append
    each) while RUN_SECONDS last, so the run stays on the worker whose cache holds the
    table; then it hands the rest to a fresh job. Either way every hand is played once."""
    from workers import jobs

    monkeypatch.setattr(jobs, "RUN_SECONDS", run_seconds)
    ledger = Ledger(store, RqDispatcher(queue), seeds=seeded(31))
    hands = 40  # about 1,000 steps: three batches or more
    table_id, _, _ = ledger.create_table(four_bots(auto_deal=True, max_hands=hands))
    drain(queue)
    assert ledger.load(table_id).table.status == "closed"
    check_table(store, table_id, hands=hands)
    ran = _advance_jobs(queue)
    results = sorted(j.return_value() for j in ran)
    if one_job:
        assert results == ["idle"]
    else:
        assert len(ran) >= 3 and results.count("continued") == len(ran) - 1, results


def _counted_sleep(key: str, seconds: float) -> None:
    """A job that counts its runs in Redis, then takes its time."""
    import time

    from rq import get_current_job

    get_current_job().connection.incr(key)
    time.sleep(seconds)


def test_a_running_job_keeps_its_execution_alive_past_its_ttl(
        queue: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker's heartbeat thread extends the running job's execution: a job running
    for well past the execution's time to live is never taken for abandoned by the
    started-registry cleanup (run all along, as another worker's maintenance would), and
    runs once. The thread outlives a job and beats the next one too."""
    import threading

    from workers import worker as w

    monkeypatch.setattr(w, "EXECUTION_TTL", 2)  # seconds; beaten every second below
    key = f"{queue.key}:runs"
    func = f"{__name__}._counted_sleep"
    jobs = [queue.enqueue(func, key, 3.5, retry=Retry(max=RETRY_MAX, interval=[0]))
            for _ in range(2)]
    done = threading.Event()

    def clean() -> None:
        while not done.wait(0.1):
            queue.started_job_registry.cleanup()

    cleaner = threading.Thread(target=clean)
    cleaner.start()
    try:
        w.LooWorker([queue], connection=queue.connection, serializer=queue.serializer,
                    job_monitoring_interval=1).work(burst=True, logging_level="WARNING")
    finally:
        done.set()
        cleaner.join()
        runs = int(queue.connection.get(key) or 0)
        queue.connection.delete(key)
    assert all(j.get_status() == JobStatus.FINISHED for j in jobs)
    assert runs == 2  # neither was retried as abandoned


def _noop() -> int:
    return 1


def test_a_worker_looks_for_rq_suspend_at_most_once_a_second_and_still_obeys_it(
        queue: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """rq asks Redis whether workers are suspended before every job (a round trip each);
    LooWorker asks at most once per SUSPENSION_CHECK_SECONDS. A suspended queue is still
    seen at once by a worker that starts: its first look is not deferred."""
    import rq.worker.base as rq_base

    from workers import worker as w

    looks: list[float] = []
    original = rq_base.is_suspended

    def counted(*args: Any, **kwargs: Any) -> bool:
        looks.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(rq_base, "is_suspended", counted)
    monkeypatch.setattr(w, "SUSPENSION_CHECK_SECONDS", 60)
    jobs = [queue.enqueue(f"{__name__}._noop") for _ in range(6)]
    w.LooWorker([queue], connection=queue.connection,
                serializer=queue.serializer).work(burst=True, logging_level="WARNING")
    assert all(j.get_status() == JobStatus.FINISHED for j in jobs)
    assert len(looks) == 1  # rq's loop would have looked 7 times

    # `rq suspend` (faked: the suspension key is shared by every queue of the Redis db)
    monkeypatch.setattr(rq_base, "is_suspended", lambda *_a, **_k: True)
    held = queue.enqueue(f"{__name__}._noop")
    w.LooWorker([queue], connection=queue.connection,
                serializer=queue.serializer).work(burst=True, logging_level="WARNING")
    assert held.get_status() == JobStatus.QUEUED  # suspended: not taken


def _observe() -> dict[str, Any]:
    """A job that reports what Redis holds while it runs: its worker's state, its own
    status, its execution in the started registry, whether it is still on the list of
    dequeued jobs."""
    from rq import get_current_job
    from rq.worker import Worker

    job = get_current_job()
    assert job is not None
    conn = job.connection
    queue = Queue(job.origin, connection=conn)
    return {"worker": (conn.hget(Worker.redis_worker_namespace_prefix + str(job.worker_name),
                                 "state") or b"").decode(),
            "status": job.get_status(refresh=True).value,
            "started": len(queue.started_job_registry.get_job_ids(cleanup=False)),
            "dequeued": conn.lrange(queue.intermediate_queue_key, 0, -1) == []}


def _fail() -> None:
    raise RuntimeError("this job fails")


def test_a_job_costs_the_worker_six_redis_round_trips_and_keeps_rqs_bookkeeping(
        queue: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """LooWorker sends rq's job bookkeeping in 6 round trips, not 9 (the worker marked idle
    before each dequeue and the job's last heartbeat each went alone; the execution's
    registration and the job's start were two pipelines), and Redis holds the same: the
    worker busy, the job started and its execution registered while it runs; after it the
    worker idle, the job finished or failed with its end and last heartbeat, no execution
    left."""
    from rq.worker import Worker

    from bench.profile_workers import _Counted
    from workers import worker as w

    # Its registration's beat and the look for `rq suspend`, once a second each, left out.
    monkeypatch.setattr(w, "WORKER_BEAT_SECONDS", 60)
    monkeypatch.setattr(w, "SUSPENSION_CHECK_SECONDS", 60)
    conn = _Counted(connection_pool=queue.connection.connection_pool)
    counted = type(queue)(queue.name, connection=conn, serializer=queue.serializer)

    def run(jobs: int) -> int:
        ids = [queue.enqueue(f"{__name__}._noop").id for _ in range(jobs)]
        _Counted.round_trips = 0
        w.LooWorker([counted], connection=conn, serializer=queue.serializer).work(
            burst=True, logging_level="WARNING")
        assert all(queue.fetch_job(i).get_status() == JobStatus.FINISHED for i in ids)
        return _Counted.round_trips

    run(1)  # rq looks up the server's version once per connection
    per_job = (run(11) - run(1)) / 10  # the worker's start and end taken out
    assert per_job == 6, per_job

    ok, bad = queue.enqueue(f"{__name__}._observe"), queue.enqueue(f"{__name__}._fail")
    worker = w.LooWorker([queue], connection=queue.connection, serializer=queue.serializer)
    monkeypatch.setattr(worker, "register_death", lambda: None)  # keep its state to read
    worker.work(burst=True, logging_level="WARNING")
    ok, bad = queue.fetch_job(ok.id), queue.fetch_job(bad.id)
    assert ok.return_value() == {"worker": "busy", "status": "started", "started": 1,
                                 "dequeued": True}
    assert ok.get_status() == JobStatus.FINISHED and bad.get_status() == JobStatus.FAILED
    for job in (ok, bad):
        assert job.ended_at is not None and job.started_at <= job.ended_at
        assert job.last_heartbeat is not None and job.last_heartbeat >= job.started_at
    assert queue.started_job_registry.get_job_ids(cleanup=False) == []
    assert queue.connection.hget(Worker.redis_worker_namespace_prefix + worker.name,
                                 "state") == b"idle"
    worker.register_death = lambda: Worker.register_death(worker)  # type: ignore[method-assign]
    worker.register_death()
