"""API.md Feeds: a club's stream resumed far behind the head (?after=, Last-Event-ID). Its
catch-up read every event of the store from that position (read_all, a page of 1,000 at a
time) and kept the club's: on a service of many clubs, a full scan per reconnect. It reads
the club's own streams now, and still gives every event of the feed once, in order."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest

from tests.e2e.club import Club
from tests.e2e.test_api_clubs import RESULT_A, League
from tests.e2e.test_feed_last_event_id import SSE
from tests.e2e.test_feed_latest import bury


def whole_feed(lg: League) -> list[int]:
    """The positions of the club's feed, paged forward as JSON."""
    out: list[int] = []
    after = 0
    while True:
        page = lg.get(f"/events?after={after}&limit=500").get_json()
        out += [e["position"] for e in page["events"]]
        if page["next"] == after:
            return out
        after = page["next"]


def streamed(lg: League, headers: dict[str, str], query: str, want: int) -> list[int]:
    """The `id:` of the club's stream until `want` events came (a few seconds at most)."""
    r = lg.c.get(lg.url(f"/events{query}"), headers=lg.h(lg.viewer) | {"Accept": SSE} | headers,
                 buffered=False)
    assert r.status_code == 200, r.get_data()
    ids: list[int] = []
    deadline = time.monotonic() + 30
    try:
        for chunk in r.response:
            ids += [int(line[4:]) for line in chunk.decode().splitlines()
                    if line.startswith("id: ")]
            if len(ids) >= want or time.monotonic() > deadline:
                return ids
    finally:
        r.close()
    return ids


def test_feeds_a_club_stream_far_behind_reads_only_the_clubs_streams(
        club: Club, monkeypatch: pytest.MonkeyPatch) -> None:
    app = club.c.application
    app.extensions["loo_feed_config"] = dataclasses.replace(
        app.extensions["loo_feed_config"], keepalive=0.2)  # no wait of 15 s on a failure
    lg = League(club)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")]
    t = lg.table(ms, deal="results")
    assert club.start(t, {"result": RESULT_A}).status_code == 200
    other = bury(club, 12_000)  # past the store's window of 10,000 too
    lg.member("Eve")
    lg.table(ms[:3] + [lg.member("Fay")], deal="results")
    want = whole_feed(lg)
    assert len(want) > 20
    store = app.extensions["loo_container"].store
    read: list[Any] = []
    for name in ("read_all", "read_streams", "first_events", "load_after_position"):
        real = getattr(store, name)

        def counted(*args: Any, _real: Any = real, **kw: Any) -> list[Any]:
            got = _real(*args, **kw)
            read.extend(got)
            return got

        monkeypatch.setattr(store, name, counted)
    assert streamed(lg, {}, "?after=0", len(want)) == want
    assert streamed(lg, {"Last-Event-ID": str(want[3])}, "", len(want) - 4) == want[4:]
    theirs = [s for s in read if s.table_id == other]
    # At most its first event (which streams begin in the span): not its 12,000.
    assert len(theirs) <= 2, f"the catch-up read {len(theirs)} events of another stream"
