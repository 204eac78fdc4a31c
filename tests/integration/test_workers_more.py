"""RQ workers, the harder failures: partial progress then a retry, dead workers whose pid
still answers, an overdue retry, Redis down at enqueue, the reconciler's cost."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from rq import Retry
from rq.job import JobStatus
from rq.scheduler import RQScheduler
from rq.worker import Worker

from ledger.app import handlers
from ledger.app.service import JOB_ADVANCE, Ledger
from ledger.core import commands as c
from ledger.store.base import EventStore
from tests.integration.worker_helpers import (
    blocked_backends,
    check_table,
    drain,
    four_bots,
    hand_done,
    hold_version,
    kill9,
    play_hands,
    seeded,
    wait_until,
    worker_process,
)
from workers import reconcile
from workers.queue import RETRY_INTERVALS, RETRY_MAX, RqDispatcher, make_queue, rq_job_id

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def _output(proc: Any) -> str:
    if proc.poll() is None:
        kill9(proc)
    return proc.stdout.read().decode(errors="replace")[-4000:]


def test_retry_of_a_job_whose_connection_dropped_mid_append_finishes_the_hand(
        db_url: str, store: EventStore, queue: Any, redis_url: str) -> None:
    """The connection drops while the job appends its moves: none of them stand (one
    transaction), and RQ's retry plays the hand out (reconciler off)."""
    ledger = Ledger(store, RqDispatcher(queue), seeds=seeded(4))
    worker = worker_process(db_url, redis_url, queue.name, "--reconcile-every", "0")
    try:
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
    except BaseException:
        print(_output(worker))
        raise
    finally:
        if worker.poll() is None:
            kill9(worker)


@pytest.mark.parametrize("fate", ["pid_reused", "zombie"])
def test_job_of_a_killed_worker_whose_pid_still_answers_is_reenqueued(
        fate: str, db_url: str, store: EventStore, queue: Any, redis_url: str) -> None:
    """A killed worker's pid may still answer a signal: held by a newer process (a restarted
    container runs `loo worker` as pid 1 again) or a zombie its parent never waited for.
    Neither is the worker: the reconciler must take its job over now, not in minutes."""
    ledger = Ledger(store, RqDispatcher(queue), seeds=seeded(5))
    worker = worker_process(db_url, redis_url, queue.name, "--reconcile-every", "0")
    try:
        table_id, _, _ = ledger.create_table(four_bots())
        play_hands(ledger, table_id, 1)
        version = ledger.execute(table_id, c.StartHand(), dispatch=False).projection.version
        with hold_version(db_url, table_id, version + 1) as hold:
            ledger.dispatch(table_id)
            (backend,) = wait_until(lambda: blocked_backends(hold), what="worker blocked")
            job = queue.fetch_job(rq_job_id(f"advance:{table_id}:{version}"))
            assert job is not None and job.get_status() == JobStatus.STARTED
            kill9(worker)
            hold.execute("SELECT pg_terminate_backend(%s)", (backend,))
    finally:
        if worker.poll() is None:
            kill9(worker)
    # The dead worker's registration now names a pid that answers os.kill(pid, 0).
    holder = subprocess.Popen(["sleep", "30"] if fate == "pid_reused" else ["true"])
    fresh = None
    try:
        if fate == "zombie":  # exited, never waited for
            wait_until(lambda: _state(holder.pid) == "Z", what="a zombie")
        key = Worker.redis_worker_namespace_prefix + job.worker_name
        an_hour_ago = (datetime.now(UTC) - timedelta(hours=1)).strftime(
            "%Y-%m-%dT%H:%M:%S.%fZ")
        assert queue.connection.hset(key, mapping={"pid": holder.pid, "birth": an_hour_ago}) == 0
        fresh = worker_process(db_url, redis_url, queue.name, "--burst")
        out, _ = fresh.communicate(timeout=60)
        assert fresh.returncode == 0, out.decode(errors="replace")
        assert hand_done(ledger, table_id), out.decode(errors="replace")
        check_table(store, table_id, hands=2)
    finally:
        holder.kill()
        holder.wait()
        if fresh is not None and fresh.poll() is None:
            kill9(fresh)


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


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
    assert reconcile.reconcile(worker_ledger) >= 1
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
