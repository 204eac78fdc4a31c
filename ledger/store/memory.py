"""In-memory event store for unit tests: the same contract, no persistence."""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from ledger.store.base import (
    AlreadyApplied,
    IdempotencyConflict,
    IdempotentResult,
    NewEvent,
    StoredEvent,
    VersionConflict,
)
from ledger.store.hashing import GENESIS, event_hash


class MemoryStore:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tables: dict[str, list[StoredEvent]] = {}
        self._all: list[StoredEvent] = []
        self._keys: dict[tuple[str, str], IdempotentResult] = {}

    def upgrade(self) -> None:
        return None

    def append(self, table_id: str, events: Sequence[NewEvent], expected_version: int, *,
               idempotency_key: str | None = None,
               request_hash: str | None = None) -> list[StoredEvent]:
        with self._lock:
            if idempotency_key is not None:
                found = self._keys.get((table_id, idempotency_key))
                if found is not None:
                    if found.request_hash != request_hash:
                        raise IdempotencyConflict(idempotency_key)
                    raise AlreadyApplied(found)
            rows = self._tables.setdefault(table_id, [])
            if len(rows) != expected_version:
                raise VersionConflict(table_id, expected_version, len(rows))
            prev = rows[-1].hash if rows else GENESIS
            out = []
            for i, e in enumerate(events):
                version = expected_version + i + 1
                at = e.recorded_at or datetime.now(UTC).isoformat(timespec="microseconds")
                data = copy.deepcopy(e.data)
                h = event_hash(prev, table_id, version, e.type, e.hand, data, e.causation, at)
                out.append(StoredEvent(table_id, version, len(self._all) + i + 1, e.type, e.hand,
                                       data, at, e.causation, prev, h))
                prev = h
            rows.extend(out)
            self._all.extend(out)
            if idempotency_key is not None and out:
                self._keys[(table_id, idempotency_key)] = IdempotentResult(
                    idempotency_key, request_hash or "", out[0].version, out[-1].version)
            return list(out)

    def load(self, table_id: str, after_version: int = 0,
             up_to_version: int | None = None) -> list[StoredEvent]:
        rows = self._tables.get(table_id, [])
        return rows[after_version:up_to_version]

    def version(self, table_id: str) -> int:
        return len(self._tables.get(table_id, []))

    def read_all(self, after_position: int = 0, limit: int = 1000) -> list[StoredEvent]:
        return self._all[after_position : after_position + limit]

    def idempotent_result(self, table_id: str, key: str) -> IdempotentResult | None:
        return self._keys.get((table_id, key))

    def table_ids(self) -> list[str]:
        return list(self._tables)

    def ping(self) -> dict[str, Any]:
        return {"backend": "memory"}

    def close(self) -> None:
        return None
