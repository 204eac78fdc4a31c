"""Nothing lost on a crash: find tables waiting on a worker and enqueue their job again.

If a worker dies mid-job, or the API dies between commit and enqueue, the table sits
waiting on a bot or a settlement. The job id is deterministic (table and version), so
enqueueing again for a table whose job is still queued is a no-op.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING

from ledger.app import handlers
from ledger.app.projector import project

if TYPE_CHECKING:
    from ledger.app.service import Ledger

# Per ledger: the version at which each table was last found not waiting on a worker.
# Whether a table waits is a function of its events, so an unchanged version needs no
# fold: a pass then costs one version probe per table, instead of folding every table
# ever played (the ledger's cache holds 2000 and is cleared beyond, so those folds would
# be full replays, every pass, and would evict the tables the jobs are playing).
_idle: weakref.WeakKeyDictionary[Ledger, dict[str, int]] = weakref.WeakKeyDictionary()
_idle_lock = threading.Lock()


def waiting_tables(ledger: Ledger) -> list[str]:
    """Tables whose next step belongs to the workers (a settlement or a bot's turn)."""
    with _idle_lock:
        idle = _idle.setdefault(ledger, {})
    out = []
    for table_id in ledger.store.table_ids():
        known = idle.get(table_id)
        if known is not None and ledger.store.version(table_id) == known:
            continue
        # An idle table is folded outside the ledger's cache, to keep the jobs' tables there.
        cached = ledger.cached(table_id) is not None
        p = ledger.load(table_id) if cached else project(ledger.store.load(table_id))
        if handlers.next_command(p) is not None:
            idle.pop(table_id, None)
            out.append(table_id)
        else:
            idle[table_id] = p.version
    return out


def reconcile(ledger: Ledger) -> int:
    """Enqueue the job of every waiting table; returns how many tables were waiting (a job
    still queued or running under the same id is not enqueued twice)."""
    count = 0
    for table_id in waiting_tables(ledger):
        if ledger.dispatch(table_id):
            count += 1
    return count
