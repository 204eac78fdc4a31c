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
