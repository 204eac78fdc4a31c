"""workers/reconcile.py Redelivery: jobs Redis refused in an API process, handed over again
once it answers (no Redis, no database: a fake ledger and ping)."""

from __future__ import annotations

import time
from typing import Any

import redis

from ledger.app.service import JOB_ADVANCE, JOB_TIME_OUT
from workers.reconcile import Redelivery


class FakeLedger:
    def __init__(self) -> None:
        self.dispatched: list[str] = []
        self.enqueued: list[tuple[str, tuple[Any, ...], str]] = []
        self.dispatcher = self
        self.refuse = 0  # how many more handovers Redis refuses (through `missed`)
        self.redelivery: Redelivery | None = None

    def dispatch(self, table_id: str) -> bool:
        if self.refuse > 0:
            self.refuse -= 1
            assert self.redelivery is not None
            self.redelivery.missed(JOB_ADVANCE, (table_id, 9), f"advance:{table_id}:9")
            return False
        self.dispatched.append(table_id)
        return True

    def enqueue(self, func_path: str, *args: Any, job_id: str) -> bool:
        self.enqueued.append((func_path, args, job_id))
        return True


class Ping:
    def __init__(self, down: int) -> None:
        self.down = down
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1
        if self.calls <= self.down:
            raise redis.ConnectionError("down")


def _until(done: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "not within the deadline"
        time.sleep(0.005)


def test_a_refused_tables_jobs_are_dispatched_once_from_the_store_when_redis_answers() -> None:
    """Jobs of one table (its bot run and its timer) are one dispatch of the table as the
    store has it then; another job (a club's webhook run) is enqueued again as it was."""
    ledger, ping = FakeLedger(), Ping(down=3)
    r = Redelivery(ledger, ping, every=0.01)  # type: ignore[arg-type]
    r.missed(JOB_ADVANCE, ("t1", 4), "advance:t1:4")
    r.missed(JOB_TIME_OUT, ("t1", 5), "timeout:t1:5")
    r.missed("workers.webhooks.for_club", ("club_a",), "webhooks:club_a")
    _until(lambda: r.owed() == 0 and ledger.dispatched)
    assert ping.calls >= 4  # not before Redis answered
    assert ledger.dispatched == ["t1"]
    assert ledger.enqueued == [("workers.webhooks.for_club", ("club_a",), "webhooks:club_a")]
    _until(lambda: r._thread is None)  # the thread ended: nothing left to hand over


def test_jobs_redis_refuses_again_are_tried_again_less_and_less_often() -> None:
    ledger, ping = FakeLedger(), Ping(down=0)
    r = Redelivery(ledger, ping, every=0.01)  # type: ignore[arg-type]
    ledger.redelivery, ledger.refuse = r, 3
    r.missed(JOB_ADVANCE, ("t2", 9), "advance:t2:9")
    _until(lambda: ledger.dispatched == ["t2"])
    assert ping.calls == 4 and r.owed() == 0  # three refusals, then handed over


def test_nothing_is_handed_over_after_close() -> None:
    ledger, ping = FakeLedger(), Ping(down=10**9)
    r = Redelivery(ledger, ping, every=0.01)  # type: ignore[arg-type]
    r.missed(JOB_ADVANCE, ("t3", 1), "advance:t3:1")
    _until(lambda: ping.calls >= 2)
    r.close()
    _until(lambda: r._thread is None)  # the thread ended: nothing left to hand over
    assert ledger.dispatched == [] and r.owed() == 1
