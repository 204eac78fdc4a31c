"""psycopg_pool's ConnectionPool, handing out the most recently returned connection first.

psycopg_pool hands out the connection idle longest: once a burst has grown the pool, a
single client's appends go round every connection, each served by a backend process whose
caches have gone cold in the meantime. Measured on one-event appends from one client, the
pool grown to 10 connections, per append (CPU of the client and of its backends, best of 5
interleaved rounds): client 186 µs, server 201 µs, 462 µs each; taking the newest
connection (as a pool of one does): client 106 µs, server 117 µs, 306 µs each (a bare
INSERT on one connection: 64, 107, 269). With every connection busy the order is moot.
Idle connections beyond the newest then stay idle, so the pool's max_idle can close them.

It overrides psycopg_pool's private _get_ready_connection, relying on `_pool` being the
deque of idle connections the parent takes from the left; tests/integration/
test_store_pool.py fails if a psycopg_pool release changes either.
"""

from __future__ import annotations

from typing import Any

import psycopg_pool


class LifoConnectionPool(psycopg_pool.ConnectionPool):
    def _get_ready_connection(self, timeout: float | None) -> Any:
        idle = self._pool  # called under the pool's lock; newest on the right
        if len(idle) > 1 and (timeout is None or timeout > 0):
            idle.rotate(1)  # the newest to the left, where the parent takes it
        return super()._get_ready_connection(timeout)
