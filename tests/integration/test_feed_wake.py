"""The feed hub wakes on commit (ledger/app/feed.py, EventStore.watch): another process's
append reaches a waiting stream at once, not at the next poll, and an idle hub does not
read the store over and over. PostgreSQL: an event held back behind an older open
transaction is delivered as soon as that transaction ends, though it sends no NOTIFY."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from ledger.app.feed import Hub
from ledger.store.base import NewEvent
from tests.integration.conftest import Backend

POLL = 30.0  # the hub's fallback poll: far longer than any wait below


def _event(n: int) -> list[NewEvent]:
    return [NewEvent("note", None, {"n": n})]


def _ready_hub(backend: Backend) -> Hub:
    hub = Hub(backend.store, poll=POLL)
    hub.subscribe()
    assert hub.snapshot_floor(timeout=10) is not None
    # The watch is up (PostgreSQL: its LISTEN connection) before anything is measured.
    watch = backend.store.watch()
    deadline = time.monotonic() + 10
    while not watch.live and time.monotonic() < deadline:
        time.sleep(0.01)
    assert watch.live
    return hub


def _arrives(hub: Hub, after: int, position: int, within: float) -> float:
    """Seconds until the hub holds `position` (fails if it takes longer than `within`)."""
    start = time.monotonic()
    while True:
        got = hub.wait(after, timeout=max(0.0, start + within - time.monotonic()))
        assert got is not None
        if any(s.position == position for s in got):
            return time.monotonic() - start
        assert time.monotonic() - start < within, "the hub did not wake on the commit"


def test_another_process_append_wakes_the_hub_at_once(sql_backend: Backend) -> None:
    hub = _ready_hub(sql_backend)
    other = sql_backend.reopen()  # another process's store: its appends bump only its own
    try:
        tid = f"table-{uuid.uuid4().hex}"
        after = hub.head
        took = []
        for n in range(5):
            stored = other.append(tid, _event(n), n)
            took.append(_arrives(hub, after, stored[0].position, within=3.0))
            after = stored[0].position
        assert max(took) < 1.0, took  # a poll of POLL seconds would take far longer
        # Idle, the hub waits on the watch instead of reading the store again and again.
        reads = hub.reads
        time.sleep(0.5)
        assert hub.reads - reads <= 2
    finally:
        hub.unsubscribe()
        other.close()


def test_this_process_append_wakes_the_hub(sql_backend: Backend) -> None:
    hub = _ready_hub(sql_backend)
    try:
        tid = f"table-{uuid.uuid4().hex}"
        stored = sql_backend.store.append(tid, _event(0), 0)
        assert _arrives(hub, 0, stored[0].position, within=3.0) < 1.0
    finally:
        hub.unsubscribe()


def _appending(pg_url: str, schema: str) -> Any:
    """A connection in the middle of an append: it holds the appenders' lock and a
    transaction id, and has not committed (what PostgresStore.append does first)."""
    import psycopg

    from ledger.store.postgres import _WRITING

    conn = psycopg.connect(pg_url, options=f"-c search_path={schema}")
    conn.execute(f"SELECT {_WRITING}")
    conn.execute("SELECT pg_current_xact_id()")
    return conn


def test_postgres_an_event_held_back_arrives_when_the_older_append_ends(
        postgres_backend: Backend, pg_url: str) -> None:
    assert postgres_backend.spec is not None
    hub = _ready_hub(postgres_backend)
    try:
        with _appending(pg_url, postgres_backend.spec[2] or "") as blocker:
            tid = f"table-{uuid.uuid4().hex}"
            stored = postgres_backend.store.append(tid, _event(0), 0)
            got = hub.wait(hub.head, timeout=0.5)
            assert not any(s.position == stored[0].position for s in got or [])  # held back
            blocker.rollback()  # no NOTIFY comes of this: the hub must look again by itself
            assert _arrives(hub, 0, stored[0].position, within=3.0) < 1.0
    finally:
        hub.unsubscribe()


def test_postgres_read_all_waits_for_appends_in_progress_only(
        postgres_backend: Backend, pg_url: str) -> None:
    """The high-water mark waits for older transactions that may append, not for every
    transaction of the server (a long one anywhere held every feed back)."""
    import psycopg

    assert postgres_backend.spec is not None
    store = postgres_backend.store
    tid = f"table-{uuid.uuid4().hex}"
    with psycopg.connect(pg_url) as other:  # any other transaction with an id, open
        other.execute("SELECT pg_current_xact_id()")
        stored = store.append(tid, _event(0), 0)
        assert store.read_all(0, 10) == stored  # not held back by it
        assert store.last_position() == stored[0].position
        assert not store.held_back(stored[0].position)
        with _appending(pg_url, postgres_backend.spec[2] or "") as appender:
            later = store.append(tid, _event(1), 1)
            assert store.read_all(0, 10) == stored  # held back: an older append is open
            assert store.last_position() == stored[0].position
            # ...and said to be: a follower that read nothing new looks again soon (a
            # webhook run returned "done", and the club's last events waited for its next).
            assert store.held_back(stored[0].position)
            appender.rollback()
        assert store.read_all(0, 10) == stored + later
        assert not store.held_back(later[0].position)


@pytest.mark.parametrize("window", [None, 1])
def test_postgres_a_club_catch_up_passes_no_event_an_open_append_could_still_overtake(
        postgres_backend: Backend, pg_url: str, window: int | None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """API.md Feeds, exactly once: a club stream's catch-up reads the club's own streams
    (read_streams), not read_all, and still stops below the high-water mark. An append of
    one of the club's tables is open with a lower position than the club's event committed
    after it: the catch-up gives the club's first event only, and once that append commits,
    its event and then the later one, none skipped (also when the store reads the streams
    by their own key, past its window)."""
    from types import SimpleNamespace
    from typing import cast

    from ledger.app.feed import ClubSource
    from ledger.app.service import Ledger
    from ledger.store.hashing import GENESIS, seal
    from ledger.store.postgres import _APPEND, _payload

    if window is not None:
        monkeypatch.setattr("ledger.store.postgres.STREAMS_WINDOW", window)
    assert postgres_backend.spec is not None
    store = postgres_backend.store
    club, table = f"club-{uuid.uuid4().hex}", f"table-{uuid.uuid4().hex}"
    source = ClubSource(cast(Ledger, SimpleNamespace(store=store)), club, {table})
    first = store.append(club, _event(0), 0)
    store.append(f"other-{uuid.uuid4().hex}", _event(9), 0)
    with _appending(pg_url, postgres_backend.spec[2] or "") as appender:
        later = store.append(club, _event(1), 1)  # committed, behind the open append
        got, more = source.catch_up(0)
        assert (got, more) == (first, False)
        # The open append lands, below `later`, then commits.
        sealed = seal(table, 0, GENESIS, _event(2))
        appender.execute(_APPEND, (table, 0, GENESIS, _payload(sealed), None, ""))
        got, more = source.catch_up(first[0].position)
        assert (got, more) == ([], False)
        appender.commit()
    landed = store.load(table)
    assert first[0].position < landed[0].position < later[0].position
    got, more = source.catch_up(first[0].position)
    assert (got, more) == (landed + later, False)


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_stores_that_hold_nothing_back_say_so(kind: str, request: pytest.FixtureRequest) -> None:
    from ledger.store.memory import MemoryStore

    store = MemoryStore() if kind == "memory" else request.getfixturevalue(
        "sqlite_backend").store
    stored = store.append(f"table-{uuid.uuid4().hex}", _event(0), 0)
    assert not store.held_back(0) and not store.held_back(stored[0].position)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_closed_store_ends_its_watch(kind: str, request: pytest.FixtureRequest) -> None:
    backend: Backend = request.getfixturevalue(f"{kind}_backend")
    watch = backend.store.watch()
    backend.store.close()
    thread = getattr(watch, "_thread", None)
    assert thread is None or not thread.is_alive()
