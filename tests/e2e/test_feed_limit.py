"""?limit= on the SSE feeds (API.md Feeds: "The same URL ... answer Accept:
text/event-stream"): it bounds the events one answer carries, as on the JSON feed, so a
stream asked with ?limit=n ends after n events and a reconnect with Last-Event-ID goes on
from the next one. Before, the parameter was accepted and silently ignored."""

from __future__ import annotations

import time
from typing import Any

from tests.e2e.club import Club
from tests.e2e.test_feed_last_event_id import SSE, feeds


def streamed_ids(club: Club, url: str, token: str, headers: dict[str, str],
                 most: int) -> tuple[list[int], bool]:
    """The `id:`s of one stream, read until it ends or more than `most` came (or 20 s), and
    whether it ended by itself."""
    r: Any = club.c.get(url, headers=club.auth(token) | {"Accept": SSE} | headers,
                        buffered=False)
    assert r.status_code == 200, r.get_data()
    ids: list[int] = []
    deadline = time.monotonic() + 20
    try:
        for chunk in r.response:
            ids += [int(line[4:]) for line in chunk.decode().splitlines()
                    if line.startswith("id: ")]
            if len(ids) > most or time.monotonic() > deadline:
                return ids, False
        return ids, True
    finally:
        r.close()


def test_feeds_limit_bounds_the_events_of_one_stream(club: Club):
    for url, token, positions in feeds(club):
        assert len(positions) > 5
        ids, ended = streamed_ids(club, f"{url}?limit=2", token, {}, 2)
        assert ids == positions[:2] and ended, (url, ids)
        # Resumed with Last-Event-ID (it wins over ?after=), the next two, then the end.
        ids, ended = streamed_ids(club, f"{url}?limit=2&after=0", token,
                                  {"Last-Event-ID": str(positions[1])}, 2)
        assert ids == positions[2:4] and ended, (url, ids)
        # With ?after= alone, and a bound larger than what is left: all of it, and the
        # stream stays open for what comes next (it did not end by itself).
        ids, ended = streamed_ids(club, f"{url}?after={positions[-2]}&limit=500", token, {},
                                  0)
        assert ids == positions[-1:] and not ended, (url, ids)


def test_feeds_a_bad_limit_is_a_422_on_the_stream_too(club: Club):
    for url, token, _ in feeds(club):
        for raw in ("0", "x", "-1", "100000"):
            r: Any = club.c.get(f"{url}?limit={raw}", headers=club.auth(token) | {"Accept": SSE})
            j = club.problem(r, 422)
            assert "limit" in j["detail"], j
