"""open_store(DATABASE_URL): which backend, and clean one-line errors when it cannot work."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ledger.store import open_store
from ledger.store.base import NewEvent, StoreUnavailable
from ledger.store.memory import MemoryStore
from ledger.store.sqlite import SqliteStore


def test_no_url_means_the_sqlite_file_in_the_working_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for url in (None, ""):
        store = open_store(url)
        assert isinstance(store, SqliteStore)
        store.upgrade()
        assert store.ping()["backend"] == "sqlite"
        store.close()
    assert (tmp_path / "loo.db").exists()


def test_sqlite_url_takes_relative_and_absolute_paths(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    rel = open_store("sqlite:///rel.db")
    absolute = open_store(f"sqlite:///{tmp_path}/abs.db")
    assert isinstance(rel, SqliteStore) and rel.path == "rel.db"
    assert isinstance(absolute, SqliteStore) and absolute.path == f"{tmp_path}/abs.db"
    rel.close()
    absolute.close()


def test_memory_url_gives_the_memory_store() -> None:
    assert isinstance(open_store("memory://"), MemoryStore)


def test_postgres_urls_give_the_postgres_store(pg_url: str) -> None:
    for url in (pg_url, pg_url.replace("postgresql://", "postgres://", 1)):
        store = open_store(url)
        assert store.ping()["backend"] == "postgresql"
        store.close()


@pytest.mark.parametrize("url", ["mysql://db/x", "sqlite://", "redis://localhost", "loo.db"])
def test_unknown_urls_are_refused_naming_database_url(url: str) -> None:
    with pytest.raises(StoreUnavailable, match="DATABASE_URL") as err:
        open_store(url)
    assert "\n" not in str(err.value)


def test_sqlite_file_that_cannot_be_opened_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(StoreUnavailable, match="DATABASE_URL"):
        open_store(f"sqlite:///{tmp_path}/missing/dir/loo.db")


def test_refused_postgres_connection_is_unavailable_at_once() -> None:
    start = time.monotonic()
    with pytest.raises(StoreUnavailable, match="DATABASE_URL") as err:
        open_store("postgresql://postgres:secret@127.0.0.1:1/nothing")
    assert time.monotonic() - start < 5
    assert "secret" not in str(err.value) and "\n" not in str(err.value)


def test_silent_postgres_host_times_out_instead_of_hanging() -> None:
    from ledger.store.postgres import PostgresStore

    start = time.monotonic()
    with pytest.raises(StoreUnavailable):
        PostgresStore("postgresql://postgres@192.0.2.1/nothing", connect_timeout=1)
    assert time.monotonic() - start < 4  # TEST-NET-1: never answers, or is unreachable


def test_store_without_schema_says_to_run_the_upgrade(tmp_path: Path, pg_url: str) -> None:
    from ledger.store.postgres import PostgresStore

    for store in (SqliteStore(str(tmp_path / "new.db")),
                  PostgresStore(pg_url, schema="never_upgraded")):
        with pytest.raises(StoreUnavailable, match="loo db upgrade"):
            store.append("t", [NewEvent("x", None, {})], 0)
        with pytest.raises(StoreUnavailable, match="loo db upgrade"):
            store.load("t")
        store.close()
