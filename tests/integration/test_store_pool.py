"""The store's connection pool hands out the connection returned last (postgres_lifo.py):
fails if a psycopg_pool release changes the private parts the subclass relies on."""

from __future__ import annotations

from collections import deque
from typing import Any

import psycopg_pool

from ledger.store.postgres_lifo import LifoConnectionPool
from ledger.store.postgres_pool import POOL, Connections


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
