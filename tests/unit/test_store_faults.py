"""What a PostgreSQL connection can raise while the server goes away or comes back, each
made StoreUnavailable (a 503 with Retry-After) by the lease, never a 500: injected through
a pool and connections that fail on cue (no server needed)."""

from __future__ import annotations

from typing import Any

import psycopg
import psycopg_pool
import pytest

from ledger.store.base import StoreUnavailable
from ledger.store.postgres import PostgresStore
from ledger.store.postgres_pool import Connections, _Lease


class FakePgConn:
    def consume_input(self) -> None:  # the lease's liveness check: nothing has come in
        pass


class FakeConn:
    def __init__(self) -> None:
        self.broken = self.closed = False
        self.pgconn = FakePgConn()


class FakePool:
    def __init__(self, fail: BaseException | None = None) -> None:
        self.fail, self.conn, self.returned = fail, FakeConn(), []

    def getconn(self) -> FakeConn:
        if self.fail is not None:
            raise self.fail
        return self.conn

    def putconn(self, conn: FakeConn) -> None:
        self.returned.append(conn)

    def get_stats(self) -> dict[str, int]:
        return {"pool_size": 1}


def refusal(sqlstate: str, message: str) -> psycopg.DatabaseError:
    """What psycopg raises for a SQLSTATE it does not know (loo_append's own, LO409 ...)."""
    err = psycopg.DatabaseError(message)
    err.sqlstate = sqlstate  # type: ignore[misc]
    return err


def owner(pool: FakePool) -> Any:
    """A Connections whose pool is `pool` (its __init__ would connect to a server)."""
    found: Any = object.__new__(Connections)
    found.url, found._max_size, found.pool_timeout = "postgresql://x/db", 4, 1.0
    found._pool, found._down_since, found._next_probe = pool, None, 0.0
    return found


def test_a_connection_lost_mid_query_without_a_sqlstate_is_unavailable():
    """libpq reports a connection lost under a statement as a result without a SQLSTATE,
    which psycopg raises as a plain DatabaseError, not an OperationalError."""
    pool = FakePool()
    conns = owner(pool)
    with pytest.raises(StoreUnavailable), _Lease(conns, pool) as conn:
        conn.broken = True
        raise psycopg.DatabaseError("server closed the connection unexpectedly")
    assert conns.down and pool.returned == [pool.conn]  # fails fast from now; not leaked


@pytest.mark.parametrize("err", [psycopg.DatabaseError("no SQLSTATE: the client's report"),
                                 psycopg.errors.AdminShutdown("terminating connection"),
                                 psycopg.errors.SerializationFailure("could not serialize"),
                                 psycopg.InterfaceError("the connection is lost")])
def test_errors_of_the_connection_or_the_server_are_unavailable(err: Exception):
    pool = FakePool()
    with pytest.raises(StoreUnavailable), _Lease(owner(pool), pool) as conn:
        conn.closed = isinstance(err, psycopg.InterfaceError)  # only with a dead connection
        raise err
    assert pool.returned == [pool.conn]


@pytest.mark.parametrize("err", [psycopg.errors.UndefinedColumn("column x does not exist"),
                                 psycopg.DataError("text fields cannot contain NUL bytes"),
                                 refusal("LO409", "version conflict")])
def test_a_bug_stays_a_bug(err: Exception):
    """A statement the server refuses as wrong, or a value the client library cannot send,
    is the service's fault: not hidden as a 503; and the store's own refusals (loo_append's
    SQLSTATEs, bare DatabaseErrors to psycopg) reach append() as they are."""
    pool = FakePool()
    with pytest.raises(type(err)), _Lease(owner(pool), pool):
        raise err


def test_a_pool_replaced_while_a_request_held_it_hands_out_the_new_one():
    """The server came back: a probe replaced the pool and closes the old one while requests
    still held it (or waited in it). Those take a connection of the new pool."""
    old = FakePool(psycopg_pool.PoolClosed("the pool 'loo-store' is already closed"))
    conns = owner(old)
    lease = _Lease(conns, old)
    conns._pool = new = FakePool()
    with lease as conn:
        assert conn is new.conn
    assert new.returned == [new.conn] and not old.returned


@pytest.mark.parametrize("err", [psycopg_pool.PoolClosed("closed"),
                                 psycopg_pool.TooManyRequests("too many"),
                                 psycopg_pool.PoolTimeout("no connection")])
def test_a_pool_that_refuses_is_unavailable(err: Exception):
    pool = FakePool(err)
    with pytest.raises(StoreUnavailable), _Lease(owner(pool), pool):
        pass  # pragma: no cover


def test_an_append_refused_by_the_connection_is_unavailable_not_a_store_error():
    """append() turns what its statement raised into the store's errors: an OperationalError
    that got past the lease (the pool's own) is an outage, not `append failed` (a 500)."""
    err = PostgresStore._translate(None, psycopg_pool.PoolClosed("closed"),  # type: ignore
                                   "t", 0, None, "")
    assert isinstance(err, StoreUnavailable)


def test_one_lost_connection_is_probed_by_the_next_request_not_refused_for_a_while(
        monkeypatch: pytest.MonkeyPatch):
    """A terminated backend breaks one connection while the server stays up: the request
    after it tries the server at once (and gets a fresh pool), rather than every request
    being refused until PROBE_EVERY has passed; a second try within PROBE_EVERY of a failed
    one is still refused at once."""
    import os
    import threading

    pool = FakePool()
    conns = owner(pool)
    conns._probe_lock, conns._kwargs, conns._pid = threading.Lock(), {}, os.getpid()
    with pytest.raises(StoreUnavailable), _Lease(conns, pool) as conn:
        conn.broken = True
        raise psycopg.DatabaseError("server closed the connection unexpectedly")
    assert conns.down
    fresh = FakePool()
    tries: list[str] = []

    class Up:
        def close(self) -> None:
            pass

    monkeypatch.setattr(psycopg, "connect", lambda url, **kw: tries.append(url) or Up())
    monkeypatch.setattr(Connections, "_new_pool", lambda self: fresh)
    monkeypatch.setattr(pool, "close", lambda: None, raising=False)
    with conns.get() as conn:
        assert conn is fresh.conn
    assert tries == [conns.url] and not conns.down

    def refused(url: str, **kw: object) -> None:
        tries.append(url)
        raise psycopg.OperationalError("connection refused")

    monkeypatch.setattr(psycopg, "connect", refused)
    conns._outage("lost again")
    with pytest.raises(StoreUnavailable):
        conns.get()  # tried at once, refused
    with pytest.raises(StoreUnavailable):
        conns.get()  # within PROBE_EVERY of that try: refused without trying
    assert len(tries) == 2


def test_a_read_made_again_waits_for_the_probe_under_way_and_takes_its_verdict():
    """Every request thread that met the same restart reads once more (ConnectionLost):
    one probes, the others wait for its verdict (up to the pool timeout) instead of being
    refused because a probe is under way; a verdict of "still down" refuses them at once."""
    import os
    import sys
    import threading
    import time

    from ledger.store.postgres_pool import ConnectionLost

    pool = FakePool()
    conns = owner(pool)
    conns._probe_lock, conns._kwargs, conns._pid = threading.Lock(), {}, os.getpid()
    with pytest.raises(ConnectionLost), _Lease(conns, pool) as conn:
        conn.closed = True
        raise psycopg.OperationalError("server closed the connection unexpectedly")
    assert conns.down

    def waiting_for_the_probe(thread: threading.Thread) -> None:
        deadline = time.monotonic() + 5
        while sys._current_frames().get(thread.ident or 0, None) is None \
                or sys._current_frames()[thread.ident or 0].f_code.co_name != "_while_down":
            assert time.monotonic() < deadline, "the read did not wait for the probe"
            time.sleep(0.005)  # polling interval

    for verdict_up in (True, False):
        conns._outage("lost")
        conns._down_since = conns._next_probe = time.monotonic()
        outcome: list[object] = []

        def again(outcome: list[object] = outcome) -> None:
            try:
                conns.recover()
                outcome.append("read")
            except StoreUnavailable as err:
                outcome.append(err)

        conns._probe_lock.acquire()  # another thread's probe, under way
        t = threading.Thread(target=again)
        t.start()
        waiting_for_the_probe(t)
        if verdict_up:
            conns._down_since = None
        else:
            conns._next_probe = time.monotonic() + 0.5  # it tried, and failed
        conns._probe_lock.release()
        t.join(5)
        if verdict_up:
            assert outcome == ["read"]
        else:
            assert len(outcome) == 1 and isinstance(outcome[0], StoreUnavailable)
