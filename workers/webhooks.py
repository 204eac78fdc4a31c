"""Webhook delivery jobs (ledger/app/webhooks.py does the work).

- RQ: every commit of a club enqueues `for_club(club_id)` (one job id per club, so a burst
  of moves queues one job), which makes sure each endpoint has a `deliver(club_id,
  webhook_id)` job that has not started yet (`wake`): one queued already reads the new
  events; while one runs (it may be past its last read) the next is enqueued to follow it
  (rq's depends_on: enqueued when the running one ends, atomically with its end). A failed
  attempt schedules the same job at its retry time (rq's scheduler, `loo worker` runs it);
  `sweep` (the worker's reconciler) enqueues every endpoint again (what a dead worker or
  Redis outage left owed).
- Embedded default: `InlineWebhooks` runs the very same `deliver` in this process, on a
  few threads of its own (never the request's), with a timer for each due retry.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ledger.app.service import Ledger

log = logging.getLogger(__name__)
JOB_FOR_CLUB = "workers.webhooks.for_club"
JOB_DELIVER = "workers.webhooks.deliver"
BUSY_AGAIN = 1.0  # seconds before an endpoint held by another run is looked at again


def _ledger(ledger: Ledger | None) -> Ledger:
    from workers.runtime import current_ledger

    return ledger or current_ledger()


def _live(led: Ledger, club_id: str) -> list[str]:
    from ledger.app.clubs import Clubs

    try:
        club = Clubs(led).load(club_id).club
    except Exception:  # noqa: BLE001 - no such club: nothing to deliver
        return []
    # A disabled endpoint (its receiver answered 410) gets no run until it is enabled.
    return [w.id for w in club.webhooks if not w.removed and w.disabled is None]


def for_club(club_id: str, *, ledger: Ledger | None = None) -> int:
    """RQ: make sure each of the club's endpoints has a delivery job yet to start (`wake`)."""
    led = _ledger(ledger)
    ids = _live(led, club_id)
    for wid in ids:
        wake(led.dispatcher, club_id, wid)
    return len(ids)


# An endpoint's delivery jobs take turns between two ids, so that the next run can wait for
# the one running under the other (rq refuses a second job under the id of a live one).
RUN_IDS = ("webhook:{}", "webhook-next:{}")


def wake(dispatcher: Any, club_id: str, webhook_id: str) -> None:
    """After a commit: a delivery run of the endpoint that starts after it, so it reads it.

    A queued (or deferred, or scheduled) run will; a running one may be past its last read,
    so the next run is enqueued to follow it (depends_on: rq enqueues it as the running one
    ends, or at once if it has ended meanwhile). Without this an event committed just after
    a run's last read waited for the next commit or the reconciler's sweep."""
    first = RUN_IDS[0].format(webhook_id)
    queue = getattr(dispatcher, "queue", None)
    if queue is None:  # not RQ (tests' inline dispatcher): one job, run at once
        dispatcher.enqueue(JOB_DELIVER, club_id, webhook_id, job_id=first)
        return
    import redis

    try:
        _wake_rq(dispatcher, queue, club_id, webhook_id)
    except redis.RedisError as err:  # the reconciler's sweep enqueues it again
        log.error("webhook %s: no delivery job enqueued (%s)", webhook_id, err)


def _wake_rq(dispatcher: Any, queue: Any, club_id: str, webhook_id: str) -> None:
    from rq.job import JobStatus

    from workers.queue import RETRY_INTERVALS, RETRY_MAX, forget, rq_job_id

    ids = [rq_job_id(pattern.format(webhook_id)) for pattern in RUN_IDS]
    jobs = [queue.fetch_job(jid) for jid in ids]
    states = [job.get_status(refresh=False) if job is not None else None for job in jobs]
    if any(s in (JobStatus.QUEUED, JobStatus.DEFERRED, JobStatus.SCHEDULED) for s in states):
        return  # a run that has not started yet reads everything committed so far
    running = [i for i, s in enumerate(states) if s == JobStatus.STARTED]
    if not running:
        dispatcher.enqueue(JOB_DELIVER, club_id, webhook_id,
                           job_id=RUN_IDS[0].format(webhook_id))
        return
    if len(running) == 2:
        return  # two runs at once: one holds no lease and looks again within BUSY_AGAIN
    free = 1 - running[0]
    if jobs[free] is not None:
        forget(jobs[free])  # ended: its id is taken again
    from rq import Retry
    from rq.job import Dependency

    # allow_failure: a run that raised (the store down) is followed all the same.
    queue.enqueue(JOB_DELIVER, club_id, webhook_id, job_id=ids[free],
                  depends_on=Dependency(ids[running[0]], allow_failure=True),
                  retry=Retry(max=RETRY_MAX, interval=RETRY_INTERVALS),
                  description=f"{JOB_DELIVER}{(club_id, webhook_id)!r} after {ids[running[0]]}")


def deliver(club_id: str, webhook_id: str, *, ledger: Ledger | None = None) -> str:
    """Deliver what the endpoint is owed; on a failure schedule this job at its retry."""
    from ledger.app.clubs import Clubs
    from ledger.app.webhooks import WebhookConfig
    from ledger.app.webhooks import deliver as run

    led = _ledger(ledger)
    try:
        club = Clubs(led).load(club_id).club
    except Exception:  # noqa: BLE001
        return "removed"
    result = run(led, club, club_id, webhook_id, WebhookConfig.from_env(), attempted=_count)
    if result.state in ("retry", "busy") and result.retry_at is not None:
        # A failed attempt: at its retry time. Held by another run (one that may have died
        # with its worker, its lease running out): look again soon.
        from rq import get_current_job

        job = get_current_job()
        if job is not None:
            from rq import Queue

            queue = Queue(job.origin, connection=job.connection, serializer=job.serializer)
            at = result.retry_at if result.state == "retry" else \
                min(result.retry_at, time.time() + BUSY_AGAIN)
            delay = max(0.0, at - time.time())
            # A new job id: this one is still running and would refuse its own duplicate.
            queue.enqueue_in(timedelta(seconds=delay), JOB_DELIVER, club_id, webhook_id,
                             job_id=f"webhook-retry_{webhook_id}_{int(at)}")
    return result.state


def _count(sent: Any) -> None:
    """Every attempt, in /metrics (loo_webhook_deliveries_total{outcome})."""
    from ledger.metrics import count_webhook_attempt

    count_webhook_attempt(sent.status)


def rq_trigger(dispatcher: Any) -> Any:
    """What a commit of a club calls under RQ: one `for_club` job per club while queued."""
    def trigger(club_id: str) -> None:
        dispatcher.enqueue(JOB_FOR_CLUB, club_id, job_id=f"webhooks:{club_id}")
    return trigger


def sweep(led: Ledger) -> int:
    """Enqueue every live endpoint of every club (the reconciler's pass)."""
    count = 0
    for stream in led.store.table_ids():
        if stream.startswith("club_"):
            count += for_club(stream, ledger=led)
    return count


class InlineWebhooks:
    """The embedded default's delivery: `kick(club_id)` after a commit; runs `deliver` on
    a small pool of threads (one run per endpoint at a time) and wakes for due retries."""

    def __init__(self, ledger: Ledger, threads: int = 4) -> None:
        self.ledger = ledger
        self.threads = threads
        self._cond = threading.Condition()
        self._clubs: set[str] = set()
        self._timers: list[tuple[float, str, str]] = []
        self._running: set[str] = set()
        self._again: set[str] = set()
        self._thread: threading.Thread | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._next_sweep = time.time() + self.SWEEP
        self._stopped = False

    SWEEP = 60.0  # seconds between passes over every club (what a restart left owed)

    def start(self) -> None:
        """Begin now (a serving process): the first sweep finds what was owed before."""
        with self._cond:
            self._next_sweep = 0.0
        self.kick(None)

    def stop(self) -> None:
        """End the loop (the container is closing: its store goes away)."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def kick(self, club_id: str | None) -> None:
        with self._cond:
            if self._stopped:
                return
            if club_id is not None:
                self._clubs.add(club_id)
            if self._thread is None or not self._thread.is_alive():
                self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="loo-webhook")
                self._thread = threading.Thread(target=self._loop, name="loo-webhooks",
                                                daemon=True)
                self._thread.start()
            self._cond.notify()

    def _loop(self) -> None:
        while True:
            with self._cond:
                if self._stopped:
                    return
                wait = max(0.0, self._next_sweep - time.time())
                if self._timers:
                    wait = max(0.0, min(wait, self._timers[0][0] - time.time()))
                if not self._clubs and wait > 0:
                    self._cond.wait(wait)
                clubs, self._clubs = self._clubs, set()
                sweep_now = time.time() >= self._next_sweep
                if sweep_now:
                    self._next_sweep = time.time() + self.SWEEP
                due = []
                while self._timers and self._timers[0][0] <= time.time():
                    due.append(heapq.heappop(self._timers)[1:])
            if sweep_now:
                try:
                    clubs |= {t for t in self.ledger.store.table_ids() if t.startswith("club_")}
                except Exception:  # noqa: BLE001 - the store is down or closed: next time
                    log.warning("webhooks: the sweep could not list the clubs", exc_info=True)
            for club_id in clubs:
                for wid in _live(self.ledger, club_id):
                    self._submit(club_id, wid)
            for club_id, wid in due:
                self._submit(club_id, wid)

    def _submit(self, club_id: str, wid: str) -> None:
        with self._cond:
            if self._stopped:
                return
            if wid in self._running:
                self._again.add(wid)  # runs once more when the current run ends
                return
            self._running.add(wid)
        assert self._pool is not None
        self._pool.submit(self._run, club_id, wid)

    def _run(self, club_id: str, wid: str) -> None:
        result: Any = None
        try:
            from ledger.app.clubs import Clubs
            from ledger.app.webhooks import WebhookConfig
            from ledger.app.webhooks import deliver as run

            club = Clubs(self.ledger).load(club_id).club
            result = run(self.ledger, club, club_id, wid, WebhookConfig.from_env(),
                         attempted=_count)
        except Exception:
            log.exception("webhook %s: delivery run failed", wid)
        with self._cond:
            self._running.discard(wid)
            again = wid in self._again
            self._again.discard(wid)
            if result is None or result.state == "busy":
                # Failed (the store, say) or held by another process: look again soon.
                heapq.heappush(self._timers, (time.time() + BUSY_AGAIN, club_id, wid))
                self._cond.notify()
            elif result.retry_at is not None:
                heapq.heappush(self._timers, (result.retry_at, club_id, wid))
                self._cond.notify()
        if again:
            self._submit(club_id, wid)
