"""The feed's one poller per process (ledger/app/feed.py): a stream that falls behind what
the hub holds reads the store again, and nothing is delivered twice or skipped."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from typing import Any

from ledger.app.feed import FeedConfig, Hub, follow
from ledger.store.base import NewEvent, StoredEvent
from ledger.store.memory import MemoryStore


class Everything:
    """A source of every table's events (what a club feed does, without the redaction)."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store

    def catch_up(self, after: int) -> tuple[list[StoredEvent], bool]:
        found = self.store.read_all(after, 7)  # small pages: catch-up takes several reads
        return found, len(found) == 7

    def render(self, events: Sequence[StoredEvent]) -> list[tuple[int, str, dict[str, Any]]]:
        return [(s.position, s.type, {"table": s.table_id}) for s in events]


def _writer(store: MemoryStore, n: int) -> None:
    versions = {t: store.version(t) for t in "ab"}
    for i in range(n):
        t = "ab"[i % 2]
        store.append(t, [NewEvent("e", None, {"i": i})], versions[t])
        versions[t] += 1
        if i % 10 == 0:
            time.sleep(0.002)


def test_a_slow_stream_behind_the_hubs_window_reads_the_store_and_misses_nothing() -> None:
    store = MemoryStore()
    _writer(store, 30)  # history before the stream starts: caught up from the store
    hub = Hub(store, poll=0.005, keep=5)  # keeps 5-10 events: streams fall behind it
    hub.subscribe()
    config = FeedConfig(keepalive=0.05, max_seconds=3.0, max_streams=1, poll=0.005)
    body = follow(Everything(store), hub, 3, config, lambda d: json.dumps(d).encode())
    writer = threading.Thread(target=_writer, args=(store, 400))
    writer.start()
    ids: list[int] = []
    comments = 0
    for chunk in body:
        for frame in chunk.decode().split("\n\n"):
            for line in frame.splitlines():
                if line.startswith("id: "):
                    ids.append(int(line[4:]))
                elif line.startswith(":"):
                    comments += 1
        time.sleep(0.003)  # a slow reader
        if len(ids) >= 427:
            break
    writer.join()
    hub.unsubscribe()
    assert ids == list(range(4, 431))  # every event after position 3, once, in order
    assert comments >= 1


class Shared(Everything):
    """A source whose streams share their rendering (as every stream of one club does)."""

    scope = ("club", "c")

    def __init__(self, store: MemoryStore, rendered: list[int]) -> None:
        super().__init__(store)
        self.rendered = rendered

    def select(self, events: Sequence[StoredEvent]) -> list[StoredEvent]:
        return [s for s in events if s.table_id == "a"]  # this feed shows table a only

    def render(self, events: Sequence[StoredEvent]) -> list[tuple[int, str, dict[str, Any]]]:
        return self.render_selected(self.select(events))

    def render_selected(self, events: Sequence[StoredEvent],
                        ) -> list[tuple[int, str, dict[str, Any]]]:
        self.rendered.extend(s.position for s in events)
        return [(s.position, s.type, {"table": s.table_id}) for s in events]


def _ids(chunks: list[bytes]) -> list[int]:
    return [int(line[4:]) for c in chunks for line in c.decode().splitlines()
            if line.startswith("id: ")]


def test_live_events_are_rendered_once_for_all_the_streams_of_a_scope() -> None:
    store = MemoryStore()
    hub = Hub(store, poll=0.005)
    hub.subscribe()
    config = FeedConfig(keepalive=0.05, max_seconds=60, max_streams=3, poll=0.005)
    rendered: list[int] = []
    streams = [follow(Shared(store, rendered), hub, 0, config,
                      lambda d: json.dumps(d).encode()) for _ in range(3)]
    got: list[list[bytes]] = [[] for _ in streams]
    for i, body in enumerate(streams):
        while not got[i] or not got[i][-1].startswith(b": keepalive"):
            got[i].append(next(body))  # caught up (nothing yet), now following the hub
    writer = threading.Thread(target=_writer, args=(store, 40))
    writer.start()
    writer.join()
    deadline = time.monotonic() + 10
    for i, body in enumerate(streams):
        while len(_ids(got[i])) < 20 and time.monotonic() < deadline:
            got[i].append(next(body))
    hub.unsubscribe()
    want = [s.position for s in store.read_all(0, 100) if s.table_id == "a"]
    assert len(want) == 20
    for chunks in got:
        assert _ids(chunks) == want  # each stream: every event of its feed, once, in order
    # Rendered once each, not once per stream (what the first stream to meet an event
    # rendered, the others reused).
    assert sorted(rendered) == want


def test_a_scopes_frames_are_bounded_and_rendered_again_when_let_go() -> None:
    store = MemoryStore()
    _writer(store, 50)
    hub = Hub(store)
    hub.TRIM = 4
    built: list[int] = []

    def build(batch: Sequence[StoredEvent]) -> list[tuple[int, bytes]]:
        built.extend(s.position for s in batch)
        return [(s.position, b"%d;" % s.position) for s in batch]

    events = store.read_all(0, 100)
    for i in range(0, 50, 5):
        assert hub.frames("scope", events[i:i + 5], build) == b"".join(
            b"%d;" % s.position for s in events[i:i + 5])
        assert len(hub._frames["scope"]) <= 2 * hub.TRIM
    assert built == list(range(1, 51))  # each rendered once while kept
    assert hub.frames("scope", events[:2], build) == b"1;2;"  # let go: rendered again
    assert built[-2:] == [1, 2]


def test_the_hub_renders_a_followed_scopes_frames_before_it_wakes_the_streams() -> None:
    """A stream of a scope the hub renders ahead finds its frames made: it queues on no
    scope lock and renders nothing (the fifty streams of one club in a process did, one
    after the other, every batch)."""
    store = MemoryStore()
    hub = Hub(store, poll=0.005)
    hub.subscribe()
    floor = hub.snapshot_floor(5)
    assert floor is not None
    renderers: list[str] = []

    def build(batch: Sequence[StoredEvent]) -> list[tuple[int, bytes]]:
        renderers.append(threading.current_thread().name)
        return [(s.position, b"f%d\n" % s.position) for s in batch]

    hub.render_for("scope", lambda events: [s for s in events if s.table_id == "a"], build)
    _writer(store, 20)
    got: list[StoredEvent] = []
    deadline = time.monotonic() + 10
    while len(got) < 20 and time.monotonic() < deadline:
        got += hub.wait(got[-1].position if got else floor, 1.0) or []
    hub.unsubscribe()
    assert len(got) == 20

    def refuse(batch: Sequence[StoredEvent]) -> list[tuple[int, bytes]]:
        raise AssertionError(f"rendered again: {[s.position for s in batch]}")

    mine = [s for s in got if s.table_id == "a"]
    assert hub.frames("scope", mine, refuse) == b"".join(b"f%d\n" % s.position for s in mine)
    assert renderers and set(renderers) == {"loo-feed-hub"}


class OneTable(Everything):
    """A table's source: its catch-up reads only its own events, and its token is revoked
    by an event of another stream (its club's)."""

    def catch_up(self, after: int) -> tuple[list[StoredEvent], bool]:
        found = [s for s in self.store.read_all(after, 1000) if s.table_id == "a"]
        return found, False

    def still_allowed(self) -> bool:
        return not any(s.type == "token_revoked" for s in self.store.read_all(0, 1000))


def test_a_revocation_outside_the_tables_stream_ends_it_after_its_catch_up() -> None:
    """Committed before the hub's window (here: before the hub started), the revocation is
    in no batch the stream sees live, and the table's catch-up reads only the table: the
    stream asks once it has caught up, and ends before sending what the token may not see."""
    store = MemoryStore()
    _writer(store, 6)
    store.append("club", [NewEvent("token_revoked", None, {"id": "tok_1"})], 0)
    hub = Hub(store, poll=0.005)
    hub.subscribe()
    config = FeedConfig(keepalive=0.05, max_seconds=1.0, max_streams=1, poll=0.005)
    body = b"".join(follow(OneTable(store), hub, 0, config, lambda d: json.dumps(d).encode()))
    hub.unsubscribe()
    assert b"id: " not in body
    assert body.endswith(b": the token was revoked\n\n")


def test_feeds_limit_ends_a_stream_after_that_many_events_live_too() -> None:
    """?limit=n (API.md Feeds, the same URL as the JSON page): after its catch-up a stream
    follows the hub, and a batch that crosses the bound is cut there: n events, then the
    end, long before the stream's time limit."""
    store = MemoryStore()
    _writer(store, 4)  # caught up from the store: 4 of the 10
    hub = Hub(store, poll=0.005)
    hub.subscribe()
    config = FeedConfig(keepalive=0.05, max_seconds=30, max_streams=1, poll=0.005)
    body = follow(Everything(store), hub, 0, config, lambda d: json.dumps(d).encode(),
                  limit=10)
    writer = threading.Thread(target=_writer, args=(store, 40))
    started = time.monotonic()
    chunks: list[bytes] = []
    try:
        for chunk in body:
            chunks.append(chunk)
            if not writer.is_alive() and len(chunks) == 1:
                writer.start()  # once the stream began: the rest comes live
            if len(_ids(chunks)) > 10:
                break
    finally:
        writer.join()
        hub.unsubscribe()
    assert _ids(chunks) == list(range(1, 11))
    assert chunks[-1].startswith(b": 10 events sent")
    assert time.monotonic() - started < 20
