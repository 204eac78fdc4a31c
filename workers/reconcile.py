"""Nothing lost on a crash: find tables waiting on a worker and enqueue their job again.

If a worker dies mid-job, or the API dies between commit and enqueue, the table sits
waiting on a bot or a settlement. The job id is deterministic (table and version), so
enqueueing again for a table whose job is still queued is a no-op.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

import redis

from ledger.app import handlers
from ledger.app.projector import Projection, project
from ledger.app.service import JOB_ADVANCE, JOB_TIME_OUT

if TYPE_CHECKING:
    from ledger.app.service import Ledger

# Per ledger: the version at which each table was last found not waiting on a worker.
# Whether a table waits is a function of its events, so an unchanged version needs no
# fold: a pass then costs one version probe per table, instead of folding every table
# ever played (the ledger's cache holds 2000 and is cleared beyond, so those folds would
# be full replays, every pass, and would evict the tables the jobs are playing).
_idle: weakref.WeakKeyDictionary[Ledger, dict[str, int]] = weakref.WeakKeyDictionary()
_idle_lock = threading.Lock()
log = logging.getLogger(__name__)


def waiting_tables(ledger: Ledger) -> list[str]:
    """Tables whose next step belongs to the workers (a settlement or a bot's turn)."""
    return _scan(ledger)[0]


def timed_tables(ledger: Ledger) -> list[tuple[str, Projection]]:
    """Tables where a person is to act on the clock (options.turn_seconds), as folded."""
    return _scan(ledger)[1]


def _scan(ledger: Ledger) -> tuple[list[str], list[tuple[str, Projection]]]:
    with _idle_lock:
        idle = _idle.setdefault(ledger, {})
    out = []
    timed = []
    for table_id in ledger.store.table_ids():
        try:
            known = idle.get(table_id)
            if known is not None and ledger.store.version(table_id) == known:
                continue
            # An idle table is folded outside the ledger's cache, to keep the jobs' tables
            # there.
            cached = ledger.cached(table_id) is not None
            p = ledger.load(table_id) if cached else project(ledger.store.load(table_id))
        except Exception:  # one table that cannot be read must not hide the others
            log.exception("reconcile: table %s not read", table_id)
            continue
        if handlers.next_command(p) is not None:
            idle.pop(table_id, None)
            out.append(table_id)
        elif handlers.timer_owed(p) is not None:
            idle.pop(table_id, None)
            timed.append((table_id, p))
        else:
            idle[table_id] = p.version
    return out, timed


class Reconciled(NamedTuple):
    """One pass: tables waiting on a job, jobs enqueued by this pass (a job still queued,
    scheduled or running under the same id is not enqueued again), and tables whose job or
    timer could not be handed over (logged; the next pass tries again)."""

    waiting: int
    enqueued: int
    failed: int


def reconcile(ledger: Ledger) -> Reconciled:
    """Enqueue the job of every waiting table, and schedule the turn timer of every table
    where a person is on the clock (a lost timer is scheduled again, from the time the turn
    began). Each table is its own step: one that raises is logged and the pass goes on."""
    jobs, timed = _scan(ledger)
    enqueued = failed = 0
    for table_id in jobs:
        try:
            if ledger.dispatch(table_id):
                enqueued += 1
        except Exception:
            log.exception("reconcile: table %s: job not enqueued", table_id)
            failed += 1
    for table_id, p in timed:
        try:
            ledger.schedule_timer(table_id, p)
        except Exception:
            log.exception("reconcile: table %s: timer not scheduled", table_id)
            failed += 1
    return Reconciled(len(jobs), enqueued, failed)


def recover_timers(ledger: Ledger) -> int:
    """At start-up: schedule the turn timer every stored table owes (a restarted server
    still times out a seat; one whose time has passed is timed out at once). Returns how
    many were scheduled."""
    count = 0
    for table_id, p in timed_tables(ledger):
        try:
            count += ledger.schedule_timer(table_id, p)
        except Exception:
            log.exception("timer of table %s not scheduled", table_id)
    return count


REDELIVER_EVERY = 0.2  # seconds between pings of Redis while a job of this process is owed
REDELIVER_MAX = 30.0  # at most this long between tries when Redis answers yet refuses them


class Redelivery:
    """The jobs Redis refused in this process (an API's), handed over as soon as it answers.

    A move commits, then its job is enqueued; when Redis cannot be reached the move stands
    and the table waits. A worker that lost Redis too reconciles when it answers again
    (workers/worker.py), but one that never lost it would leave the table to its next
    periodic pass (a minute). So while anything is owed here, a thread pings Redis every
    REDELIVER_EVERY seconds, and once it answers enqueues what the event store says each
    of those tables owes by then (their events are the outbox: the job for the version
    the table has reached, and its turn timer) and the other jobs (a club's webhook run)
    as they were. Job ids are deterministic: a job the worker enqueued meanwhile is not
    doubled. Should this process die first, a worker's periodic reconcile finds them.
    """

    def __init__(self, ledger: Ledger, ping: Callable[[], Any],
                 every: float = REDELIVER_EVERY) -> None:
        self.ledger, self.ping, self.every = ledger, ping, every
        self._owed: dict[tuple[str, str], tuple[str, tuple[Any, ...], str]] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._closed = threading.Event()

    def missed(self, func_path: str, args: tuple[Any, ...], job_id: str) -> None:
        """The dispatcher could not reach Redis for this job (RqDispatcher.on_unreachable)."""
        table_job = func_path in (JOB_ADVANCE, JOB_TIME_OUT) and args
        key = ("table", str(args[0])) if table_job else ("job", job_id)
        with self._lock:
            self._owed[key] = (func_path, args, job_id)
            if self._thread is None and not self._closed.is_set():
                self._thread = threading.Thread(target=self._loop, name="loo-redelivery",
                                                daemon=True)
                self._thread.start()

    def owed(self) -> int:
        with self._lock:
            return len(self._owed)

    def close(self) -> None:
        self._closed.set()

    def _loop(self) -> None:
        delay = self.every
        while not self._closed.wait(delay):
            try:
                self.ping()
            except redis.RedisError:
                continue
            with self._lock:
                owed, self._owed = self._owed, {}
            log.warning("Redis answers again: handing over %d job(s) it refused here",
                        len(owed))
            for (kind, subject), (func_path, args, job_id) in owed.items():
                # A job Redis refuses again comes back through `missed`; any other error
                # (the store) is logged and left to the workers' periodic reconcile.
                try:
                    if kind == "table":
                        self.ledger.dispatch(subject)
                    else:
                        self.ledger.dispatcher.enqueue(  # type: ignore[union-attr]
                            func_path, *args, job_id=job_id)
                except Exception:
                    log.exception("redelivery of %s failed", job_id)
            with self._lock:
                if not self._owed:
                    self._thread = None
                    return
            # Redis answers a ping but refused these again (an error of its own, not an
            # outage): try less and less often rather than five times a second.
            delay = min(delay * 2, REDELIVER_MAX)
        with self._lock:
            self._thread = None
