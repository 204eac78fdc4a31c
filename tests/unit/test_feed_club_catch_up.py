"""API.md Feeds: a club's stream resumed far behind the head catches up from the club's own
streams (its stream and its tables'), not from every event of the store, and still gives
every event of the feed once, in order: tables begun while it catches up included."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Sequence
from types import SimpleNamespace
from typing import Any, cast

import pytest

from ledger.app import feed
from ledger.app.feed import ClubSource, FeedConfig, Hub, follow
from ledger.app.service import Ledger
from ledger.store.base import NewEvent, StoredEvent
from ledger.store.memory import MemoryStore

CLUB = "club-a"


def created(club: str | None) -> NewEvent:
    return NewEvent("table_created", None, {
        "variant": "loo", "scoring": "chips", "deal": "shuffled", "players": 4, "options": {},
        "first_dealer": 0, "tokens": {}, "club": club})


def note(i: int) -> NewEvent:
    return NewEvent("note", None, {"i": i})


class Club(ClubSource):
    """ClubSource as the stream reads it, rendered without the tables' projections (the
    events here are notes, not a game)."""

    def render_selected(self, mine: Sequence[StoredEvent],
                        ) -> list[tuple[int, str, dict[str, Any]]]:
        return [(s.position, s.type, {"stream": s.table_id}) for s in mine]


def source(store: MemoryStore, tables: set[str]) -> Club:
    return Club(cast(Ledger, SimpleNamespace(store=store)), CLUB, tables)


def the_feed(store: MemoryStore, tables: set[str], after: int) -> list[int]:
    """The club's feed after `after` by its definition: the club's stream, the tables listed
    when the stream opened, and every table created for the club."""
    everything = store.read_all(0, 10**9)
    mine = {CLUB} | tables | {s.table_id for s in everything if s.type == "table_created"
                              and s.data.get("club") == CLUB}
    return [s.position for s in everything if s.table_id in mine and s.position > after]


def ids_of(body: Any, want: int, within: float) -> list[int]:
    """The `id:` of the stream's events until `want` came (or `within` seconds passed)."""
    ids: list[int] = []
    deadline = time.monotonic() + within
    for chunk in body:
        ids += [int(line[4:]) for line in chunk.decode().splitlines() if line.startswith("id: ")]
        if len(ids) >= want or time.monotonic() > deadline:
            break
    body.close()
    return ids


def test_feeds_a_club_stream_far_behind_catches_up_without_reading_other_tables_events(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """5,000 events of other tables lie between the club's: its catch-up read all of them
    (read_all, a page of 1,000 at a time), to keep 17."""
    store = MemoryStore()
    store.append(CLUB, [note(i) for i in range(10)], 0)
    store.append("t1", [created(CLUB)] + [note(i) for i in range(4)], 0)
    for n in range(50):
        store.append(f"other-{n}", [created(None)] + [note(i) for i in range(99)], 0)
    store.append(CLUB, [note(i) for i in range(5)], 10)
    want = the_feed(store, {"t1"}, 3)
    assert len(want) == 17
    read: list[StoredEvent] = []
    for name in ("read_all", "read_streams", "first_events"):
        real = getattr(store, name)

        def counted(*args: Any, _real: Any = real, **kw: Any) -> list[StoredEvent]:
            got = _real(*args, **kw)
            read.extend(got)
            return got

        monkeypatch.setattr(store, name, counted)
    hub = Hub(store, poll=0.01)
    hub.subscribe()
    config = FeedConfig(keepalive=0.05, max_seconds=10.0, max_streams=1, poll=0.01)
    try:
        body = follow(source(store, {"t1"}), hub, 3, config, lambda d: json.dumps(d).encode())
        assert ids_of(body, len(want), within=10) == want
    finally:
        hub.unsubscribe()
    others = [s for s in read if s.table_id.startswith("other-")]
    # Their first events only (which tables begin in the span: none of them the club's).
    assert len(others) <= 50, f"read {len(others)} events of other tables"
    assert all(s.version == 1 for s in others)


@pytest.mark.parametrize("seed", range(4))
def test_feeds_a_club_stream_caught_up_in_pages_gives_each_event_once_tables_begun_included(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages of 3 events, a hub that keeps 5 to 10 (the stream falls behind it and reads the
    store again), and a writer appending meanwhile: the club's stream, its listed table,
    tables created for it (while the stream catches up or follows), and other tables and
    clubs. The stream gives exactly the feed's events, each once, in position order."""
    monkeypatch.setattr(feed, "PAGE", 3)
    rng = random.Random(seed)
    store = MemoryStore()
    versions: dict[str, int] = {}

    def append(table: str, events: list[NewEvent]) -> None:
        store.append(table, events, versions.get(table, 0))
        versions[table] = versions.get(table, 0) + len(events)

    def write(n: int, pause: bool) -> None:
        for i in range(n):
            roll = rng.random()
            if roll < 0.1:
                append(f"mine-{i}-{seed}", [created(CLUB), note(i)])
            elif roll < 0.2:
                append(f"theirs-{i}-{seed}", [created(rng.choice(["club-b", None]))])
            else:
                append(rng.choice(sorted(versions)), [note(i)])
            if pause and i % 7 == 0:
                time.sleep(0.001)

    append(CLUB, [note(0)])
    append("listed", [created(CLUB)])
    append("unlisted", [created("club-b")])
    write(60, pause=False)
    after = rng.choice(store.read_all(0, 10**9)).position
    # The club lists its tables created by then (a stream is given them when it opens).
    listed = {"listed"} | {s.table_id for s in store.read_all(0, after)
                           if s.type == "table_created" and s.data["club"] == CLUB}
    hub = Hub(store, poll=0.002, keep=5)
    hub.subscribe()
    config = FeedConfig(keepalive=0.02, max_seconds=20.0, max_streams=1, poll=0.002)
    try:
        body = follow(source(store, listed), hub, after, config,
                      lambda d: json.dumps(d).encode())
        writer = threading.Thread(target=write, args=(200, True))
        writer.start()
        first = next(body)
        assert first.startswith(b"retry:")
        got: list[int] = []
        deadline = time.monotonic() + 20
        while True:
            writer_done = not writer.is_alive()
            want = the_feed(store, listed, after)
            if writer_done and len(got) >= len(want):
                break
            assert time.monotonic() < deadline, (len(got), len(want))
            got += [int(line[4:]) for line in next(body).decode().splitlines()
                    if line.startswith("id: ")]
        writer.join()
        body.close()
    finally:
        hub.unsubscribe()
    assert got == the_feed(store, listed, after)


def test_feeds_a_club_catch_up_gives_nothing_past_the_head_it_read_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The head (last_position) is read before the club's streams: what commits between the
    two, past it, is left to the next read. A table of the club begun there, its first
    events not in the streams read, would otherwise be passed by the club's next event."""
    store = MemoryStore()
    store.append(CLUB, [note(0)], 0)
    head = store.last_position()
    store.append("t2", [created(CLUB), note(1)], 0)  # begun after the head was read
    store.append(CLUB, [note(2)], 1)
    monkeypatch.setattr(store, "last_position", lambda: head)
    club = source(store, set())
    got, more = club.catch_up(0)
    assert [s.position for s in got] == [1] and not more
    monkeypatch.undo()
    got, more = club.catch_up(head)
    assert [(s.table_id, s.position) for s in got] == [("t2", 2), ("t2", 3), (CLUB, 4)]
    assert not more
