"""What the application layer hands its callers besides views: the outcomes and failures of
its writes. The entry points (API, CLI) import them from here, never from the store."""

from __future__ import annotations

from ledger.store.base import (
    AlreadyApplied,
    IdempotencyConflict,
    IdempotentResult,
    StoredEvent,
    StoreUnavailable,
    VersionConflict,
)

__all__ = ["AlreadyApplied", "IdempotencyConflict", "IdempotentResult", "StoreUnavailable",
           "StoredEvent", "VersionConflict"]
