"""The event store contract: game-agnostic, append-only, hash-chained, optimistic."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

# read_streams: how many of the whole store's next events are filtered before it reads the
# given tables' own events instead (a position scan is cheapest near the head; a table's
# events by its key cost the same wherever they lie).
STREAMS_WINDOW = 10_000


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event to append; the store gives it its version, position, time and hashes."""

    type: str
    hand: int | None
    data: dict[str, Any]
    causation: str | None = None
    recorded_at: str | None = None


@dataclass(frozen=True, slots=True)
class StoredEvent:
    """An event as recorded: immutable, chained to the one before it in its table."""

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


class RawEvent(NamedTuple):
    """A stored event as its row, its data the stored JSON text, not parsed: for readers
    that pass most events through as they are (the hand-history export). A tuple, built at
    a tenth of a StoredEvent's cost (1.2 µs each, a third of reading a table)."""

    version: int
    position: int
    type: str
    hand: int | None
    data: str  # the stored JSON object as text (PostgreSQL: jsonb's text form)
    recorded_at: str
    causation: str | None
    prev_hash: str
    hash: str


@dataclass(frozen=True, slots=True)
class NewCheckpoints:
    """Checkpoints an append saves in its own transaction, naming events of its batch: for
    each of `indexes` (0-based), `sign(version, hash, recorded_at)` of that event gives the
    data kept, with the event's `position` added (as `checkpoints` returns it; a version that
    has one already keeps it). Nothing is saved when the append fails, and the events never
    commit without them."""

    indexes: tuple[int, ...]
    sign: Callable[[int, str, str], dict[str, Any]]

    def data(self, head: StoredEvent) -> dict[str, Any]:
        """What is kept for `head`, an event of the batch as stored."""
        return {**self.sign(head.version, head.hash, head.recorded_at), "position": head.position}


@dataclass(frozen=True, slots=True)
class IdempotentResult:
    """What an append under an idempotency key produced, kept for its repeats."""

    key: str
    request_hash: str
    first_version: int
    last_version: int


@dataclass(frozen=True, slots=True)
class Batch:
    """One stream's part of `EventStore.append_batches`: what `append` takes."""

    table_id: str
    events: Sequence[NewEvent]
    expected_version: int
    idempotency_key: str | None = None
    request_hash: str | None = None
    checkpoints: NewCheckpoints | None = None


def check_batches(batches: Sequence[Batch]) -> None:
    """What `append_batches` takes (every store refuses the same, before reading anything):
    at least one batch, none empty, each of another stream, and only the first continuing
    a stream (expected_version > 0): the others begin new ones."""
    if not batches or any(not b.events for b in batches):
        raise ValueError("append_batches takes one or more batches, none empty")
    if len({b.table_id for b in batches}) != len(batches):
        raise ValueError("append_batches takes each stream once")
    if any(b.expected_version for b in batches[1:]):
        raise ValueError("append_batches: only the first batch may continue a stream")


class StoreError(Exception):
    """Anything the event store refuses or cannot do."""


class VersionConflict(StoreError):
    def __init__(self, table_id: str, expected: int, actual: int) -> None:
        super().__init__(f"table {table_id}: expected version {expected}, it is at {actual}")
        self.table_id, self.expected, self.actual = table_id, expected, actual


class IdempotencyConflict(StoreError):
    """The idempotency key was already used for a different request."""


class AlreadyApplied(StoreError):
    def __init__(self, result: IdempotentResult) -> None:
        super().__init__(f"idempotency key {result.key!r} already applied")
        self.result = result


class StoreUnavailable(StoreError):
    """The database cannot be reached or used (bad DATABASE_URL, server down, no schema)."""


class Watch:
    """Commits to the store as a follower waits on them (`EventStore.watch`): a counter
    that moves when events commit, and the highest position known committed (`top`).

    `live`: `wait` returns soon after any process's commit (PostgreSQL: while its LISTEN
    connection is up; SQLite: within a few ms, see sqlite.py); when not, only this process's
    commits are signalled and a follower polls the store as well."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.count = 0
        self.top = 0
        self.live = False

    def bump(self, position: int = 0) -> None:
        """Events committed (up to `position`, when known)."""
        with self._cond:
            self.count += 1
            self.top = max(self.top, position)
            self._cond.notify_all()

    def wait(self, seen: int, timeout: float) -> int:
        """Until the counter is no longer `seen` or `timeout` seconds pass; the counter."""
        with self._cond:
            self._cond.wait_for(lambda: self.count != seen, timeout)
            return self.count


class EventStore(Protocol):
    """Append-only, per-table versioned, hash-chained events with one global order."""

    def upgrade(self) -> None:
        """Create or migrate the schema; repeatable."""
        ...

    def append(self, table_id: str, events: Sequence[NewEvent], expected_version: int, *,
               idempotency_key: str | None = None, request_hash: str | None = None,
               checkpoints: NewCheckpoints | None = None) -> list[StoredEvent]:
        """All or nothing, `checkpoints` included. An already used key raises
        AlreadyApplied/IdempotencyConflict (checked first), else a stale expected_version
        raises VersionConflict. An empty batch under a key keeps the key too (first_version
        expected_version + 1, last_version expected_version: it wrote nothing), so a write
        that had nothing to append is repeated as answered, never done again."""
        ...

    def append_batches(self, batches: Sequence[Batch]) -> list[list[StoredEvent]]:
        """Several streams' batches in one transaction, all or nothing (checkpoints
        included), each checked as `append` checks its own: the first refusal raises
        (VersionConflict names its stream) and nothing is written. Positions increase in
        the order given. Only the first batch may continue a stream; the others begin new
        ones (`check_batches`): on PostgreSQL a stream's head is read before the transaction
        id that gives the positions is taken, which only the first can be, so in every
        stream positions still follow versions. A new club table and its listing in the
        club's stream commit together this way (ledger/app/clubs.py)."""
        ...

    def load(self, table_id: str, after_version: int = 0,
             up_to_version: int | None = None) -> list[StoredEvent]:
        """The table's events with after_version < version <= up_to_version, in order."""
        ...

    def load_raw(self, table_id: str, after_version: int = 0,
                 up_to_version: int | None = None) -> list[RawEvent]:
        """`load`'s events as rows, each one's data the stored JSON text (parsed, the
        same data as `load`'s, keys in the same order)."""
        ...

    def load_types(self, table_id: str, types: Collection[str],
                   up_to_version: int | None = None) -> list[StoredEvent]:
        """`load`'s events (up to up_to_version) of the given types only, in order: a reader
        of a few kinds of event (the chip ledger) does not read all the others."""
        ...

    def version(self, table_id: str) -> int:
        """The table's last version, 0 when it has no events."""
        ...

    def read_all(self, after_position: int = 0, limit: int = 1000) -> list[StoredEvent]:
        """Events of all tables by increasing position; following it never skips one."""
        ...

    def held_back(self, after_position: int) -> bool:
        """Whether events after `after_position` have committed that `read_all` does not
        give yet: it gives none past an appender still in progress with a lower position
        (PostgreSQL; the other stores never hold one back). A follower that read nothing
        new looks again soon when this is true: no later commit may come to wake it."""
        ...

    def read_streams(self, table_ids: Collection[str], after_position: int = 0,
                     limit: int = 1000) -> list[StoredEvent]:
        """`read_all` restricted to the given tables (streams): their events by increasing
        position, at most `limit`; following it never skips one of theirs, however many
        other tables' events lie between them (the filter runs in the store: the next
        STREAMS_WINDOW events of the whole store by position first, which is all there is
        for a follower near the head; past that, the given tables' own events)."""
        ...

    def read_streams_before(self, table_ids: Collection[str], before_position: int,
                            limit: int = 1000) -> list[StoredEvent]:
        """The given tables' last `limit` events with position < before_position, by
        increasing position: `read_streams` read backwards (a feed's latest events, and the
        ones before those), never one `read_all` would not give yet. The same two ways: the
        STREAMS_WINDOW events of the whole store before the position first, past them the
        given tables' own events."""
        ...

    def first_events(self, after_position: int, up_to_position: int) -> list[StoredEvent]:
        """The first event (version 1) of every stream begun with after_position < position
        <= up_to_position, by position: which streams a span of the log holds that a reader
        of known streams would not see (an index of first events keeps it short)."""
        ...

    def last_position(self) -> int:
        """The highest position `read_all` would give now (0 when empty): following
        read_all from it misses nothing committed later."""
        ...

    def load_after_position(self, table_id: str, after_position: int,
                            limit: int = 1000) -> list[StoredEvent]:
        """The table's events with position > after_position, by version (at most limit)."""
        ...

    def idempotent_result(self, table_id: str, key: str) -> IdempotentResult | None: ...

    def table_ids(self) -> list[str]: ...

    def save_checkpoint(self, table_id: str, version: int, data: dict[str, Any]) -> None:
        """Keep a signed head of the table's chain (a repeat of one version is ignored)."""
        ...

    def checkpoints(self, table_id: str) -> list[dict[str, Any]]:
        """The table's saved checkpoints, by increasing version."""
        ...

    def watch(self) -> Watch:
        """The store's commit signal for followers (ledger/app/feed.py); cheap to call."""
        ...

    def head_position(self) -> int:
        """The highest position committed (read_all may still hold back the newest ones
        while older transactions are open: it never skips, so a reader waits for them)."""
        ...

    # Read models: derived rows a projector keeps up to date from the global position (the
    # store neither knows nor checks what they mean; the events stay the only truth).
    def read_model_position(self, name: str) -> int:
        """The global position the model `name` has folded up to (0: nothing yet)."""
        ...

    def read_model_rows(self, name: str, scope: str,
                        keys: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
        """The model's rows in `scope` (only `keys`, when given), by key."""
        ...

    def save_read_model(self, name: str, from_position: int, to_position: int,
                        rows: dict[tuple[str, str], dict[str, Any]]) -> bool:
        """Upsert rows {(scope, key): data} and move the model from `from_position` to
        `to_position`, atomically; False (nothing saved) when another projector moved it
        first."""
        ...

    def reset_read_model(self, name: str) -> None:
        """Forget the model's rows and position (it is rebuilt from the first event)."""
        ...

    # Webhooks: per endpoint a cursor row and a log of attempts (ledger/app/webhooks.py).
    def webhook_claim(self, webhook_id: str, club_id: str, start: int, owner: str,
                      now: float, until: float) -> dict[str, Any] | None:
        """Take the endpoint's lease until `until` (its cursor made at `start` if new) unless
        another owner holds it past `now`; the cursor row when taken, else None."""
        ...

    def webhook_save(self, webhook_id: str, owner: str, position: int, attempt: int,
                     retry_at: float | None, until: float | None) -> bool:
        """Move the cursor while holding the lease (until None: release it); False if the
        lease is someone else's now."""
        ...

    def webhook_cursor(self, webhook_id: str) -> dict[str, Any] | None: ...

    def webhook_log(self, webhook_id: str, rows: list[dict[str, Any]]) -> None:
        """Append delivery attempts to the endpoint's log, in one write."""
        ...

    def webhook_deliveries(self, webhook_id: str, offset: int, limit: int,
                           ) -> list[dict[str, Any]]:
        """The endpoint's attempts, oldest first."""
        ...

    def server_secret(self) -> bytes:
        """This deployment's random secret: the same for every process on the database."""
        ...

    def ping(self) -> dict[str, Any]:
        """{"backend": ..., ...}; raises StoreUnavailable."""
        ...

    def close(self) -> None: ...
