"""API.md Feeds: the club's events, read from the newest end. The club feed paged forward
by position only (?after=), so a client wanting a club's latest events had to guess a
position or read the club's whole history (the club feed page read back over the service's
last 2000 positions, and showed nothing of a club whose events lay further back).
?latest=n gives the club's n most recent events however long ago they happened, in the
feed's order, with `next` to follow on from and `earlier` to read back with ?before=."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.club import Club
from tests.e2e.test_api_clubs import RESULT_A, League
from tests.e2e.test_feed_last_event_id import SSE


def positions(events: list[dict[str, Any]]) -> list[int]:
    return [e["position"] for e in events]


def bury(club: Club, n: int) -> str:
    """`n` events of another stream, appended after the club's (directly: fast)."""
    from ledger.store.base import NewEvent

    store = club.c.application.extensions["loo_container"].store
    other = f"other-{store.last_position()}"
    for start in range(0, n, 1_000):
        store.append(other, [NewEvent("note", None, {"i": start + i}, None)
                             for i in range(1_000)], start)
    return other


def test_feeds_latest_gives_the_clubs_last_events_however_far_back_they_lie(club: Club):
    """The club's events lie behind 12,000 of another stream's (past the store's window of
    10,000, so the store reads the club's own streams): ?latest=3 is its last three, oldest
    first, `next` the head (?after= it: nothing until the club moves, then exactly that),
    and ?before=<earlier> reads back page by page to the club's first event, where
    `earlier` is null: the pages join into the whole feed, each event once."""
    lg = League(club)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")]
    t = lg.table(ms, deal="results")
    assert club.start(t, {"result": RESULT_A}).status_code == 200
    everything = lg.get("/events?limit=500").get_json()["events"]
    assert len(everything) > 12
    other = bury(club, 12_000)
    page = lg.get("/events?latest=3").get_json()
    assert page["events"] == page["items"] == everything[-3:]
    head = page["next"]
    assert head > everything[-1]["position"] and page["earlier"] == everything[-3]["position"]
    assert lg.get(f"/events?after={head}").get_json() == {"items": [], "events": [],
                                                           "next": head}
    read_back, earlier = page["events"], page["earlier"]
    while earlier is not None:
        before = lg.get(f"/events?before={earlier}&limit=5").get_json()
        assert before["events"] == before["items"] and 0 < len(before["events"]) <= 5
        assert before["next"] == earlier - 1
        read_back = before["events"] + read_back
        earlier = before["earlier"]
    assert read_back == everything and read_back[0]["type"] == "club_created"
    assert other not in str(read_back)
    whole = lg.get("/events?latest=500").get_json()
    assert whole["events"] == everything and whole["earlier"] is None
    # Followed on from `next`: the club's next event, once.
    lg.member("Eve")
    more = lg.get(f"/events?after={head}").get_json()["events"]
    assert [(e["type"], e["data"]["name"]) for e in more] == [("member_joined", "Eve")]
    assert lg.get("/events?latest=1").get_json()["events"] == more
    # A position past the head reads up to the head.
    far = lg.get(f"/events?before={2**62}&limit=2").get_json()
    assert far["events"] == everything[-1:] + more and far["next"] >= more[0]["position"]


def test_feeds_latest_shows_what_a_spectator_sees(club: Club):
    """The same events as the forward feed, redacted the same way (a live hand's tiles)."""
    lg = League(club)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")]
    lg.table(ms)  # shuffled: its first hand is dealt and live
    forward = lg.get("/events?limit=500").get_json()["events"]
    assert any(e["type"] == "tiles_dealt" for e in forward)
    assert lg.get("/events?latest=500").get_json()["events"] == forward


@pytest.mark.parametrize("query", [
    "latest=0", "latest=501", "latest=x", "latest=-1", "latest=", "latest=%C2%B2",
    "latest=0000000000000000000000000001", "latest=3&after=0", "latest=3&limit=3",
    "latest=3&before=5", "before=0", "before=x", "before=", "before=-1",
    f"before={2**63}", "before=5&after=1", "latest=3&latest=4", "before=5&before=6"])
def test_feeds_latest_and_before_refuse_a_bad_value_with_a_422(club: Club, query: str):
    lg = League(club)
    j = club.problem(lg.get(f"/events?{query}"), 422)
    assert j["code"] == "invalid_filter", j
    assert ("latest" in j["detail"]) or ("before" in j["detail"]), j


@pytest.mark.parametrize("query", ["latest=3", "before=5&limit=2"])
def test_feeds_a_stream_refuses_latest_and_before_naming_what_to_do(club: Club, query: str):
    """A stream goes forward: read the page as JSON, then stream from its `next`."""
    lg = League(club)
    j = club.problem(lg.get(f"/events?{query}", headers={"Accept": SSE}), 422, "invalid_filter")
    assert "?after=" in j["detail"], j


def test_feeds_the_spec_declares_latest_before_and_earlier(club: Club):
    spec = club.c.get("/openapi.json").get_json()
    op = spec["paths"]["/v1/clubs/{club_id}/events"]["get"]
    params = {p["name"]: p for p in op["parameters"] if p["in"] == "query"}
    latest, before = params["latest"]["schema"], params["before"]["schema"]
    assert (latest["type"], latest["minimum"], latest["maximum"]) == ("integer", 1, 500)
    assert (before["type"], before["minimum"]) == ("integer", 1)
    assert "most recent" in latest["description"] and "earlier" in before["description"]
    assert {"after", "limit", "latest", "before"} <= set(params)
    ref = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    shape = spec["components"]["schemas"][ref.rsplit("/", 1)[-1]]
    assert shape["properties"]["earlier"]["type"] == "integer"
    assert "?before=" in shape["properties"]["earlier"]["description"]
