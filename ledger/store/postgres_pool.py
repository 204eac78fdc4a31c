"""Connections for PostgresStore: one pool per process, errors turned into StoreUnavailable."""

from __future__ import annotations

import logging
import os
import re
import threading
import time
from types import TracebackType
from typing import Any

import psycopg
import psycopg_pool
from psycopg.types.json import set_json_loads

from ledger.store.base import StoreUnavailable
from ledger.store.bulk import load_json
from ledger.store.postgres_lifo import LifoConnectionPool

log = logging.getLogger(__name__)
POOL_TIMEOUT = 1.0  # seconds a request waits for a connection (all busy, or none can be made)
PROBE_EVERY = 0.5  # seconds: while the server is down, how often one request tries it again

# The pool class: the newest idle connection first (postgres_lifo.py says why).
POOL: type[psycopg_pool.ConnectionPool] = LifoConnectionPool

# Pools inherited through fork() are never closed in the child: closing would send a
# Terminate message on sockets the parent still uses.
_ORPHANS: list[object] = []


class ConnectionLost(StoreUnavailable):
    """The connection died under a statement (a restart, a terminated backend, a proxy that
    dropped it): the server may well be up. A read meeting it is made once more
    (PostgresStore's `_read_again`); an append asks the log whether it landed."""


def redact(url: str) -> str:
    return re.sub(r"(://[^:/@]*:)[^@]*@", r"\1***@", url)


class StoreConnection(psycopg.Connection[Any]):
    """The pool's connections: one cursor kept for statements whose rows are read at once.

    conn.execute() builds a cursor for every statement and drops it: 34,000 instructions of
    the ~290,000 a one-event append costs the client (callgrind, psycopg 3.3)."""

    _kept: psycopg.Cursor[Any] | None = None

    def run(self, query: Any, params: Any = None) -> psycopg.Cursor[Any]:
        """execute() on the kept cursor: read its rows before the connection's next one."""
        cur = self._kept
        if cur is None or cur.closed:
            cur = self._kept = self.cursor()
        return cur.execute(query, params)


def _check(conn: psycopg.Connection[Any]) -> None:
    """Before a connection is handed out: one whose server end has gone (a restart, a
    terminated backend) raises, and the lease gives it back closed and takes another
    (_Lease._another).

    A backend that ends a connection sends why (a FATAL message) and closes it. Reading
    what has come in, twice and without waiting, meets that end: libpq takes the message
    on the first read and the end of the stream on the second, and raises. A healthy idle
    connection costs two recv() calls that find nothing, made holding the GIL; select()
    (which this used) let go of it, and under load the thread then queued for it behind
    the other threads. Whatever else an idle connection was sent (a notice) waits in
    libpq's buffer for the next statement, as it would have on the socket."""
    if conn.closed or conn.broken:
        raise psycopg.OperationalError("connection closed")
    pgconn = conn.pgconn
    pgconn.consume_input()
    pgconn.consume_input()


def _configure(conn: psycopg.Connection[Any]) -> None:
    set_json_loads(load_json, conn)  # the faster decoder for jsonb on replay


class Connections:
    """Autocommit connections to one database (and schema), checked on creation.

    Failing fast while the server is down: once a connection breaks or none can be had
    within POOL_TIMEOUT, requests are refused at once (StoreUnavailable, a 503) instead of
    each waiting on the pool, so request threads stay free and the probes answer. Every
    PROBE_EVERY seconds one request connects directly; when that works the pool is replaced
    by a fresh one (its old connections all point at the server that went away), so the
    service is back as soon as the server is, without the pool's own reconnect backoff
    (which grows to many seconds).
    """

    def __init__(self, url: str, kwargs: dict[str, Any], max_size: int,
                 pool_timeout: float = POOL_TIMEOUT) -> None:
        self.url, self._kwargs, self._max_size = url, {"autocommit": True, **kwargs}, max_size
        self.pool_timeout = pool_timeout
        try:  # connect once, so a bad URL or a down server fails now with its real reason
            psycopg.connect(url, **self._kwargs).close()
        except psycopg.Error as err:
            reason = " ".join(line.strip() for line in str(err).splitlines()) or repr(err)
            raise StoreUnavailable(f"cannot connect to PostgreSQL at {redact(url)} "
                                   f"(check DATABASE_URL): {reason}") from None
        self._pid, self._pool = os.getpid(), self._new_pool()
        self._down_since: float | None = None  # monotonic time the outage was seen
        self._next_probe = 0.0
        self._probe_lock = threading.Lock()

    def _new_pool(self) -> psycopg_pool.ConnectionPool:
        pool = POOL(self.url, min_size=1, max_size=self._max_size, kwargs=self._kwargs,
                    open=False, timeout=self.pool_timeout, configure=_configure,
                    name="loo-store", connection_class=StoreConnection)
        pool.open(wait=False)
        return pool

    @property
    def down(self) -> bool:
        return self._down_since is not None

    def _outage(self, why: str) -> None:
        if self._down_since is None:
            log.error("PostgreSQL at %s: down (%s); failing fast, probing every %.1f s",
                      redact(self.url), why, PROBE_EVERY)
            # The first probe at once: one lost connection (a terminated backend, a proxy's
            # restart) is often all there is, and the next request finds the server up
            # instead of every request being refused for PROBE_EVERY.
            self._next_probe = self._down_since = time.monotonic()

    def _while_down(self, probe: bool = False, again: bool = False) -> None:
        """Refuse at once, except one request every PROBE_EVERY that tries the server (and
        a readiness check, `probe`, which always tries it unless a try is under way).

        `again`: a read made once more after its connection was lost under it. It takes
        the probe that is due (the loss made one due at once); when another thread is
        already making it (every request thread that met the same restart), it waits up
        to the pool timeout for that probe's verdict rather than being refused for the
        other's try."""
        now = time.monotonic()
        if again:
            taken = self._probe_lock.acquire(timeout=self.pool_timeout)
            if taken and self._down_since is None:  # another thread's probe found it up
                self._probe_lock.release()
                return
            now = time.monotonic()
            if taken and now < self._next_probe:  # another thread's probe just failed
                self._probe_lock.release()
                taken = False
        else:
            taken = (now >= self._next_probe or probe) \
                and self._probe_lock.acquire(blocking=False)
        if not taken:
            raise StoreUnavailable(f"PostgreSQL at {redact(self.url)} is down "
                                   f"({now - (self._down_since or now):.1f} s)")
        try:
            self._next_probe = now + PROBE_EVERY
            try:
                psycopg.connect(self.url, **self._kwargs).close()
            except psycopg.Error as err:
                raise StoreUnavailable(f"PostgreSQL at {redact(self.url)} is down: "
                                       f"{' '.join(str(err).split())}") from err
            old, self._pool = self._pool, self._new_pool()
            threading.Thread(target=old.close, name="loo-store-retire", daemon=True).start()
            log.warning("PostgreSQL at %s: back after %.1f s", redact(self.url),
                        now - (self._down_since or now))
            self._down_since = None
        finally:
            self._probe_lock.release()

    def recover(self) -> None:
        """After ConnectionLost, before the read is made again: while the loss marks the
        server down, probe it now or wait for the probe under way (`_while_down`);
        StoreUnavailable if it is still out of reach."""
        if self._down_since is not None:
            self._while_down(again=True)

    def get(self, probe: bool = False) -> _Lease:
        """A pooled connection for a `with` block; `probe` (readiness): while down, try the
        server now."""
        if os.getpid() != self._pid:  # forked (gunicorn --preload): a pool of our own
            _ORPHANS.append(self._pool)
            self._pid, self._pool = os.getpid(), self._new_pool()
        if self._down_since is not None:
            self._while_down(probe)
        return _Lease(self, self._pool)

    def close(self) -> None:
        if os.getpid() == self._pid:
            self._pool.close()


class _Lease:
    """A connection from the pool for one `with` block, its errors made StoreUnavailable.

    A class rather than a @contextmanager generator: every append takes one, and the
    generator cost twice as much (7,000 instructions of the append's 250,000)."""

    __slots__ = ("_owner", "_pool", "_conn")

    def __init__(self, owner: Connections, pool: psycopg_pool.ConnectionPool) -> None:
        self._owner, self._pool = owner, pool

    def __enter__(self) -> StoreConnection:
        owner, pool = self._owner, self._pool
        try:
            # getconn/putconn rather than pool.connection(): no commit() on an autocommit
            # connection, which is measurable on one-event appends.
            self._conn = conn = pool.getconn()
            try:
                _check(conn)
            except psycopg.Error:
                self._conn = conn = self._another(conn)
        except psycopg_pool.PoolTimeout as err:
            if pool.get_stats().get("pool_size", 0) < owner._max_size:
                # Not for want of a free connection (all busy is load, not an outage): the
                # pool could not make one.
                owner._outage(f"no connection within {owner.pool_timeout} s")
            raise StoreUnavailable(f"PostgreSQL at {redact(owner.url)}: {err}") from err
        except psycopg_pool.PoolClosed as err:
            # The server came back and a probe replaced this pool while the request held
            # it (or waited in it): the old one is being closed. Take the new one.
            if owner._pool is pool:
                raise StoreUnavailable(f"PostgreSQL at {redact(owner.url)}: {err}") from err
            self._pool = owner._pool
            return self.__enter__()
        except psycopg.Error as err:  # any other refusal of the pool's: not a 500
            raise StoreUnavailable(f"PostgreSQL at {redact(owner.url)}: {err}") from err
        return conn

    def _another(self, dead: StoreConnection) -> StoreConnection:
        """A live connection in place of `dead`, which failed its check: dead ones are given
        back closed (the pool drops them and makes new ones) and the next one is tried at
        once, until POOL_TIMEOUT. Not psycopg_pool's own check loop: after one failed check
        it sleeps about 1 s (its reconnection backoff) before trying another, past the
        POOL_TIMEOUT of 1 s, so a request that met one connection the server had ended
        (a restart) waited a second for a 503 while live ones sat idle."""
        pool, deadline = self._pool, time.monotonic() + self._owner.pool_timeout
        while True:
            dead.close()
            pool.putconn(dead)
            left = deadline - time.monotonic()
            if left <= 0:
                raise psycopg_pool.PoolTimeout("no live connection within the pool timeout")
            conn = pool.getconn(left)
            try:
                _check(conn)
                return conn
            except psycopg.Error:
                dead = conn

    def __exit__(self, kind: type[BaseException] | None, err: BaseException | None,
                 tb: TracebackType | None) -> None:
        conn, url = self._conn, self._owner.url
        mapped: StoreUnavailable | None = None
        if isinstance(err, psycopg.errors.QueryCanceled):  # statement_timeout
            mapped = StoreUnavailable(f"PostgreSQL at {redact(url)}: {err}")
        elif isinstance(err, psycopg.Error) and (conn.broken or conn.closed):
            # The connection died under the statement, whatever the error's class: lost
            # mid-query, libpq reports a result without a SQLSTATE, which psycopg raises as
            # a plain DatabaseError (not an OperationalError); AdminShutdown, "server closed
            # the connection unexpectedly", "the connection is closed" all end here.
            self._owner._outage(" ".join(str(err).split())[:200])
            mapped = ConnectionLost(f"PostgreSQL at {redact(url)}: {err}")
        elif isinstance(err, psycopg.OperationalError) or (
                type(err) is psycopg.DatabaseError and err.sqlstate is None):
            # OperationalError: the server's trouble (shutting down, out of connections,
            # disk, a deadlock); a bare DatabaseError without a SQLSTATE: a failed result
            # that libpq made up about the connection. (The store's own refusals, LO409 and
            # the like, are bare DatabaseErrors with a SQLSTATE: append() reads those; a
            # client-side DataError, such as a NUL in a string, is a bug: still a 500.)
            mapped = StoreUnavailable(f"PostgreSQL at {redact(url)}: {err}")
        elif isinstance(err, psycopg.errors.UndefinedTable | psycopg.errors.UndefinedFunction):
            mapped = StoreUnavailable(f"PostgreSQL at {redact(url)} has no event store "
                                      "schema: run `loo db upgrade`")
        self._pool.putconn(conn)
        if mapped is not None:
            raise mapped from err
