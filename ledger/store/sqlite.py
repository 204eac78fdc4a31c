"""SQLite event store (stdlib sqlite3, WAL): the embedded default.

Global order: `BEGIN IMMEDIATE` takes SQLite's single write lock before anything is read,
so appends are serialised across threads and processes. Positions continue from
max(position) inside that transaction: gap-free, and committed in order, so a reader
following `read_all(after_position)` never skips. Readers never block writers (WAL).

Connections are pooled per process and each is used by one thread at a time, which is
safe for Flask threads; a forked child (gunicorn) never touches its parent's connections.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ledger.store import migrations
from ledger.store.base import (
    STREAMS_WINDOW,
    AlreadyApplied,
    Batch,
    IdempotencyConflict,
    IdempotentResult,
    NewCheckpoints,
    NewEvent,
    RawEvent,
    StoredEvent,
    StoreUnavailable,
    VersionConflict,
    Watch,
    check_batches,
)
from ledger.store.bulk import gc_paused, load_json
from ledger.store.hashing import GENESIS, canonical_json, positioned, seal
from ledger.store.sqlite_schema import MIGRATIONS

_COLS = "version, position, type, hand, data, recorded_at, causation, prev_hash, hash"
# read_streams: the given tables' events among the store's next STREAMS_WINDOW...
_STREAMS_NEAR = (f"SELECT table_id, {_COLS} FROM (SELECT table_id, {_COLS} FROM events"
                 " WHERE position > ? ORDER BY position LIMIT ?) WHERE table_id IN"
                 " (SELECT value FROM json_each(?)) ORDER BY position LIMIT ?")
# ...whether that window ended before the store did...
_WINDOW_FULL = "SELECT 1 FROM events WHERE position > ? ORDER BY position LIMIT 1 OFFSET ?"
# ...and if so, their events by their own key instead.
_STREAMS_FAR = (f"SELECT table_id, {_COLS} FROM events WHERE table_id IN"
                " (SELECT value FROM json_each(?)) AND position > ? ORDER BY position LIMIT ?")
# read_streams_before: the same three, backwards from a position.
_STREAMS_NEAR_BEFORE = (f"SELECT table_id, {_COLS} FROM (SELECT table_id, {_COLS} FROM events"
                        " WHERE position < ? ORDER BY position DESC LIMIT ?) WHERE table_id IN"
                        " (SELECT value FROM json_each(?)) ORDER BY position DESC LIMIT ?")
_WINDOW_FULL_BEFORE = ("SELECT 1 FROM events WHERE position < ? ORDER BY position DESC"
                       " LIMIT 1 OFFSET ?")
_STREAMS_FAR_BEFORE = (f"SELECT table_id, {_COLS} FROM events WHERE table_id IN"
                       " (SELECT value FROM json_each(?)) AND position < ?"
                       " ORDER BY position DESC LIMIT ?")
_HEAD = "SELECT version, hash FROM events WHERE table_id = ? ORDER BY version DESC LIMIT 1"
_IDEM = ("SELECT key, request_hash, first_version, last_version FROM idempotency"
         " WHERE table_id = ? AND key = ?")
_INSERT = ("INSERT INTO events (table_id, version, position, type, hand, data, causation,"
           " recorded_at, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
_CHECKPOINT = "INSERT OR IGNORE INTO checkpoints VALUES (?, ?, ?)"
_WEBHOOK_COLS = "webhook_id, club_id, position, attempt, retry_at, lease_owner, lease_until"
_WEBHOOK_KEYS = tuple(_WEBHOOK_COLS.split(", "))
_MAX_IDLE = 8
# Seconds between looks at PRAGMA data_version while a follower waits for a commit: other
# processes' commits are seen this late at most (this process's wake it at once).
OTHERS_EVERY = 0.01
# Connections inherited through fork() are never closed in the child (SQLite forbids
# using them there, and closing could checkpoint or unlink the parent's WAL).
_ORPHANS: list[object] = []


class SqliteStore:
    """EventStore in one SQLite file."""

    def __init__(self, path: str, *, timeout: float = 30.0) -> None:
        self.path, self._timeout = path, timeout
        self._lock = threading.Lock()  # guards the idle list only
        self._idle: list[sqlite3.Connection] = []
        self._pid = os.getpid()
        self._secret: bytes | None = None
        self._watch: _SqliteWatch | None = None
        with self._conn() as conn:
            conn.execute("SELECT 1")

    # ---- connections ----------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None,
                                   check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")  # a ledger: committed means on disk
        except sqlite3.Error as err:
            raise StoreUnavailable(f"cannot open SQLite database {self.path!r} "
                                   f"(check DATABASE_URL): {err}") from None
        return conn

    @contextmanager
    def _conn(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            if os.getpid() != self._pid:
                _ORPHANS.extend(self._idle)
                self._idle, self._pid = [], os.getpid()
            conn = self._idle.pop() if self._idle else None
        conn = conn or self._open()
        try:
            yield conn
        except sqlite3.OperationalError as err:
            hint = ": run `loo db upgrade`" if "no such table" in str(err) else ""
            raise StoreUnavailable(f"SQLite database {self.path!r}: {err}{hint}") from err
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            with self._lock:
                keep = len(self._idle) < _MAX_IDLE and os.getpid() == self._pid
                if keep:
                    self._idle.append(conn)
            if not keep:
                conn.close()

    # ---- schema ---------------------------------------------------------------------------
    def upgrade(self) -> None:
        """Apply pending migrations in one write transaction (BEGIN IMMEDIATE serialises)."""
        with self._conn() as conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations ("
                         "version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL,"
                         " checksum TEXT)")
            columns = {r[1] for r in conn.execute("PRAGMA table_info(schema_migrations)")}
            if "checksum" not in columns:  # a database migrated before checksums were kept
                conn.execute("ALTER TABLE schema_migrations ADD COLUMN checksum TEXT")
            done = dict(conn.execute("SELECT version, checksum FROM schema_migrations"))
            for version, statements in MIGRATIONS:
                if version in done:
                    migrations.check(version, done[version], statements)
                    if done[version] is None:
                        conn.execute("UPDATE schema_migrations SET checksum = ? WHERE version = ?",
                                     (migrations.checksum(statements), version))
                    continue
                for sql in statements:
                    conn.execute(sql)
                conn.execute("INSERT INTO schema_migrations VALUES (?, datetime('now'), ?)",
                             (version, migrations.checksum(statements)))
            conn.execute("COMMIT")

    # ---- writes ---------------------------------------------------------------------------
    def append(self, table_id: str, events: Sequence[NewEvent], expected_version: int, *,
               idempotency_key: str | None = None, request_hash: str | None = None,
               checkpoints: NewCheckpoints | None = None) -> list[StoredEvent]:
        b = Batch(table_id, events, expected_version, idempotency_key, request_hash,
                  checkpoints)
        with self._conn() as conn:
            conn.execute("BEGIN IMMEDIATE")  # the write lock first: nothing read goes stale
            head = self._check(conn, b)
            if not events:
                if idempotency_key is not None:  # nothing written: kept as (v + 1, v)
                    conn.execute("INSERT INTO idempotency VALUES (?, ?, ?, ?, ?)",
                                 (table_id, idempotency_key, request_hash or "",
                                  expected_version + 1, expected_version))
                    conn.execute("COMMIT")
                return []
            (last,) = conn.execute("SELECT coalesce(max(position), 0) FROM events").fetchone()
            out = self._write(conn, b, head, last + 1)
            conn.execute("COMMIT")
        if self._watch is not None:
            self._watch.bump(out[-1].position)
        return out

    def append_batches(self, batches: Sequence[Batch]) -> list[list[StoredEvent]]:
        check_batches(batches)
        with self._conn() as conn:
            conn.execute("BEGIN IMMEDIATE")  # one transaction: a refusal rolls back them all
            (last,) = conn.execute("SELECT coalesce(max(position), 0) FROM events").fetchone()
            outs = []
            for b in batches:
                outs.append(self._write(conn, b, self._check(conn, b), last + 1))
                last = outs[-1][-1].position
            conn.execute("COMMIT")
        if self._watch is not None:
            self._watch.bump(last)
        return outs

    @staticmethod
    def _check(conn: sqlite3.Connection, b: Batch) -> tuple[int, str]:
        """`append`'s refusals of the batch (a used key, a stale version); the head."""
        if b.idempotency_key is not None:
            row = conn.execute(_IDEM, (b.table_id, b.idempotency_key)).fetchone()
            if row is not None:
                found = IdempotentResult(*row)
                if found.request_hash != (b.request_hash or ""):
                    raise IdempotencyConflict(b.idempotency_key)
                raise AlreadyApplied(found)
        head = conn.execute(_HEAD, (b.table_id,)).fetchone() or (0, GENESIS)
        if head[0] != b.expected_version:
            raise VersionConflict(b.table_id, b.expected_version, head[0])
        return head

    @staticmethod
    def _write(conn: sqlite3.Connection, b: Batch, head: tuple[int, str],
               first: int) -> list[StoredEvent]:
        """Insert a checked, non-empty batch from position `first` (in the transaction)."""
        sealed = seal(b.table_id, b.expected_version, head[1], b.events)
        conn.executemany(_INSERT, [
            (b.table_id, s.version, first + i, s.type, s.hand, s.data_json, s.causation,
             s.recorded_at, s.prev_hash, s.hash) for i, s in enumerate(sealed)])
        if b.idempotency_key is not None:
            conn.execute("INSERT INTO idempotency VALUES (?, ?, ?, ?, ?)",
                         (b.table_id, b.idempotency_key, b.request_hash or "",
                          sealed[0].version, sealed[-1].version))
        out = positioned(b.table_id, sealed, first)
        if b.checkpoints is not None:
            conn.executemany(_CHECKPOINT, [
                (b.table_id, out[i].version, canonical_json(b.checkpoints.data(out[i])))
                for i in b.checkpoints.indexes])
        return out

    def watch(self) -> Watch:
        with self._lock:
            if self._watch is None or self._watch.pid != os.getpid():
                self._watch = _SqliteWatch(self._open)
            return self._watch

    # ---- reads ----------------------------------------------------------------------------
    def load(self, table_id: str, after_version: int = 0,
             up_to_version: int | None = None) -> list[StoredEvent]:
        loads = load_json
        with gc_paused():
            return [StoredEvent(table_id, v, p, t, h, loads(d), r, c, ph, hh) for
                    v, p, t, h, d, r, c, ph, hh in self._rows(table_id, after_version,
                                                             up_to_version)]

    def load_raw(self, table_id: str, after_version: int = 0,
                 up_to_version: int | None = None) -> list[RawEvent]:
        new = tuple.__new__  # RawEvent's fields are the columns: no __new__ call per row
        with gc_paused():
            return [new(RawEvent, r)
                    for r in self._rows(table_id, after_version, up_to_version)]

    def load_types(self, table_id: str, types: Collection[str],
                   up_to_version: int | None = None) -> list[StoredEvent]:
        loads, wanted = load_json, sorted(set(types))
        if not wanted:
            return []
        with gc_paused():
            return [StoredEvent(table_id, v, p, t, h, loads(d), r, c, ph, hh) for
                    v, p, t, h, d, r, c, ph, hh in self._rows(table_id, 0, up_to_version,
                                                             wanted)]

    def _rows(self, table_id: str, after_version: int, up_to_version: int | None,
              types: Sequence[str] = ()) -> list[Any]:
        """A table's stored rows (_COLS) after `after_version`, up to `up_to_version` (of
        the given types only, when there are any)."""
        sql = f"SELECT {_COLS} FROM events WHERE table_id = ? AND version > ?"
        args: tuple[Any, ...] = (table_id, after_version)
        if up_to_version is not None:
            sql, args = sql + " AND version <= ?", (*args, up_to_version)
        if types:
            sql = sql + f" AND type IN ({', '.join('?' * len(types))})"
            args = (*args, *types)
        with self._conn() as conn:
            return conn.execute(sql + " ORDER BY version", args).fetchall()

    def version(self, table_id: str) -> int:
        with self._conn() as conn:
            row = conn.execute(_HEAD, (table_id,)).fetchone()
        return row[0] if row else 0

    def read_all(self, after_position: int = 0, limit: int = 1000) -> list[StoredEvent]:
        loads = load_json
        with self._conn() as conn:
            rows = conn.execute(f"SELECT table_id, {_COLS} FROM events WHERE position > ?"
                                " ORDER BY position LIMIT ?", (after_position, limit)).fetchall()
        return [StoredEvent(ti, v, p, t, h, loads(d), r, c, ph, hh)
                for ti, v, p, t, h, d, r, c, ph, hh in rows]

    def held_back(self, after_position: int) -> bool:
        return False  # one writer at a time: every committed event is read

    def read_streams(self, table_ids: Collection[str], after_position: int = 0,
                     limit: int = 1000) -> list[StoredEvent]:
        loads = load_json
        with self._conn() as conn:
            ids = json.dumps(sorted(set(table_ids)))
            rows = conn.execute(_STREAMS_NEAR, (after_position, STREAMS_WINDOW, ids,
                                                limit)).fetchall()
            if len(rows) < limit and conn.execute(_WINDOW_FULL, (
                    after_position, STREAMS_WINDOW - 1)).fetchone() is not None:
                rows = conn.execute(_STREAMS_FAR, (ids, after_position, limit)).fetchall()
        return [StoredEvent(ti, v, p, t, h, loads(d), r, c, ph, hh)
                for ti, v, p, t, h, d, r, c, ph, hh in rows]

    def read_streams_before(self, table_ids: Collection[str], before_position: int,
                            limit: int = 1000) -> list[StoredEvent]:
        loads = load_json
        with self._conn() as conn:
            ids = json.dumps(sorted(set(table_ids)))
            rows = conn.execute(_STREAMS_NEAR_BEFORE, (before_position, STREAMS_WINDOW, ids,
                                                       limit)).fetchall()
            if len(rows) < limit and conn.execute(_WINDOW_FULL_BEFORE, (
                    before_position, STREAMS_WINDOW - 1)).fetchone() is not None:
                rows = conn.execute(_STREAMS_FAR_BEFORE, (ids, before_position,
                                                          limit)).fetchall()
        return [StoredEvent(ti, v, p, t, h, loads(d), r, c, ph, hh)
                for ti, v, p, t, h, d, r, c, ph, hh in reversed(rows)]

    def first_events(self, after_position: int, up_to_position: int) -> list[StoredEvent]:
        loads = load_json
        with self._conn() as conn:
            rows = conn.execute(f"SELECT table_id, {_COLS} FROM events WHERE version = 1"
                                " AND position > ? AND position <= ? ORDER BY position",
                                (after_position, up_to_position)).fetchall()
        return [StoredEvent(ti, v, p, t, h, loads(d), r, c, ph, hh)
                for ti, v, p, t, h, d, r, c, ph, hh in rows]

    def last_position(self) -> int:
        with self._conn() as conn:
            return conn.execute("SELECT coalesce(max(position), 0) FROM events").fetchone()[0]

    def load_after_position(self, table_id: str, after_position: int,
                            limit: int = 1000) -> list[StoredEvent]:
        loads = load_json
        with self._conn() as conn:
            rows = conn.execute(f"SELECT {_COLS} FROM events WHERE table_id = ? AND position > ?"
                                " ORDER BY version LIMIT ?",
                                (table_id, after_position, limit)).fetchall()
        return [StoredEvent(table_id, v, p, t, h, loads(d), r, c, ph, hh)
                for v, p, t, h, d, r, c, ph, hh in rows]

    def idempotent_result(self, table_id: str, key: str) -> IdempotentResult | None:
        with self._conn() as conn:
            row = conn.execute(_IDEM, (table_id, key)).fetchone()
        return IdempotentResult(*row) if row else None

    def table_ids(self) -> list[str]:
        with self._conn() as conn:
            return [r[0] for r in conn.execute("SELECT DISTINCT table_id FROM events"
                                               " ORDER BY table_id")]

    def save_checkpoint(self, table_id: str, version: int, data: dict[str, Any]) -> None:
        with self._conn() as conn:
            conn.execute(_CHECKPOINT, (table_id, version, canonical_json(data)))

    def checkpoints(self, table_id: str) -> list[dict[str, Any]]:
        with self._conn() as conn:
            rows = conn.execute("SELECT data FROM checkpoints WHERE table_id = ?"
                                " ORDER BY version", (table_id,)).fetchall()
        return [load_json(r[0]) for r in rows]

    def head_position(self) -> int:
        with self._conn() as conn:
            return conn.execute("SELECT coalesce(max(position), 0) FROM events").fetchone()[0]

    # ---- read models ----------------------------------------------------------------------
    def read_model_position(self, name: str) -> int:
        with self._conn() as conn:
            row = conn.execute("SELECT position FROM read_model_positions WHERE name = ?",
                               (name,)).fetchone()
        return row[0] if row else 0

    def read_model_rows(self, name: str, scope: str,
                        keys: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
        sql = "SELECT key, data FROM read_model_rows WHERE name = ? AND scope = ?"
        params: list[Any] = [name, scope]
        out: dict[str, dict[str, Any]] = {}
        with self._conn() as conn:
            if keys is None:
                rows = conn.execute(sql, params).fetchall()
            else:
                rows = []
                keys = list(keys)
                for i in range(0, len(keys), 500):  # under SQLite's bound-parameter limit
                    chunk = keys[i:i + 500]
                    rows += conn.execute(sql + f" AND key IN ({','.join('?' * len(chunk))})",
                                         params + chunk).fetchall()
        for key, data in rows:
            out[key] = load_json(data)
        return out

    def save_read_model(self, name: str, from_position: int, to_position: int,
                        rows: dict[tuple[str, str], dict[str, Any]]) -> bool:
        with self._conn() as conn:
            conn.execute("BEGIN IMMEDIATE")
            row = conn.execute("SELECT position FROM read_model_positions WHERE name = ?",
                               (name,)).fetchone()
            if (row[0] if row else 0) != from_position:
                conn.execute("ROLLBACK")
                return False
            conn.executemany("INSERT OR REPLACE INTO read_model_rows VALUES (?, ?, ?, ?)",
                             [(name, scope, key, canonical_json(data))
                              for (scope, key), data in rows.items()])
            conn.execute("INSERT OR REPLACE INTO read_model_positions VALUES (?, ?)",
                         (name, to_position))
            conn.execute("COMMIT")
        return True

    def reset_read_model(self, name: str) -> None:
        with self._conn() as conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("DELETE FROM read_model_rows WHERE name = ?", (name,))
            conn.execute("DELETE FROM read_model_positions WHERE name = ?", (name,))
            conn.execute("COMMIT")

    def webhook_claim(self, webhook_id: str, club_id: str, start: int, owner: str,
                      now: float, until: float) -> dict[str, Any] | None:
        with self._conn() as conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT OR IGNORE INTO webhook_cursors (webhook_id, club_id, position)"
                         " VALUES (?, ?, ?)", (webhook_id, club_id, start))
            taken = conn.execute(
                "UPDATE webhook_cursors SET lease_owner = ?, lease_until = ? WHERE webhook_id = ?"
                " AND (lease_owner IS NULL OR lease_until < ? OR lease_owner = ?)",
                (owner, until, webhook_id, now, owner)).rowcount
            row = conn.execute(f"SELECT {_WEBHOOK_COLS} FROM webhook_cursors"
                               " WHERE webhook_id = ?", (webhook_id,)).fetchone()
            conn.execute("COMMIT")
        return dict(zip(_WEBHOOK_KEYS, row, strict=True)) if taken else None

    def webhook_save(self, webhook_id: str, owner: str, position: int, attempt: int,
                     retry_at: float | None, until: float | None) -> bool:
        with self._conn() as conn:
            return conn.execute(
                "UPDATE webhook_cursors SET position = ?, attempt = ?, retry_at = ?,"
                " lease_owner = ?, lease_until = ? WHERE webhook_id = ? AND lease_owner = ?",
                (position, attempt, retry_at, owner if until is not None else None, until,
                 webhook_id, owner)).rowcount == 1

    def webhook_cursor(self, webhook_id: str) -> dict[str, Any] | None:
        with self._conn() as conn:
            row = conn.execute(f"SELECT {_WEBHOOK_COLS} FROM webhook_cursors"
                               " WHERE webhook_id = ?", (webhook_id,)).fetchone()
        return dict(zip(_WEBHOOK_KEYS, row, strict=True)) if row else None

    def webhook_log(self, webhook_id: str, rows: list[dict[str, Any]]) -> None:
        with self._conn() as conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT INTO webhook_deliveries (webhook_id, data) VALUES (?, ?)",
                             [(webhook_id, canonical_json(r)) for r in rows])
            conn.execute("COMMIT")

    def webhook_deliveries(self, webhook_id: str, offset: int, limit: int,
                           ) -> list[dict[str, Any]]:
        with self._conn() as conn:
            rows = conn.execute("SELECT data FROM webhook_deliveries WHERE webhook_id = ?"
                                " ORDER BY id LIMIT ? OFFSET ?",
                                (webhook_id, limit, offset)).fetchall()
        return [load_json(r[0]) for r in rows]

    def server_secret(self) -> bytes:
        if self._secret is None:
            with self._conn() as conn:
                (hex_,) = conn.execute("SELECT secret FROM server_secret").fetchone()
            self._secret = bytes.fromhex(hex_)
        return self._secret

    def ping(self) -> dict[str, Any]:
        with self._conn() as conn:
            migrated = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'"
                                    " AND name = 'schema_migrations'").fetchone()
            version = (conn.execute("SELECT max(version) FROM schema_migrations").fetchone()[0]
                       if migrated else None)
        return {"backend": "sqlite", "path": self.path, "sqlite_version": sqlite3.sqlite_version,
                "schema_version": version or 0}

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
            watch, self._watch = self._watch, None
        if watch is not None and watch.pid == os.getpid():
            watch.close()
        if os.getpid() == self._pid:
            for conn in idle:
                conn.close()


class _SqliteWatch(Watch):
    """This process's appends bump it at once; another process's commit is seen by a waiter
    within OTHERS_EVERY seconds, from `PRAGMA data_version` on a connection of its own (it
    changes when any other connection commits; a look costs microseconds, no query)."""

    def __init__(self, connect: Any) -> None:
        super().__init__()
        self.pid = os.getpid()
        self._connect = connect
        self._conn: sqlite3.Connection | None = None
        self._version: int | None = None
        self._look = threading.Lock()
        self.live = True  # other processes' commits within OTHERS_EVERY

    def _others_committed(self) -> bool:
        with self._look:
            try:
                if self._conn is None:
                    self._conn = self._connect()
                (version,) = self._conn.execute("PRAGMA data_version").fetchone()
            except (sqlite3.Error, StoreUnavailable):
                return True  # cannot tell: let the follower read the store
            changed = version != self._version  # the first look cannot tell either
            self._version = version
            return changed

    def wait(self, seen: int, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while True:
            count = super().wait(seen, min(OTHERS_EVERY, max(0.0, deadline - time.monotonic())))
            if count != seen:
                return count
            if self._others_committed():
                self.bump()
                return self.count
            if time.monotonic() >= deadline:
                return count

    def close(self) -> None:
        with self._look:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
