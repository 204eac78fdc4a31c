"""Worker faults (issue 16), on a redis-server of the test's own: a worker killed with
SIGKILL mid-job, and Redis stopped and started under play. Each plays all-bot tables
(auto_deal, max_hands) to their end through real `loo worker` processes, and audits them."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
import redis
from rq import Queue, SimpleWorker
from rq.job import JobStatus
from rq.scheduler import RQScheduler
from rq.serializers import JSONSerializer

from ledger.app import handlers
from ledger.app.service import Ledger
from ledger.bootstrap import Settings, bootstrap
from ledger.core import commands as c
from ledger.store.base import EventStore
from tests.integration.redis_server import Link, RedisServer
from tests.integration.worker_helpers import (
    blocked_backends,
    check_table,
    four_bots,
    hold_version,
    kill9,
    reaped,
    seeded,
    wait_until,
    worker_output,
    worker_process,
)
from workers.queue import RqDispatcher, make_queue, rq_job_id

pytestmark = [pytest.mark.postgres]

HANDS = 3
LONG = 1000  # hands of the tables Redis stops under: still playing when it does (a job
# plays on for up to 0.5 s: 60 hands were all played by then on a quiet machine)


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    server = RedisServer()
    try:
        server.start()
        yield server
    finally:
        server.remove()


def _closed(ledger: Ledger, table_id: str) -> bool:
    return ledger.load(table_id).table.status == "closed"



def test_a_job_of_a_worker_killed_mid_job_runs_again_within_30_s(
        db_url: str, store: EventStore, own_redis: RedisServer) -> None:
    """SIGKILL lands while the worker appends (its append is held on a row lock): nothing
    of the job stands, and the other worker runs it again within 30 s, found by rq's own
    heartbeat and registry cleanup (reconciler off: no store scan helps)."""
    queue = make_queue(own_redis.url, f"loo-kill-{uuid.uuid4().hex[:8]}")
    ledger = Ledger(store, RqDispatcher(queue), seeds=seeded(21))
    table_id, _, p = ledger.create_table(four_bots(auto_deal=True, max_hands=HANDS))
    version = p.version  # its first job waits in the queue: no worker yet
    victim = worker_process(db_url, own_redis.url, queue.name, "--reconcile-every", "0")
    other = None
    try:
        with hold_version(db_url, table_id, version + 1) as hold:
            (backend,) = wait_until(lambda: blocked_backends(hold), timeout=30,
                                    what="the worker blocked mid-job")
            job = queue.fetch_job(rq_job_id(f"advance:{table_id}:{version}"))
            assert job is not None and job.get_status() == JobStatus.STARTED
            other = worker_process(db_url, own_redis.url, queue.name, "--reconcile-every", "0")
            kill9(victim)
            killed = time.monotonic()
            # Its transaction dies with it; end it now rather than when PostgreSQL notices.
            hold.execute("SELECT pg_terminate_backend(%s)", (backend,))
        assert ledger.load(table_id).version == version  # all of the job's append, or none
        wait_until(lambda: ledger.load(table_id).version > version, timeout=30,
                   what="the killed worker's job run again")
        recovered = time.monotonic() - killed
        assert recovered < 30
        wait_until(lambda: _closed(ledger, table_id), timeout=120, what="the table's end")
        check_table(store, table_id, hands=HANDS)
        print(f"table moved again {recovered:.1f} s after the kill")
    except BaseException:
        for proc in (victim, other):
            if proc is not None:
                print(worker_output(proc))
        raise
    finally:
        for proc in (victim, other):
            if proc is not None and proc.poll() is None:
                kill9(proc)
        queue.connection.close()


def test_tables_move_again_within_10_s_of_redis_coming_back(
        db_url: str, store: EventStore, own_redis: RedisServer) -> None:
    """Redis stops under play (every queued job, registry and lock is lost: it keeps
    nothing) and starts again: every table with work owed moves within 10 s, because the
    workers enqueue what the event store says is owed as soon as Redis answers, not at
    their next reconcile tick (60 s)."""
    queue = make_queue(own_redis.url, f"loo-outage-{uuid.uuid4().hex[:8]}")
    ledger = Ledger(store, RqDispatcher(queue), seeds=seeded(22))
    workers = [worker_process(db_url, own_redis.url, queue.name) for _ in range(2)]
    try:
        with reaped(workers):
            tables = [ledger.create_table(four_bots(auto_deal=True, max_hands=LONG))[0]
                      for _ in range(3)]
            start = {t: ledger.load(t).version for t in tables}
            wait_until(lambda: all(ledger.load(t).version > start[t] for t in tables),
                       timeout=60, what="every table playing")
            own_redis.stop()
            # Whatever was running ends; nothing new can be enqueued. Wait for the tables to
            # stand still (two equal looks), then start Redis again.
            last: dict[str, int] = {}

            def still() -> bool:
                now = {t: ledger.load(t).version for t in tables}
                same = now == last
                last.update(now)
                return same

            wait_until(still, timeout=30, what="play stopped with Redis")
            owed = [t for t in tables if handlers.next_command(ledger.load(t)) is not None]
            assert owed, "no table was waiting on a worker when Redis stopped"
            own_redis.start()
            back = time.monotonic()
            wait_until(lambda: all(ledger.load(t).version > last[t] for t in owed), timeout=10,
                       what="every table with work owed moving again")
            print(f"{len(owed)} table(s) moved again within {time.monotonic() - back:.1f} s")
            wait_until(lambda: all(_closed(ledger, t) for t in tables), timeout=120,
                       what="every table's end")
            for t in tables:
                check_table(store, t, hands=LONG)
    finally:
        queue.connection.close()


def _people(**options: Any) -> c.CreateTable:
    seats = tuple((f"P{i}", None) for i in range(4))
    return c.CreateTable(variant="loo", scoring="pool", seats=seats, first_dealer=0,
                         deal="shuffled", options=options)


def test_a_scheduled_job_runs_on_time_when_the_worker_holding_the_scheduler_lock_is_killed(
        db_url: str, store: EventStore, own_redis: RedisServer) -> None:
    """rq's scheduler lock lived 61 s: a worker SIGKILLed holding it left every scheduled
    job (turn timers, webhook retries) waiting for a minute. The lock now lives a few
    seconds past each renewal, so the other worker takes it over and a turn timer that
    falls due after the kill times its seat out within a few seconds of its time."""
    queue = make_queue(own_redis.url, f"loo-sched-{uuid.uuid4().hex[:8]}")
    ledger = Ledger(store, RqDispatcher(queue), seeds=seeded(23))
    procs = [worker_process(db_url, own_redis.url, queue.name, "--reconcile-every", "0")
             for _ in range(2)]
    try:
        with reaped(procs):
            lock_key = RQScheduler.get_locking_key(queue.name)

            def holder() -> Any:
                name = queue.connection.get(lock_key)
                pid = name and queue.connection.hget(f"rq:scheduler:{name.decode()}", "pid")
                return pid and next((p for p in procs if p.pid == int(pid)), None)

            victim = wait_until(holder, timeout=30, what="a worker holding the scheduler lock")
            kill9(victim)
            killed = time.time()
            table_id, _, p = ledger.create_table(_people(turn_seconds=5))
            due = ledger.timer_due(table_id, p)
            assert due is not None and due[1] > killed + 4  # after the kill, by design
            wait_until(lambda: _timed_out(store, table_id), timeout=30,
                       what="the turn timer run by the other worker")
            (timed,) = _timed_out(store, table_id)
            late = datetime.fromisoformat(timed.recorded_at).timestamp() - due[1]
            print(f"timer due {due[1] - killed:.1f} s after the kill ran {late:.2f} s late")
            assert late < 3.0, f"the timer ran {late:.1f} s after its time"
    finally:
        queue.connection.close()


def test_the_scheduler_lock_lives_no_longer_than_its_renewal_at_any_instant(
        own_redis: RedisServer) -> None:
    """A holder may die at any instant, so the scheduler lock must never live more than
    SCHEDULER_LOCK_SECONDS ahead (the test above: the other worker takes over within
    seconds). rq's acquire_locks and heartbeat give it interval + 60 s (61) on every pass,
    which the pass then cut to 3 s one round trip later: a holder killed in between, as the
    test above sometimes found it (the moment it had taken the lock, its first pass), left
    the lock for a minute, and scheduled jobs waited for the overdue requeue (10 s). The
    lock's time to live is read after every Redis reply of a holder's passes and its stop."""
    from workers import worker as loo_worker

    name = f"loo-lock-{uuid.uuid4().hex[:8]}"
    key = RQScheduler.get_locking_key(name)
    probe = redis.Redis.from_url(own_redis.url)
    ttls: list[int] = []

    class Watched(redis.Connection):
        def read_response(self, *args: Any, **kwargs: Any) -> Any:
            response = super().read_response(*args, **kwargs)
            ttls.append(probe.ttl(key))
            return response

    conn = redis.Redis(connection_pool=redis.ConnectionPool.from_url(
        own_redis.url, connection_class=Watched))
    queue = Queue(name, connection=conn, serializer=JSONSerializer)
    maintenance = loo_worker.Maintenance(
        loo_worker.LooWorker([queue], connection=conn, serializer=JSONSerializer), queue,
        reconcile=lambda: None, reconcile_every=0)
    try:
        for _ in range(3):  # the lock taken, then renewed
            maintenance.run_scheduler()
            assert probe.get(key) == maintenance.scheduler.name.encode()
    finally:
        maintenance.stop()
    assert probe.get(key) is None  # let go at the stop
    assert ttls and max(ttls) <= loo_worker.SCHEDULER_LOCK_SECONDS, sorted(set(ttls))
    probe.close()
    conn.close()


def _timed_out(store: EventStore, table_id: str) -> list[Any]:
    return [s for s in store.load(table_id) if s.type == "turn_timed_out"]


def test_jobs_the_api_could_not_enqueue_run_within_10_s_of_its_redis_answering(
        db_url: str, store: EventStore, own_redis: RedisServer) -> None:
    """Only the API loses Redis (its link cut; the worker keeps its own and never notices):
    tables created meanwhile are committed but their jobs are not enqueued. Once the link
    is mended the API hands over what the event store says they owe within seconds; the
    worker's periodic reconcile (an hour here; a minute by default) plays no part."""
    name = f"loo-link-{uuid.uuid4().hex[:8]}"
    link = Link(own_redis.port)
    api = bootstrap(Settings(database_url=db_url, redis_url=link.url, queue_name=name),
                    upgrade=False)
    queue = make_queue(own_redis.url, name)
    worker = worker_process(db_url, own_redis.url, name, "--reconcile-every", "3600")
    try:
        with reaped([worker]):
            wait_until(lambda: SimpleWorker.all(queue=queue), timeout=30,
                       what="the worker up, its reconcile at start done")
            link.cut()
            tables = {}
            for _ in range(3):
                table_id, _, p = api.ledger.create_table(four_bots(auto_deal=True, max_hands=HANDS))
                tables[table_id] = p.version
            assert all(queue.fetch_job(rq_job_id(f"advance:{t}:{v}")) is None
                       for t, v in tables.items()), "a job reached Redis through the cut link"
            assert all(ledger_version(store, t) == v for t, v in tables.items())
            link.mend()
            back = time.monotonic()
            wait_until(lambda: all(ledger_version(store, t) > v for t, v in tables.items()),
                       timeout=10, what="every table the API could not enqueue for moving")
            print(f"{len(tables)} table(s) moved {time.monotonic() - back:.2f} s after the mend")
            wait_until(lambda: all(store.load(t)[-1].type == "table_closed" for t in tables),
                       timeout=120, what="every table's end")
            for t in tables:
                check_table(store, t, hands=HANDS)
    finally:
        api.close()
        link.close()
        queue.connection.close()


def ledger_version(store: EventStore, table_id: str) -> int:
    return store.version(table_id)
