"""Nothing lost on a crash: find tables waiting on a worker and enqueue their job again.

If a worker dies mid-job, or the API dies between commit and enqueue, the table sits
waiting on a bot or a settlement. The job id is deterministic (table and version), so
enqueueing again for a table whose job is still queued is a no-op.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger import handlers

if TYPE_CHECKING:
    from ledger.service import Ledger


def waiting_tables(ledger: Ledger) -> list[str]:
    """Tables whose next step belongs to the workers (a settlement or a bot's turn)."""
    out = []
    for table_id in ledger.store.table_ids():
        p = ledger.load(table_id)
        if handlers.next_command(p) is not None:
            out.append(table_id)
    return out


def reconcile(ledger: Ledger) -> int:
    """Enqueue the job of every waiting table; returns how many were enqueued."""
    count = 0
    for table_id in waiting_tables(ledger):
        if ledger.dispatch(table_id):
            count += 1
    return count
