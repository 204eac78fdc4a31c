"""RQ job functions: importable, idempotent, primitive arguments (STYLE.md habit 6).

The embedded default calls the very same functions in-process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ledger.service import Ledger


def advance(table_id: str, expected_version: int, *, ledger: Ledger | None = None) -> str:
    """Settle the hand and/or play consecutive bot turns until a person must act.

    A job that runs twice or late finds another version and changes nothing ("stale").
    """
    from workers.runtime import current_ledger

    return (ledger or current_ledger()).advance(table_id, expected_version)
