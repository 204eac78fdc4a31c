"""Helpers for the worker tests: unique queues, burst workers, deadlines, table checks."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from rq import Queue, SimpleWorker
from rq.timeouts import TimerDeathPenalty

from bench.workers import purge_queue
from ledger.app.audit import audit
from ledger.app.projector import chip_ledger, project
from ledger.app.service import Ledger
from ledger.core import commands as c
from ledger.store.base import EventStore
from workers.queue import make_queue

LOO = os.path.join(os.path.dirname(sys.executable), "loo")


def four_bots(**options: Any) -> c.CreateTable:
    """A shuffled 4-seat pool table whose every seat is the heuristic bot; the test starts
    each hand itself unless it asks for auto_deal (which plays hand after hand)."""
    options.setdefault("auto_deal", False)
    seats = tuple((f"Bot {i}", "heuristic") for i in range(4))
    return c.CreateTable(variant="loo", scoring="pool", seats=seats, first_dealer=0,
                         deal="shuffled", options=options)


@contextmanager
def unique_queue(redis_url: str) -> Iterator[Queue]:
    """A queue no other test sees; its jobs and registries are removed afterwards."""
    queue = make_queue(redis_url, f"loo-test-{uuid.uuid4().hex[:12]}")
    try:
        yield queue
    finally:
        purge_queue(queue)
        queue.connection.close()


class ThreadWorker(SimpleWorker):
    """A SimpleWorker that can run outside the main thread (no signals: timer timeouts)."""

    death_penalty_class = TimerDeathPenalty

    def _install_signal_handlers(self) -> None:
        pass  # signal.signal() works only in the main thread


def drain(queue: Queue, workers: int = 1) -> None:
    """Run `workers` burst workers at once over the queue until it is empty."""
    def run() -> None:
        ThreadWorker([queue], connection=queue.connection,
                     serializer=queue.serializer).work(burst=True, logging_level="WARNING")

    if workers == 1:
        run()
        return
    threads = [threading.Thread(target=run) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive(), "a burst worker did not finish"


def wait_until(predicate: Callable[[], Any], timeout: float = 20.0, what: str = "") -> Any:
    """Poll `predicate` until it is truthy or the deadline passes (never a fixed sleep)."""
    deadline = time.monotonic() + timeout
    delay = 0.002
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def hand_done(ledger: Ledger, table_id: str) -> bool:
    """The current hand is settled (nothing left for the workers)."""
    t = ledger.load(table_id).table
    return t.hand is not None and t.settled


def play_hands(ledger: Ledger, table_id: str, hands: int,
               run_jobs: Callable[[], None] = lambda: None) -> None:
    """Play until `hands` hands are settled: StartHand each hand, then let the jobs run."""
    while True:
        t = ledger.load(table_id).table
        number = t.hand.number if t.hand is not None else 0
        if t.hand is not None and not t.settled:
            run_jobs()  # the auto-dealt first hand, or one already started
            wait_until(lambda: hand_done(ledger, table_id), what=f"hand {number} settled")
            continue
        if number >= hands:
            return
        ledger.execute(table_id, c.StartHand())


def check_table(store: EventStore, table_id: str, hands: int | None = None) -> dict[str, Any]:
    """No double move or settlement: contiguous versions, one settlement and one move per turn."""
    stored = store.load(table_id)
    assert [e.version for e in stored] == list(range(1, len(stored) + 1))
    settled = Counter(e.hand for e in stored if e.type == "hand_settled")
    started = [e.hand for e in stored if e.type == "hand_started"]
    assert started == list(range(1, len(started) + 1))
    # Every hand settled once, but the last, which may still be live (or waiting).
    assert all(settled[h] == 1 for h in started[:-1]) and max(settled.values()) == 1, settled
    if hands is not None:
        assert len(started) == hands and settled[hands] == 1
    # A seat decides once per hand and never plays the same tile twice.
    decided = Counter((e.hand, e.data["seat"]) for e in stored if e.type == "player_decided")
    assert max(decided.values(), default=1) == 1, decided
    played = Counter((e.hand, e.data["tile"]) for e in stored if e.type == "tile_played")
    assert max(played.values(), default=1) == 1, played
    p = project(stored)
    book = chip_ledger(stored, p.table.players)
    assert sum(book["balances"].values()) == 0
    report = audit(stored)
    assert report["ok"], report
    return book


@contextmanager
def hold_version(database_url: str, table_id: str, version: int) -> Iterator[psycopg.Connection]:
    """Block the append that would write `version` of the table, until the block ends.

    An uncommitted row with that primary key makes a concurrent append of the same
    (table, version) wait for this transaction; rolling back leaves no trace.
    """
    conn = psycopg.connect(database_url)
    try:
        conn.execute(
            "INSERT INTO events (table_id, version, position, type, data, recorded_at, "
            "prev_hash, hash) VALUES (%s, %s, -1, 'held', '{}', '', '', '')",
            (table_id, version))
        yield conn
    finally:
        conn.rollback()
        conn.close()


def blocked_backends(conn: psycopg.Connection) -> list[int]:
    """Backends of this database waiting on a lock (other than the given connection)."""
    # pg_stat_activity is read once per transaction, and `conn` is inside one (the hold):
    # look again each time.
    conn.execute("SELECT pg_stat_clear_snapshot()")
    rows = conn.execute(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()").fetchall()
    return [r[0] for r in rows]


def worker_process(database_url: str, redis_url: str, queue_name: str,
                   *args: str) -> subprocess.Popen[bytes]:
    """A real `loo worker` process on the given queue."""
    env = {**os.environ, "DATABASE_URL": database_url, "REDIS_URL": redis_url,
           "LOO_QUEUE_PREFIX": queue_name, "LOO_LOG_LEVEL": os.environ.get("DBG_LEVEL", "WARNING")}
    # A session of its own: kill9 takes the worker with its rq scheduler child.
    return subprocess.Popen([LOO, "worker", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, start_new_session=True)


def kill9(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the worker and its children: no handler runs, nothing is cleaned up."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)


def worker_output(proc: subprocess.Popen[bytes], tail: int = 30000) -> str:
    """The end of a worker's output (killed first if it still runs)."""
    if proc.poll() is None:
        kill9(proc)
    assert proc.stdout is not None
    return proc.stdout.read().decode(errors="replace")[-tail:]


@contextmanager
def reaped(procs: list[subprocess.Popen[bytes] | None]) -> Iterator[None]:
    """Worker processes a test started (None: not started yet): their output printed if the
    test fails, and every one still running killed at the end, whatever happened."""
    try:
        yield
    except BaseException:
        for proc in procs:
            if proc is not None:
                print(worker_output(proc))
        raise
    finally:
        for proc in procs:
            if proc is not None and proc.poll() is None:
                kill9(proc)


def seeded(seed: int) -> Callable[[], bytes]:
    """Deterministic deal seeds: the same games on every run."""
    rng = random.Random(seed)
    return lambda: rng.randbytes(32)
