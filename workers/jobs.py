"""RQ job functions: importable, idempotent, primitive arguments (STYLE.md habit 6).

The embedded default calls the very same functions in-process.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ledger.app.service import Ledger

log = logging.getLogger(__name__)


# An RQ job goes on with a long all-bot run (a batch of MAX_STEPS steps, one append each)
# for this long before it hands the rest to a fresh job. A fresh job may land on another
# worker, whose cached table is then behind by the whole batch and must read and fold it
# again (about a fifth more CPU per hand, measured with bench/profile_workers.py --cold);
# this long, it still leaves other tables' jobs little to wait for.
RUN_SECONDS = 0.5


def advance(table_id: str, expected_version: int, *, ledger: Ledger | None = None) -> str:
    """Settle the hand and/or play consecutive bot turns until a person must act.

    A job that runs twice or late finds another version and changes nothing ("stale").
    """
    from workers.runtime import current_ledger

    led = ledger or current_ledger()
    job = _current_job()
    if job is None:  # in-process: the request's own context carries its id already
        return _advance(led, table_id, expected_version)
    from ledger.observe import bound

    # The id of the request that caused this job (its meta), on the job's log lines.
    with bound((job.meta or {}).get("request_id")):
        result = _advance(led, table_id, expected_version, RUN_SECONDS)
        log.info("job %s: table %s from version %d: %s", job.id, table_id, expected_version,
                 result)
        return result


def _current_job() -> Any:
    from rq import get_current_job

    return get_current_job()


def _advance(led: Ledger, table_id: str, expected_version: int,
             run_seconds: float = 0.0) -> str:
    """`led.advance`, batch after batch while `run_seconds` last (in-process: one batch,
    the caller's thread is a request's); then the rest is handed to a fresh job."""
    deadline = time.monotonic() + run_seconds
    result = led.advance(table_id, expected_version, hand_over=run_seconds <= 0)
    while result == "more":
        p = led.cached(table_id) or led.load(table_id)  # the version the batch reached
        if time.monotonic() >= deadline:
            led.dispatch(table_id, p)
            return "continued"
        result = led.advance(table_id, p.version, hand_over=False)
    if result == "stale" and _is_retry():
        # "Stale" trusts whoever moved the table to carry on, but a failed earlier attempt
        # of this very job may have made the moves (a connection lost after some appends)
        # and died: no job then exists for the version it reached. Enqueue that job; its
        # deterministic id makes this a no-op if another writer's is queued or running.
        led.dispatch(table_id)
    return result


def _is_retry() -> bool:
    """This run is an RQ retry of a job that failed or was abandoned (never in-process)."""
    from rq import get_current_job

    from workers.queue import RETRY_MAX

    job = get_current_job()
    return job is not None and job.retries_left is not None and job.retries_left < RETRY_MAX


def time_out(table_id: str, expected_version: int, *, ledger: Ledger | None = None) -> str:
    """A turn timer (options.turn_seconds): act for the seat to act at `expected_version`.

    Scheduled with a job id naming the table and version; a move made first (or this very
    job run twice) finds another version and changes nothing ("stale").
    """
    from workers.runtime import current_ledger

    led = ledger or current_ledger()
    job = _current_job()
    if job is None:
        return led.time_out(table_id, expected_version)
    from ledger.observe import bound

    with bound((job.meta or {}).get("request_id")):  # the move that started the clock
        result = led.time_out(table_id, expected_version)
        log.info("job %s: timer of table %s at version %d: %s", job.id, table_id,
                 expected_version, result)
        return result
