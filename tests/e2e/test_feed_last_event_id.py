"""Last-Event-ID on the SSE feeds (API.md Feeds), both stores: an empty one is no id (the
SSE spec: the last event ID buffer is empty until an `id:` arrives), so the stream starts
where ?after= says, or at the beginning, exactly as without the header."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.club import Club
from tests.e2e.test_api_clubs import League

SSE = "text/event-stream"


def first_chunks(club: Club, url: str, token: str, headers: dict[str, str]) -> list[bytes]:
    """The stream's first two chunks: where it follows from, then the events caught up."""
    r = club.c.get(url, headers=club.auth(token) | {"Accept": SSE} | headers, buffered=False)
    assert r.status_code == 200, r.get_data()
    assert r.mimetype == SSE
    try:
        it = iter(r.response)
        return [next(it), next(it)]
    finally:
        r.close()


def feeds(club: Club) -> list[tuple[str, str, list[int]]]:
    """(url, token, positions) of a table's feed and a club's feed, each with events."""
    lg = League(club)
    t = lg.table([lg.member(n) for n in ("Ann", "Bob", "Cat")])
    table_events = club.c.get(f"/v1/tables/{t.id}/events", headers=club.auth(t.admin))
    club_events = club.c.get(lg.url("/events"), headers=lg.h(lg.viewer))
    return [(f"/v1/tables/{t.id}/events", t.admin,
             [e["position"] for e in table_events.get_json()["events"]]),
            (lg.url("/events"), lg.viewer,
             [e["position"] for e in club_events.get_json()["events"]])]


@pytest.mark.parametrize("empty", ["", " "])
def test_an_empty_last_event_id_is_no_id(club: Club, empty: str):
    for url, token, positions in feeds(club):
        assert len(positions) > 3
        start, first = first_chunks(club, url, token, {"Last-Event-ID": empty})
        assert start.endswith(b": following from position 0\n\n"), start
        assert first.startswith(b"id: %d\n" % positions[0]), first[:80]
        # With ?after=: from there, as if the header had not been sent.
        after = positions[2]
        start, first = first_chunks(club, f"{url}?after={after}", token,
                                    {"Last-Event-ID": empty})
        assert start.endswith(b": following from position %d\n\n" % after), start
        assert first.startswith(b"id: %d\n" % positions[3]), first[:80]


def test_a_last_event_id_that_is_not_a_position_is_still_refused(club: Club):
    for url, token, _ in feeds(club):
        for raw in ("x", "-1", "1.5", "0x10"):
            r: Any = club.c.get(url, headers=club.auth(token) | {"Accept": SSE,
                                                                 "Last-Event-ID": raw})
            j = club.problem(r, 400, "invalid_last_event_id")
            assert j["title"] == "Bad request"


def test_a_last_event_id_of_thousands_of_digits_is_a_400_not_a_500(club: Club):
    """Past 4300 digits Python's int() refuses a string (ValueError): such a header was a
    500. It is no position either (more than 19 digits), so it is refused as one; leading
    zeros still count for nothing."""
    for url, token, positions in feeds(club):
        for raw in ("9" * 4301, "1" * 8000, "9" * 20):
            r: Any = club.c.get(url, headers=club.auth(token) | {"Accept": SSE,
                                                                 "Last-Event-ID": raw})
            club.problem(r, 400, "invalid_last_event_id")
        _, first = first_chunks(club, url, token,
                                {"Last-Event-ID": "0" * 30 + str(positions[0])})
        assert first.startswith(b"id: %d\n" % positions[1]), first[:80]


@pytest.mark.parametrize("accept", ["TEXT/EVENT-STREAM", "Text/Event-Stream; charset=utf-8",
                                    "application/json;q=0.5, text/event-stream"])
def test_feeds_a_media_type_is_case_insensitive_in_accept(club: Club, accept: str):
    """Media types are case-insensitive (RFC 9110 8.3.1): an Accept of TEXT/EVENT-STREAM
    asks for the stream as the lower-case one does (it was answered with JSON)."""
    for url, token, positions in feeds(club):
        r = club.c.get(url, headers=club.auth(token) | {"Accept": accept}, buffered=False)
        try:
            assert r.status_code == 200, r.get_data()
            assert r.mimetype == SSE, (accept, r.mimetype)
            it = iter(r.response)
            next(it)
            assert next(it).startswith(b"id: %d\n" % positions[0])
        finally:
            r.close()
