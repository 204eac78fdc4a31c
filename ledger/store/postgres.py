"""PostgreSQL event store (psycopg 3 + psycopg_pool), one round trip per append.

Global order (a high-water mark). A reader follows `read_all(after_position)`, so no
event may become visible with a position at or below one the reader already passed.
Each append's positions are `(its transaction id << 20) + 1..n`, and `read_all` returns
only positions below a mark (`_MARK`, evaluated in the same statement as the read, so
against the same snapshot): the lowest transaction id that may still append. Appenders
take a shared advisory lock (`_WRITING`) before their transaction id is assigned and hold
it until they end; the mark is the snapshot's xmax, or the lowest id in progress in the
snapshot that either has ended since (it may have appended: invisible to this snapshot) or
still holds that lock (pg_locks, read once). Nothing below the mark can still appear;
anything that commits later has an id at or above it, hence a higher position than all the
reader was given. Positions are unique and increasing but not dense. An append still open
delays readers until it ends; it never makes them skip. Other transactions do not delay
them (the mark was the snapshot's xmin: any transaction anywhere on the server holding an
id, a migration, a test's, another database's, held every feed back until it ended).

Followers are woken on commit: after each append this process's own followers at once, and
every process's through a NOTIFY of the last position committed, sent right after the
commit (_Notifier says why not inside it) on a channel named after the schema; `watch()`
LISTENs on one connection per process. A NOTIFY of an event still held back by the
high-water mark tells the follower to look again shortly (ledger/app/feed.py).

Within a table positions follow versions: `loo_append` takes its transaction id only
after reading the head, whose writer got its id before committing.

Two ways in. An append without an idempotency key (every move, a job's run of bot turns)
is one INSERT ... SELECT that writes only onto the expected head: version
`expected_version` must be there with hash prev_hash (one index probe, `_ONTO`), and the
primary key refuses version expected + 1 if it is there too (a stale version: a
VersionConflict). The same checks and positions as `loo_append`, without the function's
per-statement overhead and the JSON batch it parses. Up to _CHECKED_MAX events its rows
are a VALUES list; a bigger batch (a job's hand of bot turns, 30-40 events, or a long
all-bot run's hundreds) goes as one array per column, unnested: one statement text for any
size, so it is prepared once, and each event costs what it costs in a small batch. When
that INSERT writes nothing (a version ahead of the head, or a wrong cached hash),
`loo_append` runs and says why. Appends with a key call `loo_append` directly. The probe
stays though the cached head is a fact (events are immutable): a database restored or
failed over to a replica behind would otherwise take a gap in a chain (it costs 15-20% of
the statement's server instructions).

Checkpoints an append carries (`NewCheckpoints`: the signed heads after a settled hand, a
void, a close) are written by the append's own statement (a data-modifying WITH), signed
before it: one round trip and one commit, as any append (saved after it, they cost a second
statement and commit; an explicit transaction in psycopg's pipeline mode took five round
trips). Their data holds the event's position, which only the statement knows: it joins
their canonical JSON around it.

Why not a counter row: its lock is held until commit, so commits (and their WAL
flushes) queue one behind the other; measured here at 8 clients it reached 0.3-0.5 of
bare inserts, while transaction-id positions need no shared lock at all.

Concurrency per table. `loo_append` checks the head version; two racing appenders both
pass and the second then meets the (table_id, version) primary key, which surfaces as
VersionConflict. Nothing is retried blindly.

Hashes are computed in Python from the head's hash (kept per table in a small cache
that `load` and `append` refresh; events are immutable so a cached (version, hash)
stays true) and `loo_append` refuses a prev_hash that is not the head's.

Needs PostgreSQL 13+ (pg_current_xact_id). Data is JSONB: JSON numbers are kept as
numeric, so a float like 1e20 would come back as an int and fail its hash; the game's
events carry ints and strings only.
"""

from __future__ import annotations

import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Collection, Sequence
from contextlib import AbstractContextManager
from functools import lru_cache, wraps
from typing import Any, TypeVar

import psycopg
import psycopg.sql

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
    StoreError,
    StoreUnavailable,
    VersionConflict,
    Watch,
    check_batches,
)
from ledger.store.bulk import gc_paused
from ledger.store.hashing import GENESIS, Sealed, canonical_json, json_scalar, positioned, seal
from ledger.store.postgres_pool import (
    POOL_TIMEOUT,
    ConnectionLost,
    Connections,
    StoreConnection,
    redact,
)
from ledger.store.postgres_schema import MIGRATIONS

log = logging.getLogger(__name__)
_COLS = "version, position, type, hand, data, recorded_at, causation, prev_hash, hash"
# Appenders hold this advisory lock (shared: they never wait on each other) from before
# their transaction id is assigned until they end; readers wait for them only (_MARK).
_WRITING = "pg_advisory_xact_lock_shared(1282371361, hashtext(current_schema()))"
_APPEND = ("SELECT loo_append(%s, %s, %s, %s::jsonb, %s, %s)"
           f" FROM (SELECT {_WRITING}) AS writing")
# A batch of append_batches, in a transaction that holds _WRITING already.
_APPEND_AFTER = "SELECT loo_append_after(%s, %s, %s, %s::jsonb, %s, %s, %s)"
# The NOTIFY channel of the feeds: the schema's (stores share a database in tests, benches).
_CHANNEL = "'loo_' || left(md5(current_schema()), 24)"
# Who LISTENs on the channel holds this advisory lock shared, for as long as its session
# lasts (a process that dies lets go with its connection). A notifier that can take it
# exclusively (for a moment: the lock goes with its one-statement transaction) knows that
# nobody listens and sends no NOTIFY (_Notifier). Not _WRITING's key: another class id.
_LISTENING_KEY = "1282371362, hashtext(current_schema())"
_LISTENING = f"SELECT pg_advisory_lock_shared({_LISTENING_KEY})"
_NOBODY_LISTENS = f"SELECT pg_try_advisory_xact_lock({_LISTENING_KEY})"
_HEAD = "SELECT version, hash FROM events WHERE table_id = %s ORDER BY version DESC LIMIT 1"
_LANDED = ("SELECT (SELECT position FROM events WHERE table_id = %s AND version = %s)"
           " FROM events WHERE table_id = %s AND version = %s AND hash = %s")
_LOAD = (f"SELECT {_COLS} FROM events WHERE table_id = %s AND version > %s AND version <= %s"
         " ORDER BY version")
_LOAD_TYPES = (f"SELECT {_COLS} FROM events WHERE table_id = %s AND version <= %s"
               " AND type = ANY(%s) ORDER BY version")
# load_raw: data as jsonb's text form (what the jsonb loader of `load` parses).
_LOAD_RAW = _LOAD.replace(" data,", " data::text,", 1)
# The high-water mark, as a transaction id: every append with a lower id has ended. The
# snapshot's xmax, or the lowest id still in progress in it that may be an appender: one
# that has ended since (it may have appended: not yet visible to this snapshot), or one still
# running that holds the lock above. One still running without it took its id before it
# could append (the lock comes first), so it never will: it is not waited for. pg_locks is
# read once (one consistent view of the lock table), and only when something is in
# progress. Evaluated in the same statement as the read, so with the same snapshot.
# An id lock and the advisory lock are the same transaction's when the same backend (pid)
# holds both: a backend ends its transaction's locks before it begins another, the id lock
# first (the advisory lock outlives it), and pg_locks shows them at one instant. Not by
# virtualtransaction: pg_locks reads that from the backend as it copies each lock, so a
# transaction caught mid-commit (out of the proc array, its locks not yet released) showed
# its id lock under '<backend>/0' and its advisory lock under its old id, was not waited for,
# and a reader returned a later append and skipped this one for good
# (tests/integration/test_store_concurrency.py). A prepared transaction's locks have no pid:
# IS NOT DISTINCT FROM waits for it all the same.
_MARK = """
WITH s AS MATERIALIZED (SELECT pg_current_snapshot() AS snap),
xip AS MATERIALIZED (SELECT x::text::bigint AS x FROM s, pg_snapshot_xip(s.snap) AS x),
locks AS MATERIALIZED (
    SELECT locktype, transactionid::text::bigint AS x, pid
    FROM pg_locks
    WHERE EXISTS (SELECT 1 FROM xip) AND granted
      AND (locktype = 'transactionid' AND mode = 'ExclusiveLock'
           OR locktype = 'advisory' AND classid = 1282371361::oid
              AND objid = hashtext(current_schema())::oid AND objsubid = 2
              AND database = (SELECT oid FROM pg_database
                              WHERE datname = current_database()))),
mark AS (
    SELECT least((SELECT pg_snapshot_xmax(snap)::text::bigint FROM s),
                 (SELECT min(xip.x) FROM xip WHERE NOT EXISTS (
                      SELECT 1 FROM locks r WHERE r.locktype = 'transactionid' AND r.x = xip.x
                        AND NOT EXISTS (SELECT 1 FROM locks w WHERE w.locktype = 'advisory'
                                        AND w.pid IS NOT DISTINCT FROM r.pid)))) AS m)"""
_HELD_BACK = "SELECT EXISTS (SELECT 1 FROM events WHERE position > %s)"
_READ_ALL = (_MARK + f" SELECT table_id, {_COLS} FROM events WHERE position > %s"
             " AND position < ((SELECT m FROM mark) << 20) ORDER BY position LIMIT %s")
# read_streams: the given tables' events among the next STREAMS_WINDOW below the mark...
_STREAMS_NEAR = (_MARK + f" SELECT table_id, {_COLS} FROM (SELECT table_id, {_COLS}"
                 " FROM events WHERE position > %s AND position < ((SELECT m FROM mark) << 20)"
                 " ORDER BY position LIMIT %s) w WHERE table_id = ANY(%s)"
                 " ORDER BY position LIMIT %s")
# ...whether the store has more than that window (committed or not: more is only slower)...
_WINDOW_FULL = "SELECT 1 FROM events WHERE position > %s ORDER BY position OFFSET %s LIMIT 1"
# ...and if so, their events below the mark by whatever plan the tables' size favours.
_STREAMS_FAR = (_MARK + f" SELECT table_id, {_COLS} FROM events WHERE table_id = ANY(%s)"
                " AND position > %s AND position < ((SELECT m FROM mark) << 20)"
                " ORDER BY position LIMIT %s")
# read_streams_before: the same three, backwards from a position (and below the mark).
_STREAMS_NEAR_BEFORE = (_MARK + f" SELECT table_id, {_COLS} FROM (SELECT table_id, {_COLS}"
                        " FROM events WHERE position < %s"
                        " AND position < ((SELECT m FROM mark) << 20)"
                        " ORDER BY position DESC LIMIT %s) w WHERE table_id = ANY(%s)"
                        " ORDER BY position DESC LIMIT %s")
_WINDOW_FULL_BEFORE = ("SELECT 1 FROM events WHERE position < %s ORDER BY position DESC"
                       " OFFSET %s LIMIT 1")
_STREAMS_FAR_BEFORE = (_MARK + f" SELECT table_id, {_COLS} FROM events"
                       " WHERE table_id = ANY(%s) AND position < %s"
                       " AND position < ((SELECT m FROM mark) << 20)"
                       " ORDER BY position DESC LIMIT %s")
# first_events: the first events of the streams begun in a span (a partial index).
_FIRST_EVENTS = (f"SELECT table_id, {_COLS} FROM events WHERE version = 1"
                 " AND position > %s AND position <= %s ORDER BY position")
# The last position below the mark: one index probe backwards. (Not max(position): the
# planner turns min/max into that probe only in a query without a WITH, and read the whole
# index instead, 22-35 ms at 200,000 events.)
_LAST_POSITION = (_MARK + " SELECT coalesce((SELECT position FROM events"
                  " WHERE position < ((SELECT m FROM mark) << 20)"
                  " ORDER BY position DESC LIMIT 1), 0)")
# A loose index scan: one index probe per table instead of reading every event.
_TABLE_IDS = """
WITH RECURSIVE t(id) AS (
    (SELECT table_id FROM events ORDER BY table_id LIMIT 1)
    UNION ALL
    SELECT (SELECT table_id FROM events WHERE table_id > t.id ORDER BY table_id LIMIT 1)
    FROM t WHERE t.id IS NOT NULL)
SELECT id FROM t WHERE id IS NOT NULL"""
_MAX_VERSION = 2**31 - 1
_WEBHOOK_COLS = "webhook_id, club_id, position, attempt, retry_at, lease_owner, lease_until"
_WEBHOOK_KEYS = tuple(_WEBHOOK_COLS.split(", "))
_CHECKED_MAX = 8  # events in one append through the checked INSERT of a VALUES list
# Positions are (xid << 20) + 1..n: loo_append refuses a bigger batch (LO413) and says so.
_BATCH_MAX = (1 << 20) - 1
_CHECKED_ROW = ("(%s::int, %s::int, %s::text, %s::int, %s::jsonb, %s::text, %s::text, %s::text,"
                " %s::text)")
_HEAD_CACHE_SIZE = 10_000
_SAVE_CHECKPOINT = "INSERT INTO checkpoints VALUES (%s, %s, %s) ON CONFLICT DO NOTHING"
# The key of an append of nothing, kept only while the table is at the expected version.
_KEEP_KEY = ("INSERT INTO idempotency SELECT %s, %s, %s, %s, %s WHERE coalesce("
             "(SELECT max(version) FROM events WHERE table_id = %s), 0) = %s")


def _payload(sealed: list[Sealed]) -> str:
    """The batch as the JSON array loo_append reads, reusing each event's encoded data."""
    enc = json_scalar
    return "[" + ",".join(
        f'{{"type":{enc(s.type)},"hand":{enc(s.hand)},"data":{s.data_json},'
        f'"causation":{enc(s.causation)},"recorded_at":{enc(s.recorded_at)},'
        f'"prev_hash":{enc(s.prev_hash)},"hash":{enc(s.hash)}}}' for s in sealed) + "]"


_INSERT = ("INSERT INTO events (table_id, version, position, type, hand, data, causation,"
           " recorded_at, prev_hash, hash)")
# The transaction id is taken in the select list: after the lock (in FROM) and the check.
_XID = "(pg_current_xact_id()::text::bigint << 20)"
# Version `expected` is there with hash prev_hash (the primary key refuses expected + 1 if
# it is there too): one index probe. None needed onto version 0: the key refuses version 1.
_ONTO = (" WHERE EXISTS (SELECT FROM events WHERE table_id = %s::text AND version = %s::int"
         " AND hash = %s::text)")


@lru_cache(maxsize=8 * _CHECKED_MAX)
def _checked_insert(n: int, onto_genesis: bool, checkpoints: int = 0) -> str:
    """One INSERT of n events that writes them only onto the expected head (see above), and
    of `checkpoints` checkpoints naming some of them (`_checkpoint_params`)."""
    check = "" if onto_genesis else _ONTO
    if n == 1:  # nearly every move: no VALUES list to join
        insert = (f"{_INSERT} SELECT %s::text, %s::int, {_XID} + 1, %s::text, %s::int,"
                  " %s::jsonb, %s::text, %s::text, %s::text, %s::text"
                  f" FROM (SELECT {_WRITING}) AS writing{check}")
    else:
        insert = (f"{_INSERT} SELECT %s::text, e.version, {_XID} + e.i, e.type, e.hand, e.data,"
                  " e.causation, e.recorded_at, e.prev_hash, e.hash FROM (SELECT"
                  f" {_WRITING}) AS writing, (VALUES {', '.join([_CHECKED_ROW] * n)})"
                  " AS e(i, version, type, hand, data, causation, recorded_at, prev_hash,"
                  f" hash){check}")
    return _with_checkpoints(insert, checkpoints)


@lru_cache(maxsize=8)
def _checked_insert_arrays(onto_genesis: bool, checkpoints: int = 0) -> str:
    """`_checked_insert` of a batch of any size, its columns as arrays (`_checked_params`):
    the same checks and positions (position = xid << 20 + index in the batch)."""
    check = "" if onto_genesis else _ONTO
    insert = (f"{_INSERT} SELECT %s::text, e.version, {_XID} + e.i, e.type, e.hand,"
              " e.data::jsonb, e.causation, e.recorded_at, e.prev_hash, e.hash FROM (SELECT"
              f" {_WRITING}) AS writing, unnest(%s::int[], %s::text[], %s::int[], %s::text[],"
              " %s::text[], %s::text[], %s::text[], %s::text[]) WITH ORDINALITY AS e(version,"
              f" type, hand, data, causation, recorded_at, prev_hash, hash, i){check}")
    return _with_checkpoints(insert, checkpoints, first_only=True)


def _with_checkpoints(insert: str, checkpoints: int, first_only: bool = False) -> str:
    """The INSERT returning its positions (`first_only`: one row, the first position), and
    `checkpoints` checkpoints naming some of its events (`_checkpoint_params`) written by
    the same statement. Either way no row when the INSERT refused."""
    # One row rather than a row per event: psycopg builds each (~4% of a 32-event append).
    out = " SELECT min(position) FROM e HAVING count(*) > 0" if first_only else (
        " SELECT position FROM e")
    if not checkpoints:
        return f"WITH e AS ({insert} RETURNING position){out}" if first_only else (
            f"{insert} RETURNING position")
    # A data-modifying WITH runs once whether or not the query reads it; it writes nothing
    # when the INSERT refused (no rows), so the statement still returns none.
    return (f"WITH e AS ({insert} RETURNING version, position),"
            " c AS (INSERT INTO checkpoints SELECT %s::text, e.version,"
            " k.pre || e.position::text || k.post FROM e JOIN (VALUES"
            f" {', '.join(['(%s::int, %s::text, %s::text)'] * checkpoints)})"
            f" AS k(version, pre, post) ON k.version = e.version ON CONFLICT DO NOTHING){out}")


@lru_cache(maxsize=8)
def _append_with_checkpoints(checkpoints: int) -> str:
    """_APPEND, and `checkpoints` checkpoints naming events of its batch (at index i of the
    batch: position first + i), in the same statement."""
    return ("WITH a AS MATERIALIZED (SELECT loo_append(%s, %s, %s, %s::jsonb, %s, %s) AS first"
            f" FROM (SELECT {_WRITING}) AS writing),"
            " c AS (INSERT INTO checkpoints SELECT %s::text, k.version,"
            " k.pre || (a.first + k.i)::text || k.post FROM a, (VALUES"
            f" {', '.join(['(%s::int, %s::int, %s::text, %s::text)'] * checkpoints)})"
            " AS k(i, version, pre, post) ON CONFLICT DO NOTHING)"
            " SELECT first FROM a")


def _around_position(data: dict[str, Any]) -> tuple[str, str]:
    """canonical_json of `data` with a "position" added, as the text before and after its
    value: the statement that gives the event its position joins them around it."""
    before = {k: v for k, v in data.items() if k < "position"}
    after = {k: v for k, v in data.items() if k > "position"}
    pre = canonical_json(before)[:-1] + ("," if before else "") + '"position":'
    return pre, ("," + canonical_json(after)[1:]) if after else "}"


def _checkpoint_params(table_id: str, sealed: list[Sealed], checkpoints: NewCheckpoints,
                       with_index: bool) -> list[Any]:
    params: list[Any] = [table_id]
    for i in checkpoints.indexes:
        s = sealed[i]
        pre, post = _around_position(checkpoints.sign(s.version, s.hash, s.recorded_at))
        params += (i, s.version, pre, post) if with_index else (s.version, pre, post)
    return params


def _ints(values: list[int | None]) -> str:
    """A PostgreSQL array literal of ints (None: NULL)."""
    if None in values:
        return "{" + ",".join("NULL" if v is None else str(int(v)) for v in values) + "}"
    return "{" + ",".join(map(str, map(int, values))) + "}"  # type: ignore[arg-type]


def _texts(values: list[str | None]) -> str:
    """A PostgreSQL array literal of strings (None: NULL): each element quoted, a backslash
    before each backslash and double quote. Escaped in one pass over the elements joined
    by NUL, which no PostgreSQL text holds (psycopg's list adapter quotes element by
    element in Python: a third of the client's time for a 300-event append)."""
    if not values:
        return "{}"
    if None in values:
        return "{" + ",".join("NULL" if v is None else _texts([v])[1:-1] for v in values) + "}"
    joined = "\x00".join(values)  # type: ignore[arg-type]
    if joined.count("\x00") != len(values) - 1:
        raise StoreError("text with a NUL character")  # PostgreSQL would refuse it too
    escaped = joined.replace("\\", "\\\\").replace('"', '\\"')
    return '{"' + escaped.replace("\x00", '","') + '"}'


def _checked_params(table_id: str, expected_version: int, prev: str,
                    sealed: list[Sealed]) -> list[Any]:
    if len(sealed) > _CHECKED_MAX:
        params: list[Any] = [table_id, _ints([e.version for e in sealed]),
                             _texts([e.type for e in sealed]), _ints([e.hand for e in sealed]),
                             _texts([e.data_json for e in sealed]),
                             _texts([e.causation for e in sealed]),
                             _texts([e.recorded_at for e in sealed]),
                             _texts([e.prev_hash for e in sealed]),
                             _texts([e.hash for e in sealed])]
    elif len(sealed) == 1:
        e = sealed[0]
        params = [table_id, e.version, e.type, e.hand, e.data_json, e.causation,
                  e.recorded_at, e.prev_hash, e.hash]
    else:
        params = [table_id]
        for i, e in enumerate(sealed, start=1):
            params += (i, e.version, e.type, e.hand, e.data_json, e.causation, e.recorded_at,
                       e.prev_hash, e.hash)
    if expected_version:
        params += (table_id, expected_version, prev)
    return params


_Read = TypeVar("_Read", bound=Callable[..., Any])


def _read_again(method: _Read) -> _Read:
    """A read whose connection was lost under it (ConnectionLost: a restart, a terminated
    backend, the instant between a backend's FATAL and its socket's close that no check
    before the statement can see) is made once more, on a connection the pool hands out
    after the server has been probed: reading changes nothing, so a second try cannot
    harm, and the request gets its answer instead of a 503 while the server is up. Lost
    again, or the server still out of reach: StoreUnavailable, a 503 as before."""

    @wraps(method)
    def read(self: PostgresStore, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except ConnectionLost:
            self._connections.recover()
            return method(self, *args, **kwargs)

    return read  # type: ignore[return-value]


class PostgresStore:
    """EventStore on PostgreSQL; `schema` confines it to one schema (tests, benchmarks)."""

    def __init__(self, url: str, *, schema: str | None = None, max_size: int = 16,
                 connect_timeout: int = 2, statement_timeout_ms: int = 5000,
                 pool_timeout: float = POOL_TIMEOUT) -> None:
        if schema is not None and not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", schema):
            raise StoreError(f"bad schema name {schema!r}")
        self.url, self.schema = url, schema
        kwargs: dict[str, Any] = {}
        if "connect_timeout" not in url:  # libpq's least is 2 s
            kwargs["connect_timeout"] = connect_timeout
        # Fail fast rather than hold a request thread: a statement stuck behind a lock, or a
        # server that stopped answering, ends in a 503 (options in DATABASE_URL replace it).
        options = [] if "options=" in url or "statement_timeout" in url else [
            f"-c statement_timeout={statement_timeout_ms}"]
        if schema:
            options.append(f"-c search_path={schema}")
        if options:
            kwargs["options"] = " ".join(options)
        self._connections = Connections(url, kwargs, max_size, pool_timeout)
        self._connect_kwargs = {"autocommit": True, **kwargs}
        self._heads: dict[str, tuple[int, str]] = {}
        self._secret: bytes | None = None
        self._watch: _PgWatch | None = None
        self._notifier: _Notifier | None = None
        self._watch_lock = threading.Lock()

    def _conn(self) -> AbstractContextManager[StoreConnection]:
        return self._connections.get()

    # ---- schema ---------------------------------------------------------------------------
    def upgrade(self) -> None:
        """Apply pending migrations in one transaction, serialised by an advisory lock.

        A database already up to date is only read (the service's own role, which may not
        create or alter anything, starts through here); an applied migration whose text
        changed is refused (MigrationChanged)."""
        if self._up_to_date():
            return
        try:
            self._migrate()
        except psycopg.errors.InsufficientPrivilege as err:
            raise StoreUnavailable(
                f"the database role may not migrate the schema ({err.diag.message_primary}):"
                " run `loo db upgrade` with the owner's DATABASE_URL") from None

    def _up_to_date(self) -> bool:
        with self._conn() as conn:
            kept = conn.execute(
                "SELECT 1 FROM information_schema.columns WHERE table_schema ="
                " current_schema() AND table_name = 'schema_migrations'"
                " AND column_name = 'checksum'").fetchone()
            if kept is None:
                return False
            done = dict(conn.execute("SELECT version, checksum FROM schema_migrations")
                        .fetchall())
        for version, sql in MIGRATIONS:
            if version not in done or done[version] is None:
                return False
            migrations.check(version, done[version], sql)
        return True

    def _migrate(self) -> None:
        with self._conn() as conn, conn.transaction():
            conn.execute("SET LOCAL statement_timeout = 0")  # a migration may take long
            conn.execute("SELECT pg_advisory_xact_lock(hashtext("
                         "'loo:' || coalesce(%s::text, current_schema())))", (self.schema,))
            if self.schema:
                conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"'.encode())
            conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations ("
                         "version integer PRIMARY KEY, "
                         "applied_at timestamptz NOT NULL DEFAULT now(), checksum text)")
            conn.execute("ALTER TABLE schema_migrations ADD COLUMN IF NOT EXISTS checksum text")
            done = dict(conn.execute("SELECT version, checksum FROM schema_migrations")
                        .fetchall())
            for version, sql in MIGRATIONS:
                if version in done:
                    migrations.check(version, done[version], sql)
                    if done[version] is None:  # migrated before checksums were kept
                        conn.execute("UPDATE schema_migrations SET checksum = %s"
                                     " WHERE version = %s", (migrations.checksum(sql), version))
                    continue
                conn.execute(sql.encode())
                conn.execute("INSERT INTO schema_migrations (version, checksum)"
                             " VALUES (%s, %s)", (version, migrations.checksum(sql)))

    def grant_service_role(self, role: str, password: str | None = None) -> None:
        """Create (if missing) the role the service connects as, and give it what the
        service needs and nothing more: SELECT and INSERT on the append-only tables (the
        events, idempotency keys, checkpoints; it cannot UPDATE, DELETE or TRUNCATE them,
        nor drop or disable their triggers, which only the owner may), SELECT on the
        secret and the migration record, and full use of the derived tables (read models,
        delivery cursors) that have no append-only trigger. Run as the owner."""
        if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", role):
            raise StoreError(f"bad role name {role!r}: lower-case letters, digits and _")
        try:
            self._grant_service_role(role, password)
        except psycopg.Error as err:  # e.g. the owner may not create roles (no CREATEROLE)
            why = " ".join(str(err).split())
            raise StoreError(f"cannot set up role {role!r}: {why}") from None

    def _grant_service_role(self, role: str, password: str | None) -> None:
        ident = psycopg.sql.Identifier(role)
        with self._conn() as conn, conn.transaction():
            # Only the owner may grant on the tables; anyone else (the service role itself)
            # would fail half-way or have PostgreSQL skip the grants with a mere warning.
            owner = conn.execute(
                "SELECT current_user, pg_has_role(current_user, c.relowner, 'MEMBER')"
                " FROM pg_class c WHERE c.relname = 'events'"
                " AND c.relnamespace = current_schema()::regnamespace").fetchone()
            if owner is None or not owner[1]:
                who = owner[0] if owner else "this role"
                raise StoreError(f"{who} does not own the event store's tables: run `loo db "
                                 "upgrade --service-role` with the owner's DATABASE_URL")
            exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s",
                                  (role,)).fetchone()
            if not exists:
                conn.execute(psycopg.sql.SQL("CREATE ROLE {} LOGIN").format(ident))
            if password is not None:
                conn.execute(psycopg.sql.SQL("ALTER ROLE {} PASSWORD {}").format(
                    ident, psycopg.sql.Literal(password)))
            schema = conn.execute("SELECT current_schema()").fetchone()
            assert schema is not None
            conn.execute(psycopg.sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(
                psycopg.sql.Identifier(schema[0]), ident))
            tables = conn.execute(
                "SELECT c.relname, EXISTS (SELECT 1 FROM pg_trigger t WHERE t.tgrelid = c.oid"
                " AND t.tgname LIKE '%%append_only') FROM pg_class c"
                " WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'"
            ).fetchall()
            for name, append_only in tables:
                if name in ("schema_migrations", "server_secret"):
                    rights = "SELECT"
                elif append_only:
                    rights = "SELECT, INSERT"
                else:
                    rights = "SELECT, INSERT, UPDATE, DELETE"
                conn.execute(psycopg.sql.SQL("GRANT " + rights + " ON {} TO {}").format(
                    psycopg.sql.Identifier(name), ident))
            conn.execute(psycopg.sql.SQL("GRANT USAGE ON ALL SEQUENCES IN SCHEMA {} TO {}")
                         .format(psycopg.sql.Identifier(schema[0]), ident))

    # ---- writes ---------------------------------------------------------------------------
    def append(self, table_id: str, events: Sequence[NewEvent], expected_version: int, *,
               idempotency_key: str | None = None, request_hash: str | None = None,
               checkpoints: NewCheckpoints | None = None) -> list[StoredEvent]:
        request_hash = request_hash or ""
        if not events:
            return self._append_nothing(table_id, expected_version, idempotency_key,
                                        request_hash)
        prev = self._head_hash(table_id, expected_version)
        # With checkpoints too, one statement: they are signed before it (their data does not
        # hold the position, which only the statement gives) and written by it.
        k = len(checkpoints.indexes) if checkpoints is not None else 0
        n = len(events)
        if idempotency_key is None and n <= _BATCH_MAX:
            sealed = seal(table_id, expected_version, prev, events)
            params = _checked_params(table_id, expected_version, prev, sealed)
            if checkpoints is not None:
                params += _checkpoint_params(table_id, sealed, checkpoints, with_index=False)
            query = (_checked_insert(n, expected_version == 0, k) if n <= _CHECKED_MAX
                     else _checked_insert_arrays(expected_version == 0, k))
            sent = False
            try:
                with self._conn() as conn:
                    sent = True
                    rows = conn.run(query, params).fetchall()
            except psycopg.Error as err:
                raise self._translate(err, table_id, expected_version, None,
                                      request_hash) from None
            except StoreUnavailable:
                landed = self._landed(table_id, sealed) if sent else None
                if landed is None:
                    raise
                rows = [(landed,)] if landed else []  # not there: loo_append tries again
            if rows:
                self._remember_head(table_id, sealed[-1].version, sealed[-1].hash)
                first = min(r[0] for r in rows)
                self._committed(first + len(sealed) - 1)
                return positioned(table_id, sealed, first)
            # Refused: a stale version or cached hash; loo_append says which (or succeeds).
        lost = False  # a connection lost under the statement, which did not land
        for _ in range(3):  # again once when the cached head hash was wrong, once if lost
            sealed = seal(table_id, expected_version, prev, events)
            params = [table_id, expected_version, prev, _payload(sealed), idempotency_key,
                      request_hash]
            if checkpoints is not None:
                params += _checkpoint_params(table_id, sealed, checkpoints, with_index=True)
            sent = False
            try:
                with self._conn() as conn:
                    sent = True
                    row = conn.run(_append_with_checkpoints(k) if k else _APPEND,
                                   params).fetchone()
            except psycopg.Error as err:
                if err.sqlstate == "LO412" and err.diag.message_detail:
                    prev = err.diag.message_detail
                    continue
                raise self._translate(err, table_id, expected_version, idempotency_key,
                                      request_hash) from None
            except StoreUnavailable:
                landed = self._landed(table_id, sealed) if sent else None
                if landed == 0 and not lost:
                    lost = True
                    continue
                if not landed:
                    raise
                row = (landed,)
            assert row is not None
            self._remember_head(table_id, sealed[-1].version, sealed[-1].hash)
            self._committed(row[0] + len(sealed) - 1)
            return positioned(table_id, sealed, row[0])
        raise StoreError(f"table {table_id}: head hash keeps changing")  # pragma: no cover

    def append_batches(self, batches: Sequence[Batch]) -> list[list[StoredEvent]]:
        """One transaction: the appender's lock (_WRITING), then each batch through
        loo_append_after, positions continuing after the batches before it, then its
        checkpoints. The first batch's head is read before the transaction id is taken
        (as loo_append's); the later ones begin new streams (`check_batches`)."""
        check_batches(batches)
        prevs = [self._head_hash(b.table_id, b.expected_version) for b in batches]
        lost = False
        for _ in range(3):  # again once when a cached head hash was wrong, once if lost
            sealed = [seal(b.table_id, b.expected_version, prev, b.events)
                      for b, prev in zip(batches, prevs, strict=True)]
            sent = False
            try:
                with self._conn() as conn, conn.transaction():
                    sent = True
                    conn.run(f"SELECT {_WRITING}")
                    firsts = self._append_each(conn, batches, sealed)
            except psycopg.Error as err:
                at = getattr(err, "loo_batch", 0)
                b = batches[at]
                if err.sqlstate == "LO412" and err.diag.message_detail:
                    prevs[at] = err.diag.message_detail
                    continue
                raise self._translate(err, b.table_id, b.expected_version, b.idempotency_key,
                                      b.request_hash or "") from None
            except StoreUnavailable:
                # All or nothing: the last batch's last event there means they all landed.
                landed = self._landed(batches[-1].table_id, sealed[-1]) if sent else None
                if landed == 0 and not lost:
                    lost = True
                    continue
                if not landed:
                    raise
                firsts = [self._landed(b.table_id, s) or 0 for b, s in zip(
                    batches, sealed, strict=True)]
            for b, s in zip(batches, sealed, strict=True):
                self._remember_head(b.table_id, s[-1].version, s[-1].hash)
            self._committed(firsts[-1] + len(sealed[-1]) - 1)
            return [positioned(b.table_id, s, first)
                    for b, s, first in zip(batches, sealed, firsts, strict=True)]
        raise StoreError("append_batches: head hash keeps changing")  # pragma: no cover

    @staticmethod
    def _append_each(conn: StoreConnection, batches: Sequence[Batch],
                     sealed: Sequence[list[Sealed]]) -> list[int]:
        """Each batch's events and checkpoints, in the caller's transaction; the first
        position of each. A refusal carries the index of its batch (`loo_batch`)."""
        firsts: list[int] = []
        after = 0
        for i, (b, s) in enumerate(zip(batches, sealed, strict=True)):
            try:
                row = conn.run(_APPEND_AFTER, (b.table_id, b.expected_version, s[0].prev_hash,
                                               _payload(s), b.idempotency_key,
                                               b.request_hash or "", after)).fetchone()
            except psycopg.Error as err:
                err.loo_batch = i  # type: ignore[attr-defined]
                raise
            assert row is not None
            firsts.append(int(row[0]))
            if b.checkpoints is not None:
                out = positioned(b.table_id, s, firsts[-1])
                with conn.cursor() as cur:
                    cur.executemany(_SAVE_CHECKPOINT, [
                        (b.table_id, out[k].version, canonical_json(b.checkpoints.data(out[k])))
                        for k in b.checkpoints.indexes])
            after += len(s)
        return firsts

    def _landed(self, table_id: str, sealed: Sequence[Sealed]) -> int | None:
        """The first position of `sealed` if they are in the store, 0 if the server says
        they are not, None if it cannot be asked.

        Asked when the connection failed under an append's statement (StoreUnavailable
        from the lease): the server may have committed it before its answer was lost. The
        last event's hash chains the whole batch onto the head it was written over, so
        finding it at its version means this batch landed, and the caller gets the
        success it would have read, not a 503 for a move that is in the log. Not there (a
        connection the server had ended just before the statement, a restart): the append
        is tried once more; it is checked onto the same head, so it cannot land twice.
        Still out of reach: the caller's 503 stands (a retry with the same Idempotency-Key,
        or a look at the table, settles it)."""
        last = sealed[-1]
        try:
            with self._connections.get(probe=True) as conn:
                row = conn.run(_LANDED, (table_id, sealed[0].version, table_id, last.version,
                                         last.hash)).fetchone()
        except StoreError:
            return None
        return 0 if row is None or row[0] is None else int(row[0])

    def _committed(self, last: int) -> None:
        """Events up to position `last` committed: wake this process's followers now, and
        every other process's through a NOTIFY (_Notifier)."""
        watch = self._watch
        if watch is not None and watch.pid == os.getpid():
            watch.bump(last)
        notifier = self._notifier
        if notifier is None or notifier.pid != os.getpid():
            with self._watch_lock:
                if self._notifier is None or self._notifier.pid != os.getpid():
                    self._notifier = _Notifier(self.url, self._connect_kwargs)
                notifier = self._notifier
        notifier.committed(last)

    @_read_again
    def _head_hash(self, table_id: str, expected_version: int) -> str:
        """The hash of version `expected_version`, from the cache or one index probe."""
        if expected_version == 0:
            return GENESIS
        cached = self._heads.get(table_id)
        if cached is not None and cached[0] == expected_version:
            return cached[1]
        with self._conn() as conn:
            row = conn.execute(_HEAD, (table_id,)).fetchone()
        # On a mismatch loo_append still decides, so an applied key beats a stale version.
        return row[1] if row else GENESIS

    def _remember_head(self, table_id: str, version: int, hash_: str) -> None:
        if len(self._heads) >= _HEAD_CACHE_SIZE:
            self._heads.clear()  # bounded; a miss costs one index probe
        cached = self._heads.get(table_id)
        if cached is None or cached[0] < version:
            self._heads[table_id] = (version, hash_)

    def _append_nothing(self, table_id: str, expected_version: int, key: str | None,
                        request_hash: str) -> list[StoredEvent]:
        found = self.idempotent_result(table_id, key) if key is not None else None
        if found is not None:
            raise (AlreadyApplied(found) if found.request_hash == request_hash
                   else IdempotencyConflict(key))
        if key is not None:  # the key kept as (v + 1, v): it wrote nothing, at version v
            try:
                with self._conn() as conn:
                    kept = conn.execute(_KEEP_KEY, (table_id, key, request_hash,
                                                    expected_version + 1, expected_version,
                                                    table_id, expected_version)).rowcount
            except psycopg.errors.UniqueViolation:  # a concurrent request with this key
                found = self.idempotent_result(table_id, key)
                assert found is not None
                raise (AlreadyApplied(found) if found.request_hash == request_hash
                       else IdempotencyConflict(key)) from None
            if kept:
                return []
        actual = self.version(table_id)
        if actual != expected_version:
            raise VersionConflict(table_id, expected_version, actual)
        return []

    def _translate(self, err: psycopg.Error, table_id: str, expected: int, key: str | None,
                   request_hash: str) -> StoreError:
        detail = err.diag.message_detail or ""
        if err.sqlstate == "LO200" and key is not None:
            first, last = (int(x) for x in detail.split())
            return AlreadyApplied(IdempotentResult(key, request_hash, first, last))
        if err.sqlstate == "LO422":
            return IdempotencyConflict(key)
        if err.sqlstate == "LO409":
            return VersionConflict(table_id, expected, int(detail))
        if isinstance(err, psycopg.errors.UniqueViolation):
            # Lost a race with a concurrent append to the same table (or the same key).
            found = self.idempotent_result(table_id, key) if key is not None else None
            if found is not None:
                return (AlreadyApplied(found) if found.request_hash == request_hash
                        else IdempotencyConflict(key))
            return VersionConflict(table_id, expected, self.version(table_id))
        if isinstance(err, psycopg.OperationalError):  # not a refusal of this append's
            return StoreUnavailable(f"append to {table_id}: {err}")
        return StoreError(f"append to {table_id} failed: {err}")

    # ---- reads ----------------------------------------------------------------------------
    @_read_again
    def load(self, table_id: str, after_version: int = 0,
             up_to_version: int | None = None) -> list[StoredEvent]:
        up_to = _MAX_VERSION if up_to_version is None else up_to_version
        with self._conn() as conn, gc_paused():
            rows = conn.execute(_LOAD, (table_id, after_version, up_to)).fetchall()
            out = [StoredEvent(table_id, *r) for r in rows]
        if out:
            self._remember_head(table_id, out[-1].version, out[-1].hash)
        return out

    @_read_again
    def load_types(self, table_id: str, types: Collection[str],
                   up_to_version: int | None = None) -> list[StoredEvent]:
        up_to = _MAX_VERSION if up_to_version is None else up_to_version
        with self._conn() as conn, gc_paused():
            rows = conn.execute(_LOAD_TYPES, (table_id, up_to, sorted(set(types)))).fetchall()
            return [StoredEvent(table_id, *r) for r in rows]

    @_read_again
    def load_raw(self, table_id: str, after_version: int = 0,
                 up_to_version: int | None = None) -> list[RawEvent]:
        up_to = _MAX_VERSION if up_to_version is None else up_to_version
        new = tuple.__new__  # RawEvent's fields are the columns: no __new__ call per row
        with self._conn() as conn, gc_paused():
            rows = conn.execute(_LOAD_RAW, (table_id, after_version, up_to)).fetchall()
            return [new(RawEvent, r) for r in rows]

    @_read_again
    def version(self, table_id: str) -> int:
        with self._conn() as conn:
            row = conn.execute(_HEAD, (table_id,)).fetchone()
        return row[0] if row else 0

    @_read_again
    def read_all(self, after_position: int = 0, limit: int = 1000) -> list[StoredEvent]:
        with self._conn() as conn:
            rows = conn.execute(_READ_ALL, (after_position, limit)).fetchall()
        return [StoredEvent(*r) for r in rows]

    @_read_again
    def held_back(self, after_position: int) -> bool:
        """Committed events past the position that the mark still holds back (or any that
        committed since the caller's read_all): visible to this snapshot, not below it."""
        with self._conn() as conn:
            row = conn.execute(_HELD_BACK, (after_position,)).fetchone()
        return bool(row and row[0])

    @_read_again
    def read_streams(self, table_ids: Collection[str], after_position: int = 0,
                     limit: int = 1000) -> list[StoredEvent]:
        with self._conn() as conn:
            ids = sorted(set(table_ids))
            rows = conn.execute(_STREAMS_NEAR, (after_position, STREAMS_WINDOW, ids,
                                                limit)).fetchall()
            if len(rows) < limit and conn.execute(_WINDOW_FULL, (
                    after_position, STREAMS_WINDOW - 1)).fetchone() is not None:
                rows = conn.execute(_STREAMS_FAR, (ids, after_position, limit)).fetchall()
        return [StoredEvent(*r) for r in rows]

    @_read_again
    def read_streams_before(self, table_ids: Collection[str], before_position: int,
                            limit: int = 1000) -> list[StoredEvent]:
        with self._conn() as conn:
            ids = sorted(set(table_ids))
            rows = conn.execute(_STREAMS_NEAR_BEFORE, (before_position, STREAMS_WINDOW, ids,
                                                       limit)).fetchall()
            if len(rows) < limit and conn.execute(_WINDOW_FULL_BEFORE, (
                    before_position, STREAMS_WINDOW - 1)).fetchone() is not None:
                rows = conn.execute(_STREAMS_FAR_BEFORE, (ids, before_position,
                                                          limit)).fetchall()
        return [StoredEvent(*r) for r in reversed(rows)]

    @_read_again
    def first_events(self, after_position: int, up_to_position: int) -> list[StoredEvent]:
        with self._conn() as conn:
            rows = conn.execute(_FIRST_EVENTS, (after_position, up_to_position)).fetchall()
        return [StoredEvent(*r) for r in rows]

    @_read_again
    def last_position(self) -> int:
        with self._conn() as conn:
            row = conn.execute(_LAST_POSITION).fetchone()
        return int(row[0]) if row else 0

    @_read_again
    def load_after_position(self, table_id: str, after_position: int,
                            limit: int = 1000) -> list[StoredEvent]:
        with self._conn() as conn:
            rows = conn.execute(f"SELECT {_COLS} FROM events WHERE table_id = %s"
                                " AND position > %s ORDER BY version LIMIT %s",
                                (table_id, after_position, limit)).fetchall()
        return [StoredEvent(table_id, *r) for r in rows]

    @_read_again
    def idempotent_result(self, table_id: str, key: str) -> IdempotentResult | None:
        with self._conn() as conn:
            row = conn.execute("SELECT key, request_hash, first_version, last_version "
                               "FROM idempotency WHERE table_id = %s AND key = %s",
                               (table_id, key)).fetchone()
        return IdempotentResult(*row) if row else None

    @_read_again
    def table_ids(self) -> list[str]:
        with self._conn() as conn:
            return [r[0] for r in conn.execute(_TABLE_IDS)]

    def save_checkpoint(self, table_id: str, version: int, data: dict[str, Any]) -> None:
        with self._conn() as conn:
            conn.execute(_SAVE_CHECKPOINT, (table_id, version, canonical_json(data)))

    @_read_again
    def checkpoints(self, table_id: str) -> list[dict[str, Any]]:
        with self._conn() as conn:
            rows = conn.execute("SELECT data FROM checkpoints WHERE table_id = %s"
                                " ORDER BY version", (table_id,)).fetchall()
        return [json.loads(r[0]) for r in rows]

    def watch(self) -> Watch:
        """LISTEN on the schema's channel (one connection and thread per process, started
        by the first follower; see _PgWatch)."""
        with self._watch_lock:
            if self._watch is None or self._watch.pid != os.getpid():
                self._watch = _PgWatch(self.url, self._connect_kwargs)
            return self._watch

    @_read_again
    def head_position(self) -> int:
        with self._conn() as conn:
            row = conn.execute("SELECT coalesce(max(position), 0) FROM events").fetchone()
        return row[0] if row else 0

    # ---- read models ----------------------------------------------------------------------
    @_read_again
    def read_model_position(self, name: str) -> int:
        with self._conn() as conn:
            row = conn.execute("SELECT position FROM read_model_positions WHERE name = %s",
                               (name,)).fetchone()
        return row[0] if row else 0

    @_read_again
    def read_model_rows(self, name: str, scope: str,
                        keys: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
        with self._conn() as conn:
            if keys is None:
                rows = conn.execute("SELECT key, data FROM read_model_rows"
                                    " WHERE name = %s AND scope = %s", (name, scope)).fetchall()
            else:
                rows = conn.execute("SELECT key, data FROM read_model_rows WHERE name = %s"
                                    " AND scope = %s AND key = ANY(%s)",
                                    (name, scope, list(keys))).fetchall()
        return {key: json.loads(data) for key, data in rows}

    def save_read_model(self, name: str, from_position: int, to_position: int,
                        rows: dict[tuple[str, str], dict[str, Any]]) -> bool:
        with self._conn() as conn, conn.transaction():
            # The row lock of the position serialises projectors of one model.
            conn.execute("INSERT INTO read_model_positions VALUES (%s, 0)"
                         " ON CONFLICT DO NOTHING", (name,))
            row = conn.execute("SELECT position FROM read_model_positions WHERE name = %s"
                               " FOR UPDATE", (name,)).fetchone()
            if row is None or row[0] != from_position:
                return False
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO read_model_rows VALUES (%s, %s, %s, %s) ON CONFLICT"
                    " (name, scope, key) DO UPDATE SET data = EXCLUDED.data",
                    [(name, scope, key, canonical_json(data))
                     for (scope, key), data in rows.items()])
            conn.execute("UPDATE read_model_positions SET position = %s WHERE name = %s",
                         (to_position, name))
        return True

    def reset_read_model(self, name: str) -> None:
        with self._conn() as conn, conn.transaction():
            conn.execute("DELETE FROM read_model_rows WHERE name = %s", (name,))
            conn.execute("DELETE FROM read_model_positions WHERE name = %s", (name,))

    def webhook_claim(self, webhook_id: str, club_id: str, start: int, owner: str,
                      now: float, until: float) -> dict[str, Any] | None:
        with self._conn() as conn, conn.transaction():
            conn.execute("INSERT INTO webhook_cursors (webhook_id, club_id, position)"
                         " VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                         (webhook_id, club_id, start))
            row = conn.execute(
                "UPDATE webhook_cursors SET lease_owner = %s, lease_until = %s"
                " WHERE webhook_id = %s AND (lease_owner IS NULL OR lease_until < %s"
                f" OR lease_owner = %s) RETURNING {_WEBHOOK_COLS}",
                (owner, until, webhook_id, now, owner)).fetchone()
        return dict(zip(_WEBHOOK_KEYS, row, strict=True)) if row else None

    def webhook_save(self, webhook_id: str, owner: str, position: int, attempt: int,
                     retry_at: float | None, until: float | None) -> bool:
        with self._conn() as conn:
            return conn.execute(
                "UPDATE webhook_cursors SET position = %s, attempt = %s, retry_at = %s,"
                " lease_owner = %s, lease_until = %s WHERE webhook_id = %s AND lease_owner = %s",
                (position, attempt, retry_at, owner if until is not None else None, until,
                 webhook_id, owner)).rowcount == 1

    @_read_again
    def webhook_cursor(self, webhook_id: str) -> dict[str, Any] | None:
        with self._conn() as conn:
            row = conn.execute(f"SELECT {_WEBHOOK_COLS} FROM webhook_cursors"
                               " WHERE webhook_id = %s", (webhook_id,)).fetchone()
        return dict(zip(_WEBHOOK_KEYS, row, strict=True)) if row else None

    def webhook_log(self, webhook_id: str, rows: list[dict[str, Any]]) -> None:
        with self._conn() as conn, conn.transaction(), conn.cursor() as cur:
            cur.executemany("INSERT INTO webhook_deliveries (webhook_id, data) VALUES (%s, %s)",
                            [(webhook_id, canonical_json(r)) for r in rows])

    @_read_again
    def webhook_deliveries(self, webhook_id: str, offset: int, limit: int,
                           ) -> list[dict[str, Any]]:
        with self._conn() as conn:
            rows = conn.execute("SELECT data FROM webhook_deliveries WHERE webhook_id = %s"
                                " ORDER BY id LIMIT %s OFFSET %s",
                                (webhook_id, limit, offset)).fetchall()
        return [json.loads(r[0]) for r in rows]

    @_read_again
    def server_secret(self) -> bytes:
        if self._secret is None:
            with self._conn() as conn:
                row = conn.execute("SELECT secret FROM server_secret").fetchone()
            assert row is not None
            self._secret = bytes.fromhex(row[0])
        return self._secret

    def ping(self) -> dict[str, Any]:
        # Readiness tries the server even while requests fail fast: a process is ready
        # again as soon as PostgreSQL is, not at the next request's probe.
        with self._connections.get(probe=True) as conn:
            server, migrated = conn.execute(
                "SELECT current_setting('server_version'),"
                " to_regclass('schema_migrations') IS NOT NULL").fetchone() or ("?", False)
            schema_version = (conn.execute("SELECT max(version) FROM schema_migrations")
                              .fetchone() or (None,))[0] if migrated else None
        return {"backend": "postgresql", "server_version": server,
                "schema_version": schema_version or 0, "url": redact(self.url)}

    def close(self) -> None:
        with self._watch_lock:
            watch, self._watch = self._watch, None
            notifier, self._notifier = self._notifier, None
        for ender in (watch, notifier):
            if ender is not None and ender.pid == os.getpid():
                ender.close()
        self._connections.close()


class _Notifier:
    """Sends this process's NOTIFYs, after the appends commit, from a thread and a connection
    of its own: one NOTIFY of the highest position committed so far stands for every append
    made while the previous one was being sent or in the PACE after it.

    PACE bounds the NOTIFYs to 200 a second per process: one append's NOTIFY goes at once,
    a stream of appends is announced every 5 ms (a follower's wake-up is at most that much
    later; feeds deliver tens of ms after commit). Unpaced, a single appender sent one per
    append, each a transaction of its own with a round trip, a thread switch and a
    transaction id (`loo bench store`, 1 client: about a quarter of an append's CPU).

    Not inside the append's transaction: a transaction that notifies holds a cluster-wide
    lock from before its commit until after it, so appends that each notified committed one
    at a time (`loo bench store`, 8 clients: 0.12 of bare inserts, against 0.68 without).
    These NOTIFYs wait for no disk flush (synchronous_commit off: they carry nothing to
    keep). A process that dies between its commit and its NOTIFY leaves the followers to
    their fallback read (ledger/app/feed.py, Hub.IDLE).

    Only while someone listens: every LOOK seconds at most (only while appends come) the
    thread asks whether any session holds the listeners' lock (_LISTENING, taken by
    _PgWatch before its LISTEN). While none does, commits are not announced and the thread
    sleeps until the next look, so a deployment with no live feed open sends no NOTIFY and
    its appenders wake no thread. A listener that appears meanwhile has read everything
    committed before its LISTEN (its watch is bumped once it is up) and gets the NOTIFY of
    the highest position at the next look, LOOK seconds later at most."""

    PACE = 0.005  # seconds after a NOTIFY before the next one
    LOOK = 0.25  # seconds between looks for listeners while appends come

    def __init__(self, url: str, kwargs: dict[str, Any]) -> None:
        self.pid = os.getpid()
        self._url, self._kwargs = url, kwargs
        self._cond = threading.Condition()
        self._top = self._sent = 0
        self._look_at = 0.0  # monotonic time of the next look for listeners
        self._listened = True  # what the last look found
        self.skipped = 0  # commits left unannounced for want of listeners (for tests)
        self._stopped = False
        self._waiting = False  # for a commit (not pacing): a commit wakes the thread
        self._thread = threading.Thread(target=self._run, name="loo-store-notify",
                                        daemon=True)
        self._thread.start()

    def committed(self, position: int) -> None:
        with self._cond:
            if position > self._top:
                self._top = position
                if self._waiting:
                    self._cond.notify()

    def _run(self) -> None:
        conn: psycopg.Connection[Any] | None = None
        cur: psycopg.Cursor[Any] | None = None
        channel = ""
        try:
            while True:
                with self._cond:
                    self._waiting = True
                    self._cond.wait_for(lambda: self._stopped or self._top > self._sent)
                    self._waiting = False
                    if self._stopped:
                        return
                    top = self._top
                try:
                    if conn is None or conn.closed or cur is None:
                        conn = psycopg.connect(self._url, **self._kwargs)
                        # For the session (every statement on it is a NOTIFY), and the
                        # channel once: each NOTIFY is then one call and one cursor reused.
                        cur = conn.cursor()
                        row = cur.execute("SELECT set_config('synchronous_commit', 'off',"
                                          f" false), {_CHANNEL}").fetchone()
                        assert row is not None
                        channel = row[1]
                    now = time.monotonic()
                    if now >= self._look_at:
                        row = cur.execute(_NOBODY_LISTENS).fetchone()
                        self._listened = not (row is not None and row[0])
                        self._look_at = now + self.LOOK
                    if not self._listened:  # nobody to tell: up to `top` is announced
                        self.skipped += 1
                        self._sent = top
                        with self._cond:  # later commits wait for the next look
                            if not self._stopped:
                                self._cond.wait(max(0.0, self._look_at - now))
                        continue
                    cur.execute("SELECT pg_notify(%s, %s)", (channel, str(top)))
                    self._sent = top
                    with self._cond:  # commits meanwhile wait for the next NOTIFY
                        if not self._stopped:
                            self._cond.wait(self.PACE)
                except psycopg.Error as err:
                    log.warning("PostgreSQL NOTIFY for the feeds: %s",
                                " ".join(str(err).split())[:200])
                    if conn is not None:
                        conn.close()
                        conn, cur = None, None
                    with self._cond:
                        self._cond.wait(0.5)
        finally:
            if conn is not None:
                conn.close()

    def close(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=2)


class _PgWatch(Watch):
    """A thread LISTENs on the schema's channel with a connection of its own and bumps the
    watch for every NOTIFY (each append's, sent in its transaction, carrying its last
    position). While that connection is down `live` is False (followers poll); once it is
    up again the watch is bumped, so whatever was committed meanwhile is read."""

    WAKE = 0.25  # seconds between looks at the stop flag while no notification comes

    def __init__(self, url: str, kwargs: dict[str, Any]) -> None:
        super().__init__()
        self.pid = os.getpid()
        self._url, self._kwargs = url, kwargs
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="loo-store-listen",
                                        daemon=True)
        self._thread.start()

    def _run(self) -> None:
        backoff = 0.1
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._url, **self._kwargs) as conn:
                    row = conn.execute(f"SELECT {_CHANNEL}").fetchone()
                    assert row is not None
                    conn.execute(_LISTENING)  # before the LISTEN: notifiers look for it
                    conn.execute(psycopg.sql.SQL("LISTEN {}").format(
                        psycopg.sql.Identifier(row[0])))
                    self.live, backoff = True, 0.1
                    self.bump()  # what committed before the LISTEN: read it now
                    while not self._stop.is_set():
                        for n in conn.notifies(timeout=self.WAKE):
                            self.bump(int(n.payload) if n.payload.isdigit() else 0)
            except (psycopg.Error, OSError) as err:
                if not self._stop.is_set():
                    log.warning("PostgreSQL LISTEN for the feeds: %s; retrying in %.1f s",
                                " ".join(str(err).split())[:200], backoff)
            finally:
                self.live = False
                self.bump()
            self._stop.wait(backoff)
            backoff = min(backoff * 2, 5.0)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=2 * self.WAKE + 1)
