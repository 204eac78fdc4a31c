"""The event store contract: game-agnostic, append-only, hash-chained, optimistic."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class NewEvent:
    type: str
    hand: int | None
    data: dict[str, Any]
    causation: str | None = None
    recorded_at: str | None = None


@dataclass(frozen=True, slots=True)
class StoredEvent:
    table_id: str
    version: int
    position: int
    type: str
    hand: int | None
    data: dict[str, Any] = field(hash=False)
    recorded_at: str
    causation: str | None
    prev_hash: str
    hash: str


@dataclass(frozen=True, slots=True)
class IdempotentResult:
    key: str
    request_hash: str
    first_version: int
    last_version: int


class StoreError(Exception):
    pass


class VersionConflict(StoreError):
    def __init__(self, table_id: str, expected: int, actual: int) -> None:
        super().__init__(f"table {table_id}: expected version {expected}, it is at {actual}")
        self.table_id, self.expected, self.actual = table_id, expected, actual


class IdempotencyConflict(StoreError):
    pass


class AlreadyApplied(StoreError):
    def __init__(self, result: IdempotentResult) -> None:
        super().__init__(f"idempotency key {result.key!r} already applied")
        self.result = result


class StoreUnavailable(StoreError):
    pass


class EventStore(Protocol):
    def upgrade(self) -> None: ...

    def append(self, table_id: str, events: Sequence[NewEvent], expected_version: int, *,
               idempotency_key: str | None = None,
               request_hash: str | None = None) -> list[StoredEvent]: ...

    def load(self, table_id: str, after_version: int = 0,
             up_to_version: int | None = None) -> list[StoredEvent]: ...

    def version(self, table_id: str) -> int: ...

    def read_all(self, after_position: int = 0, limit: int = 1000) -> list[StoredEvent]: ...

    def idempotent_result(self, table_id: str, key: str) -> IdempotentResult | None: ...

    def table_ids(self) -> list[str]: ...

    def ping(self) -> dict[str, Any]: ...

    def close(self) -> None: ...
