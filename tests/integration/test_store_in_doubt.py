"""An append whose connection is lost after its statement ran (the server committed it, the
answer never came back) is found in the store and answered as the success it was; one lost
before its statement ran is tried once more (checked onto the same head, it cannot land
twice); lost again, it is StoreUnavailable (a 503), with nothing in the log.

The loss is injected at the pool's connection (StoreConnection.run) against a real
PostgreSQL: the statement runs (or not), then the connection is closed under it and the
error libpq gives for a dead server is raised."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from ledger.api.app import create_app
from ledger.bootstrap import Settings, bootstrap
from ledger.store.base import NewEvent, StoreUnavailable
from ledger.store.postgres import PostgresStore
from ledger.store.postgres_pool import StoreConnection
from tests.e2e.club import Club
from tests.integration.conftest import Backend

WRITES = ("INSERT INTO events", "loo_append(")


def lose_connection(monkeypatch: pytest.MonkeyPatch, *, after_statement: bool,
                    times: int = 1) -> list[str]:
    """The next `times` append statements lose their connection, after they ran on the
    server or before they were sent. Returns the statements it hit."""
    hit: list[str] = []
    run = StoreConnection.run

    def failing(self: StoreConnection, query: Any, params: Any = None) -> Any:
        text = query if isinstance(query, str) else str(query)
        if len(hit) >= times or not any(w in text for w in WRITES):
            return run(self, query, params)
        hit.append(text)
        if after_statement:
            run(self, query, params)  # committed (autocommit) before the answer is lost
        self.pgconn.finish()  # the socket gone: the connection is closed under the lease
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(StoreConnection, "run", failing)
    return hit


@pytest.mark.parametrize("key", [None, "move-1"], ids=["checked_insert", "loo_append"])
def test_postgres_append_lost_after_commit_is_the_success_it_was(
        postgres_backend: Backend, monkeypatch: pytest.MonkeyPatch, key: str | None) -> None:
    store = postgres_backend.store
    assert isinstance(store, PostgresStore)
    t = f"table-{uuid.uuid4().hex}"
    store.append(t, [NewEvent("note", None, {"n": 0})], 0)
    hit = lose_connection(monkeypatch, after_statement=True)
    got = store.append(t, [NewEvent("note", None, {"n": 1}), NewEvent("note", None, {"n": 2})],
                       1, idempotency_key=key, request_hash="h" if key else None)
    assert hit, "the loss was not injected"
    logged = store.load(t)
    assert [e.version for e in got] == [2, 3]
    assert [(e.version, e.position, e.hash) for e in got] == [
        (e.version, e.position, e.hash) for e in logged[1:]]
    # and the store goes on: the next append onto it
    assert store.append(t, [NewEvent("note", None, {"n": 3})], 3)[0].version == 4


@pytest.mark.parametrize("key", [None, "move-1"], ids=["checked_insert", "loo_append"])
def test_postgres_append_lost_before_its_statement_ran_is_tried_again_once(
        postgres_backend: Backend, monkeypatch: pytest.MonkeyPatch, key: str | None) -> None:
    store = postgres_backend.store
    t = f"table-{uuid.uuid4().hex}"
    store.append(t, [NewEvent("note", None, {"n": 0})], 0)
    hit = lose_connection(monkeypatch, after_statement=False)
    got = store.append(t, [NewEvent("note", None, {"n": 1})], 1, idempotency_key=key,
                       request_hash="h" if key else None)
    assert len(hit) == 1
    assert [(e.version, e.hash) for e in store.load(t)][1:] == [(2, got[0].hash)]


@pytest.mark.parametrize("key", [None, "move-1"], ids=["checked_insert", "loo_append"])
def test_postgres_append_lost_before_its_statement_every_time_is_unavailable(
        postgres_backend: Backend, monkeypatch: pytest.MonkeyPatch, key: str | None) -> None:
    store = postgres_backend.store
    t = f"table-{uuid.uuid4().hex}"
    store.append(t, [NewEvent("note", None, {"n": 0})], 0)
    hit = lose_connection(monkeypatch, after_statement=False, times=10)
    with pytest.raises(StoreUnavailable):
        store.append(t, [NewEvent("note", None, {"n": 1})], 1, idempotency_key=key,
                     request_hash="h" if key else None)
    assert 2 <= len(hit) <= 3  # the first try and one more (loo_append's, after the INSERT's)
    monkeypatch.undo()
    assert [e.version for e in store.load(t)] == [1]


@pytest.fixture
def pg_club(pg_url: str) -> Iterator[Club]:
    container = bootstrap(Settings(database_url=pg_url))
    application = create_app(container)
    application.config["TESTING"] = True
    yield Club(application.test_client())
    container.close()


def test_postgres_a_move_whose_answer_was_lost_after_commit_is_200_not_503(
        pg_club: Club, monkeypatch: pytest.MonkeyPatch) -> None:
    club = pg_club
    t = club.create(variant="loo", first_dealer=0, deal="shuffled")
    table = club.view(t)
    legal = table["legal_actions"]
    assert legal, table
    hit = lose_connection(monkeypatch, after_statement=True)
    r = club.act(t, dict(legal[0], expected_version=table["version"]))
    assert hit
    assert r.status_code == 200, r.get_json()
    answer = r.get_json()
    events = club.get(t, path="/events").get_json()["events"]
    assert events[-1]["version"] == answer["version"]
    assert [e["version"] for e in answer["events"]] == [
        e["version"] for e in events if e["version"] > table["version"]]


def test_postgres_a_move_lost_before_its_statement_every_time_is_503_and_not_logged(
        pg_club: Club, monkeypatch: pytest.MonkeyPatch) -> None:
    club = pg_club
    t = club.create(variant="loo", first_dealer=0, deal="shuffled")
    table = club.view(t)
    hit = lose_connection(monkeypatch, after_statement=False, times=10)
    r = club.act(t, dict(table["legal_actions"][0], expected_version=table["version"]))
    assert hit
    club.problem(r, 503)
    assert r.headers.get("Retry-After")
    monkeypatch.undo()
    events = club.get(t, path="/events").get_json()["events"]
    assert events[-1]["version"] == table["version"]


# ---- reads -------------------------------------------------------------------------------
def lose_reads(monkeypatch: pytest.MonkeyPatch, *, times: int = 1) -> list[str]:
    """The next `times` SELECTs lose their connection before their answer comes: the socket
    closed under the lease, as libpq meets a backend that sent its FATAL just before the
    statement (the instant no check before a statement can see). Returns those hit."""
    hit: list[str] = []
    execute = StoreConnection.execute

    def failing(self: StoreConnection, query: Any, params: Any = None, **kw: Any) -> Any:
        text = query if isinstance(query, str) else str(query)
        if len(hit) >= times or not text.lstrip().upper().startswith(("SELECT", "WITH")):
            return execute(self, query, params, **kw)
        hit.append(text)
        self.pgconn.finish()
        raise psycopg.OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(StoreConnection, "execute", failing)
    return hit


READS = {
    "load": lambda s, t: [e.version for e in s.load(t)],
    "version": lambda s, t: s.version(t),
    "read_all": lambda s, t: [e.version for e in s.read_all() if e.table_id == t],
    "load_after_position": lambda s, t: [e.version for e in s.load_after_position(t, 0)],
    "checkpoints": lambda s, t: s.checkpoints(t),
    "idempotent_result": lambda s, t: s.idempotent_result(t, "k").last_version,
}


@pytest.mark.parametrize("read", sorted(READS))
def test_postgres_a_read_whose_connection_was_lost_is_read_again(
        postgres_backend: Backend, monkeypatch: pytest.MonkeyPatch, read: str) -> None:
    store = postgres_backend.store
    assert isinstance(store, PostgresStore)
    t = f"table-{uuid.uuid4().hex}"
    store.append(t, [NewEvent("note", None, {"n": 0})], 0)
    store.append(t, [NewEvent("note", None, {"n": 1})], 1, idempotency_key="k",
                 request_hash="h")
    expected = READS[read](store, t)
    hit = lose_reads(monkeypatch)
    assert READS[read](store, t) == expected
    assert len(hit) == 1, "the loss was not injected"
    assert not store._connections.down  # the probe found the server and a fresh pool


def test_postgres_a_read_lost_again_is_unavailable(
        postgres_backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    store = postgres_backend.store
    t = f"table-{uuid.uuid4().hex}"
    store.append(t, [NewEvent("note", None, {"n": 0})], 0)
    hit = lose_reads(monkeypatch, times=10)
    with pytest.raises(StoreUnavailable):
        store.load(t)
    assert len(hit) == 2  # once more, not in a loop
    monkeypatch.undo()
    assert [e.version for e in store.load(t)] == [1]


def test_postgres_a_read_lost_while_the_server_is_down_is_unavailable(
        postgres_backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second try probes first: a server that cannot be reached is a 503 at once,
    not a second statement on a dead pool."""
    store = postgres_backend.store
    assert isinstance(store, PostgresStore)
    t = f"table-{uuid.uuid4().hex}"
    store.append(t, [NewEvent("note", None, {"n": 0})], 0)
    lose_reads(monkeypatch)

    def refused(*_a: Any, **_k: Any) -> Any:
        raise psycopg.OperationalError("connection refused")

    monkeypatch.setattr("ledger.store.postgres_pool.psycopg.connect", refused)
    with pytest.raises(StoreUnavailable, match="down"):
        store.load(t)
    assert store._connections.down
    monkeypatch.undo()
    deadline = time.monotonic() + 5
    while True:  # back once the next probe (every PROBE_EVERY) finds the server
        try:
            assert [e.version for e in store.load(t)] == [1]
            break
        except StoreUnavailable:
            assert time.monotonic() < deadline, "the store did not come back"
            time.sleep(0.02)  # polling interval, not a wait for a result


def test_postgres_a_table_read_whose_connection_was_lost_is_200_not_503(
        pg_club: Club, monkeypatch: pytest.MonkeyPatch) -> None:
    club = pg_club
    t = club.create(variant="loo", first_dealer=0, deal="shuffled")
    before = club.get(t, path="/events").get_json()["events"]
    hit = lose_reads(monkeypatch)
    r = club.get(t, path="/events")
    assert hit
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["events"] == before
