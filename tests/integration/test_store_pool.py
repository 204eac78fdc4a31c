"""The store's connection pool hands out the connection returned last (postgres_lifo.py):
fails if a psycopg_pool release changes the private parts the subclass relies on."""

from __future__ import annotations

import time
import uuid
from collections import deque
from typing import Any

import psycopg
import psycopg_pool
import pytest

from ledger.store.base import NewEvent
from ledger.store.postgres import PostgresStore
from ledger.store.postgres_lifo import LifoConnectionPool
from ledger.store.postgres_pool import POOL, Connections, StoreConnection


def test_the_store_pool_is_the_lifo_one() -> None:
    assert POOL is LifoConnectionPool


def test_psycopg_pool_keeps_idle_connections_in_a_deque_taken_from_the_left(
        pg_url: str) -> None:
    pool = psycopg_pool.ConnectionPool(pg_url, min_size=2, max_size=2, open=True)
    try:
        pool.wait(10)
        idle = pool._pool
        assert isinstance(idle, deque) and len(idle) == 2
        first = idle[0]
        taken = pool.getconn()  # through _get_ready_connection, which the subclass wraps
        assert taken is first
        pool.putconn(taken)
        assert idle[-1] is taken  # returned to the right
    finally:
        pool.close()


def test_the_connection_returned_last_is_handed_out_first(pg_url: str) -> None:
    connections = Connections(pg_url, {}, max_size=3)
    try:
        pids: list[Any] = []
        with connections.get() as a, connections.get() as b, connections.get() as c:
            pids = [x.info.backend_pid for x in (a, b, c)]  # the pool grew to three
        assert len(set(pids)) == 3
        # Returned c, b, then a: a is the newest, then b.
        with connections.get() as first:
            assert first.info.backend_pid == pids[0]
            with connections.get() as second:
                assert second.info.backend_pid == pids[1]
        for _ in range(5):  # one client at a time keeps taking the same one
            with connections.get() as again:
                assert again.info.backend_pid == pids[0]
    finally:
        connections.close()


def test_appends_on_one_connection_reuse_one_cursor(pg_url: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """StoreConnection keeps a cursor for the append's statement: conn.execute() made and
    dropped one per append (34,000 of its ~290,000 client instructions)."""
    made: list[object] = []
    cursor = StoreConnection.cursor

    def counted(self: StoreConnection, *args: Any, **kwargs: Any) -> Any:
        cur = cursor(self, *args, **kwargs)
        made.append(cur)
        return cur

    schema = f"loo_cursor_{uuid.uuid4().hex[:8]}"
    store = PostgresStore(pg_url, schema=schema, max_size=1)
    try:
        store.upgrade()
        monkeypatch.setattr(StoreConnection, "cursor", counted)
        for v in range(6):  # the one-event INSERT, then batches through loo_append
            store.append("t", [NewEvent("x", None, {"v": v})] * (1 if v < 3 else 9),
                         v if v < 3 else 3 + 9 * (v - 3))
        assert len(made) == 1
        assert [e.version for e in store.load("t")] == list(range(1, 31))
    finally:
        monkeypatch.undo()
        with store._conn() as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE".encode())
        store.close()


def test_a_connection_whose_backend_ended_is_not_handed_out_and_select_is_not_called(
        pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check before a lease finds a connection the server ended (it sent why and closed
    it) and the pool hands out another; it reads without select(), which let go of the GIL
    for every lease."""
    import select

    def no_select(*args: Any) -> Any:
        raise AssertionError("select() called")

    connections = Connections(pg_url, {}, max_size=2, pool_timeout=10)
    try:
        with connections.get() as a, connections.get() as b:
            pids = [a.info.backend_pid, b.info.backend_pid]
        with psycopg.connect(pg_url, autocommit=True) as admin:
            for pid in pids:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        _wait_gone(pg_url, pids)  # the FATAL messages and the ends of the streams sent
        monkeypatch.setattr(select, "select", no_select)
        with connections.get() as conn:  # both idle ones are refused: a new one
            assert conn.execute("SELECT pg_backend_pid()").fetchone()[0] not in pids
        for _ in range(3):
            with connections.get() as conn:
                assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        connections.close()


def _wait_gone(pg_url: str, pids: list[int]) -> None:
    """Until the backends `pids` have ended (their sockets closed by the server)."""
    deadline = time.monotonic() + 10
    with psycopg.connect(pg_url, autocommit=True) as admin:
        while admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)",
                            (pids,)).fetchone()[0]:
            assert time.monotonic() < deadline, "backends still there"
            time.sleep(0.01)


def test_a_pool_of_ended_connections_hands_out_a_live_one_within_the_pool_timeout(
        pg_url: str) -> None:
    """Every idle connection's backend ended (a server restart, an admin's terminate): the
    lease drops them one after another and gets a live one at once. psycopg_pool's own check
    loop slept about a second after the first refused connection, past the 1 s POOL_TIMEOUT:
    the request was a 503 while the server was up."""
    connections = Connections(pg_url, {}, max_size=4)  # POOL_TIMEOUT, as in service
    try:
        with connections.get() as a, connections.get() as b, connections.get() as c:
            pids = [x.info.backend_pid for x in (a, b, c)]
        with psycopg.connect(pg_url, autocommit=True) as admin:
            for pid in pids:
                admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        _wait_gone(pg_url, pids)
        start = time.monotonic()
        with connections.get() as conn:
            assert conn.execute("SELECT pg_backend_pid()").fetchone()[0] not in pids
        assert time.monotonic() - start < connections.pool_timeout
        assert not connections.down
    finally:
        connections.close()
