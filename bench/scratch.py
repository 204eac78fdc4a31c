"""A scratch store for a benchmark: a fresh SQLite file, or a fresh PostgreSQL schema that
is dropped at the end (the shared database keeps nothing of a bench run)."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from ledger.bootstrap import Container, Settings, bootstrap


@contextmanager
def scratch_url(database_url: str, name: str) -> Iterator[tuple[str, str]]:
    """(url, directory): a fresh store's DATABASE_URL (`database_url` postgresql://... or ""
    for SQLite) and a temporary directory, both gone at the end."""
    tmp = tempfile.mkdtemp(prefix=f"loo-bench-{name}-")
    schema = None
    try:
        if database_url.startswith("postgres"):
            import psycopg

            from bench.api import in_schema

            schema = f"loo_bench_{name}_{uuid.uuid4().hex[:12]}"
            with psycopg.connect(database_url, autocommit=True) as conn:
                conn.execute(f"CREATE SCHEMA {schema}".encode())
            url = in_schema(database_url, schema)
        else:
            url = f"sqlite:///{os.path.join(tmp, 'bench.db')}"
        yield url, tmp
    finally:
        if schema is not None:
            import psycopg

            with psycopg.connect(database_url, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'.encode())
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def scratch(database_url: str, name: str) -> Iterator[tuple[Container, str]]:
    """(container, url) on a fresh store: `database_url` postgresql://... or "" (SQLite)."""
    with scratch_url(database_url, name) as (url, tmp):
        container = bootstrap(Settings(database_url=url,
                                       checkpoint_key_file=os.path.join(tmp, "key")))
        try:
            yield container, url
        finally:
            container.close()
