"""Tamper resistance: migrations run as the owner, the service connects as a role that may
only read and append (it can neither rewrite the events nor drop the triggers that keep
them append-only), and an applied migration edited later is refused."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

import psycopg
import pytest

from ledger.store import migrations
from ledger.store.base import NewEvent
from ledger.store.postgres import PostgresStore
from tests.integration.conftest import Backend


@pytest.fixture
def service_role(postgres_backend: Backend, pg_url: str) -> Iterator[tuple[str, str]]:
    """(role, its URL): the service's role on the backend's schema, dropped afterwards."""
    role = f"loo_service_{uuid.uuid4().hex[:10]}"
    store = postgres_backend.store
    assert isinstance(store, PostgresStore)
    store.grant_service_role(role)
    base, db = pg_url.rsplit("/", 1)
    url = f"postgresql://{role}@{base.split('@', 1)[1]}/{db}"
    try:
        yield role, url
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f'DROP OWNED BY "{role}"'.encode())
            admin.execute(f'DROP ROLE "{role}"'.encode())


@pytest.mark.parametrize("statement", [
    "ALTER TABLE events DISABLE TRIGGER ALL",
    "ALTER TABLE events DISABLE TRIGGER events_append_only",
    "DROP TRIGGER events_append_only ON events",
    "DROP TABLE events",
    "UPDATE events SET data = '{}'::jsonb",
    "DELETE FROM events",
    "TRUNCATE events",
    "UPDATE checkpoints SET data = ''",
    "DELETE FROM idempotency",
    "UPDATE server_secret SET secret = ''",
    "CREATE TABLE sneaky (x int)",
])
def test_the_service_role_cannot_rewrite_history(postgres_backend: Backend, service_role,
                                                  statement: str) -> None:
    role, url = service_role
    postgres_backend.store.append("t1", [NewEvent("tile_played", 1, {"n": 1})], 0)
    schema = postgres_backend.spec[2]
    with psycopg.connect(url, autocommit=True, options=f"-c search_path={schema}") as conn:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute(statement.encode())
        assert conn.execute("SELECT count(*) FROM events").fetchone() == (1,)


def test_the_service_runs_on_its_role(postgres_backend: Backend, service_role) -> None:
    _, url = service_role
    schema = postgres_backend.spec[2]
    store = PostgresStore(url, schema=schema)
    try:
        store.upgrade()  # up to date: only read, never altered
        stored = store.append("t2", [NewEvent("tile_played", 1, {"n": 2})], 0,
                              idempotency_key="k", request_hash="h")
        assert store.load("t2") == stored and store.server_secret()
        store.save_checkpoint("t2", 1, {"v": 1})
        assert store.save_read_model("standings", 0, 5, {("c", "k"): {"x": 1}})
        assert store.save_read_model("standings", 5, 6, {("c", "k"): {"x": 2}})
        store.reset_read_model("standings")
    finally:
        store.close()


def test_a_service_role_cannot_migrate_and_says_what_to_do(postgres_backend: Backend,
                                                           service_role, monkeypatch) -> None:
    from ledger.store import postgres
    from ledger.store.base import StoreUnavailable

    _, url = service_role
    pending = [*postgres.MIGRATIONS, (999, "CREATE TABLE later (x int);")]
    monkeypatch.setattr(postgres, "MIGRATIONS", pending)
    store = PostgresStore(url, schema=postgres_backend.spec[2])
    try:
        with pytest.raises(StoreUnavailable, match="loo db upgrade"):
            store.upgrade()
    finally:
        store.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_an_applied_migration_edited_later_is_refused(kind: str, request, monkeypatch) -> None:
    backend: Backend = request.getfixturevalue(f"{kind}_backend")
    module = __import__(f"ledger.store.{kind}", fromlist=["MIGRATIONS"])
    edited = list(module.MIGRATIONS)
    version, sql = edited[1]
    edited[1] = (version, sql + (" " if isinstance(sql, str) else []))
    if not isinstance(sql, str):
        edited[1] = (version, [*sql[:-1], sql[-1] + " "])
    monkeypatch.setattr(module, "MIGRATIONS", edited)
    store = backend.reopen()
    try:
        with pytest.raises(migrations.MigrationChanged, match=f"migration {version} was changed"):
            store.upgrade()
        monkeypatch.undo()
        store.upgrade()  # the released text still passes
    finally:
        store.close()


def test_a_database_migrated_before_checksums_gets_them_recorded(sqlite_backend) -> None:
    import sqlite3

    path = sqlite_backend.spec[1]
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("UPDATE schema_migrations SET checksum = NULL")
    conn.close()
    store = sqlite_backend.reopen()
    store.upgrade()
    store.close()
    conn = sqlite3.connect(path)
    assert all(c for (c,) in conn.execute("SELECT checksum FROM schema_migrations"))


@contextlib.contextmanager
def scratch_database(pg_url: str, *roles: str) -> Iterator[str]:
    """A database of its own (its owner's URL), dropped after with the roles the test made."""
    name = f"loo_roles_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"'.encode())
    try:
        yield f"{pg_url.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())
            for role in roles:
                admin.execute(f'DROP ROLE IF EXISTS "{role}"'.encode())


def test_loo_db_upgrade_creates_the_service_role(pg_url: str, tmp_path, monkeypatch) -> None:
    from click.testing import CliRunner

    from ledger.cli.main import main

    role = f"loo_service_{uuid.uuid4().hex[:10]}"
    with scratch_database(pg_url, role) as owner_url:
        monkeypatch.setenv("DATABASE_URL", owner_url)
        monkeypatch.setenv("LOO_SERVICE_PASSWORD", "s3cret")
        r = CliRunner().invoke(main, ["db", "upgrade", "--service-role", role])
        assert r.exit_code == 0, r.output
        assert f"service role {role}" in r.output and "s3cret" not in r.output
        service_url = owner_url.replace("postgres@", f"{role}@", 1)
        with psycopg.connect(service_url, autocommit=True) as conn:
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute(b"DROP TRIGGER events_append_only ON events")
        again = CliRunner().invoke(main, ["db", "upgrade", "--service-role", role])
        assert again.exit_code == 0, again.output  # repeatable
        bad = CliRunner().invoke(main, ["db", "upgrade", "--service-role", "Robert'); --"])
        assert bad.exit_code != 0 and "bad role name" in bad.output
        monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path}/x.db")
        sqlite = CliRunner().invoke(main, ["db", "upgrade", "--service-role", role])
        assert sqlite.exit_code != 0 and "PostgreSQL only" in sqlite.output


def test_loo_db_upgrade_service_role_as_the_service_role_is_one_line_and_grants_nothing(
        pg_url: str, monkeypatch) -> None:
    """Only the owner may set up the service role: run as the service role itself,
    `loo db upgrade --service-role` says so in one line (exit 2), never a traceback, and
    creates no role (before: psycopg's InsufficientPrivilege as a traceback)."""
    from click.testing import CliRunner

    from ledger.cli.main import main

    role, other = (f"loo_service_{uuid.uuid4().hex[:10]}" for _ in range(2))
    with scratch_database(pg_url, role, other) as owner_url:
        monkeypatch.setenv("DATABASE_URL", owner_url)
        made = CliRunner().invoke(main, ["db", "upgrade", "--service-role", role])
        assert made.exit_code == 0, made.output
        monkeypatch.setenv("DATABASE_URL", owner_url.replace("postgres@", f"{role}@", 1))
        for target in (other, role):
            r = CliRunner().invoke(main, ["db", "upgrade", "--service-role", target])
            assert r.exit_code == 2, r.output
            assert r.exception is None or isinstance(r.exception, SystemExit)
            assert "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1
            assert "owner's DATABASE_URL" in r.output, r.output
        with psycopg.connect(pg_url, autocommit=True) as admin:
            assert admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s",
                                 (other,)).fetchone() is None
