"""Store fixtures (one `backend` fixture over memory, SQLite and PostgreSQL) and the worker
tests' fixtures (a database per module, a queue per test, a worker's ledger)."""

from __future__ import annotations

import os
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from ledger.app.service import Ledger
from ledger.bootstrap import Settings, open_database
from ledger.store.base import EventStore
from ledger.store.memory import MemoryStore
from ledger.store.sqlite import SqliteStore
from tests.conftest import PG_ADMIN_URL
from tests.integration.worker_helpers import unique_queue
from workers import runtime
from workers.queue import RqDispatcher

# (kind, target, schema): enough for another process to open the same store.
Spec = tuple[str, str, str | None]


def open_spec(spec: Spec) -> EventStore:
    kind, target, schema = spec
    if kind == "sqlite":
        return SqliteStore(target)
    from ledger.store.postgres import PostgresStore

    return PostgresStore(target, schema=schema)


@dataclass
class Backend:
    """A store under test plus raw access to its database, as its owner would have."""

    name: str
    store: EventStore
    spec: Spec | None = None  # None for the memory store: nothing to reopen

    def raw(self, sql: str) -> None:
        """Run SQL directly, bypassing the store (for immutability and tampering tests)."""
        assert self.spec is not None
        kind, target, schema = self.spec
        if kind == "sqlite":
            conn = sqlite3.connect(target, isolation_level=None)
            try:
                conn.execute(sql)
            finally:
                conn.close()
            return
        import psycopg

        with psycopg.connect(target, autocommit=True,
                             options=f"-c search_path={schema}") as pg:
            pg.execute(sql.encode())

    def reopen(self) -> EventStore:
        assert self.spec is not None
        return open_spec(self.spec)


@pytest.fixture
def memory_backend() -> Iterator[Backend]:
    yield Backend("memory", MemoryStore())


@pytest.fixture
def sqlite_backend(tmp_path: Path) -> Iterator[Backend]:
    path = str(tmp_path / "loo.db")
    store = SqliteStore(path)
    store.upgrade()
    yield Backend("sqlite", store, ("sqlite", path, None))
    store.close()


@pytest.fixture
def postgres_backend(pg_url: str) -> Iterator[Backend]:
    """A schema of its own per test, inside the session's database."""
    import psycopg

    from ledger.store.postgres import PostgresStore

    schema = f"t_{uuid.uuid4().hex[:12]}"
    store = PostgresStore(pg_url, schema=schema)
    store.upgrade()
    yield Backend("postgres", store, ("postgres", pg_url, schema))
    store.close()
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f"DROP SCHEMA {schema} CASCADE".encode())


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> Backend:
    return request.getfixturevalue(f"{request.param}_backend")


@pytest.fixture(params=["sqlite", "postgres"])
def sql_backend(request: pytest.FixtureRequest) -> Backend:
    return request.getfixturevalue(f"{request.param}_backend")


# ---- the worker tests: a database per module, a queue per test, a worker's ledger ------

@contextmanager
def fresh_database(label: str) -> Iterator[str]:
    """The URL of a new, empty PostgreSQL database, dropped afterwards."""
    admin = psycopg.connect(PG_ADMIN_URL, autocommit=True)
    name = f"loo_{label}_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{PG_ADMIN_URL.rsplit('/', 1)[0]}/{name}"
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


@pytest.fixture(scope="module")
def db_url(pg_url: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """A database of this module's own: the reconciler scans every table in it."""
    with fresh_database(request.module.__name__.rsplit(".", 1)[-1]) as url:
        yield url


@pytest.fixture
def store(db_url: str) -> Iterator[EventStore]:
    s = open_database(Settings(database_url=db_url))
    yield s
    s.close()


@pytest.fixture
def queue(redis_url: str) -> Iterator[Any]:
    with unique_queue(redis_url) as q:
        yield q


@pytest.fixture
def worker_ledger(db_url: str, queue: Any) -> Iterator[Ledger]:
    """What a worker process composes: its own store connection, jobs back onto the queue."""
    store = open_database(Settings(database_url=db_url), upgrade=False)
    ledger = Ledger(store, RqDispatcher(queue))
    previous = runtime._ledger  # restored so later tests compose their own again
    runtime.install(ledger)
    yield ledger
    runtime._ledger = previous
    store.close()
