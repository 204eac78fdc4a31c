"""RQ job functions: importable, idempotent, primitive arguments (STYLE.md habit 6).

The embedded default calls the very same functions in-process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ledger.app.service import Ledger


def advance(table_id: str, expected_version: int, *, ledger: Ledger | None = None) -> str:
    """Settle the hand and/or play consecutive bot turns until a person must act.

    A job that runs twice or late finds another version and changes nothing ("stale").
    """
    from workers.runtime import current_ledger

    led = ledger or current_ledger()
    result = led.advance(table_id, expected_version)
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
    return led.time_out(table_id, expected_version)
