"""PostgreSQL's NOTIFYs after appends are paced: a burst of appends is announced by a few
NOTIFYs, in order, the last carrying the last position committed; and they are sent only
while some session listens (holds the listeners' lock, as the store's watch does)."""

from __future__ import annotations

import time
import uuid

import psycopg
import pytest
from psycopg import sql

from ledger.store.base import NewEvent
from ledger.store.postgres import _CHANNEL, _LISTENING, _Notifier
from tests.integration.conftest import Backend


def test_postgres_a_burst_of_appends_is_notified_paced_ending_with_the_last(
        postgres_backend: Backend, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pace = 0.3
    monkeypatch.setattr(_Notifier, "PACE", pace)
    assert postgres_backend.spec is not None
    schema = postgres_backend.spec[2]
    with psycopg.connect(pg_url, autocommit=True,
                         options=f"-c search_path={schema}") as listener:
        row = listener.execute(f"SELECT {_CHANNEL}").fetchone()
        assert row is not None
        listener.execute(_LISTENING)
        listener.execute(sql.SQL("LISTEN {}").format(sql.Identifier(row[0])))
        t = f"table-{uuid.uuid4().hex}"
        start = time.monotonic()
        positions = [postgres_backend.store.append(t, [NewEvent("note", None, {"n": v})], v)
                     [0].position for v in range(30)]
        appending = time.monotonic() - start
        got: list[int] = []
        deadline = time.monotonic() + 10
        while (not got or got[-1] != positions[-1]) and time.monotonic() < deadline:
            got += [int(n.payload) for n in listener.notifies(timeout=0.5, stop_after=1)]
    assert got and got[-1] == positions[-1], (got, positions)
    assert got == sorted(got) and set(got) <= set(positions)
    # One at once, then at most one per pace while the appends went on, and the last.
    assert len(got) <= 2 + appending / pace, (len(got), appending)


def test_postgres_no_notify_while_nobody_listens_and_the_first_listener_hears_the_last(
        postgres_backend: Backend, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_Notifier, "LOOK", 0.2)
    assert postgres_backend.spec is not None
    schema = postgres_backend.spec[2]
    store = postgres_backend.store
    t = f"table-{uuid.uuid4().hex}"
    with psycopg.connect(pg_url, autocommit=True,
                         options=f"-c search_path={schema}") as eavesdropper:
        # LISTENs without the listeners' lock: it hears what a NOTIFY would tell, and
        # the notifier does not know of it.
        row = eavesdropper.execute(f"SELECT {_CHANNEL}").fetchone()
        assert row is not None
        channel = row[0]
        eavesdropper.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
        v = 0
        deadline = time.monotonic() + 10
        while _notifier_skipped(store) < 2 and time.monotonic() < deadline:
            store.append(t, [NewEvent("note", None, {"n": v})], v)
            v += 1
            eavesdropper.execute("SELECT 1")  # a round trip: delivers what was sent
        assert _notifier_skipped(store) >= 2
        assert list(eavesdropper.notifies(timeout=0.3, stop_after=1)) == []
        with psycopg.connect(pg_url, autocommit=True,
                             options=f"-c search_path={schema}") as listener:
            listener.execute(_LISTENING)
            listener.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
            last = store.append(t, [NewEvent("note", None, {"n": v})], v)[-1].position
            got: list[int] = []
            deadline = time.monotonic() + 5
            while last not in got and time.monotonic() < deadline:
                got += [int(n.payload) for n in listener.notifies(timeout=0.5, stop_after=1)]
            assert last in got, (got, last)


def _notifier_skipped(store: object) -> int:
    notifier = getattr(store, "_notifier", None)
    return notifier.skipped if isinstance(notifier, _Notifier) else 0
