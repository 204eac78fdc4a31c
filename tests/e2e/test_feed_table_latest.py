"""API.md Audit (a table's events) read from the newest end, as the club feed's are (API.md
Feeds): `GET /v1/tables/{id}/events?latest=n` gives the table's n most recent events, in
the same order and with the same hidden-information redaction as a forward page, in the
same answer (`{"events", "next"}`, plus `earlier` to read back with ?before=). They were a
422 unknown_filter: a client wanting a long table's last moves paged its whole history."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.club import Club, Table
from tests.e2e.test_feed_last_event_id import SSE


def events(club: Club, t: Table, token: str, query: str) -> dict[str, Any]:
    r = club.get(t, token, f"/events?{query}")
    assert r.status_code == 200, r.get_json()
    return r.get_json()


def played(club: Club, moves: int) -> Table:
    """A shuffled table whose first hand is live, `moves` decisions and plays in."""
    t = club.create()
    for _ in range(moves):
        view = club.view(t)
        hand = view["hand"]
        if hand is None or hand["phase"] == "complete":
            break
        club.ok(t, view["legal_actions"][0])
    return t


def test_audit_latest_gives_the_tables_last_events_and_before_reads_back_to_its_first(
        club: Club):
    t = played(club, 6)
    whole = events(club, t, t.admin, "limit=1000")["events"]
    last = whole[-1]["version"]
    assert len(whole) > 12 and [e["version"] for e in whole] == list(range(1, last + 1))
    page = events(club, t, t.admin, "latest=3")
    assert page == {"events": whole[-3:], "next": last, "earlier": last - 2}
    assert events(club, t, t.admin, f"after={page['next']}") == {"events": [], "next": last}
    read_back, earlier = page["events"], page["earlier"]
    while earlier is not None:
        before = events(club, t, t.admin, f"before={earlier}&limit=5")
        assert 0 < len(before["events"]) <= 5 and before["next"] == earlier - 1
        read_back = before["events"] + read_back
        earlier = before["earlier"]
    assert read_back == whole and read_back[0]["type"] == "table_created"
    assert events(club, t, t.admin, "latest=1000") == {"events": whole, "next": last,
                                                        "earlier": None}
    assert events(club, t, t.admin, "before=1") == {"events": [], "next": 0, "earlier": None}
    far = events(club, t, t.admin, f"before={2**70}&limit=2")
    assert far == {"events": whole[-2:], "next": last, "earlier": last - 1}
    # Followed on from `next`: the table's next events, once.
    view = club.view(t)
    club.ok(t, view["legal_actions"][0])
    more = events(club, t, t.admin, f"after={last}")["events"]
    assert more and more[0]["version"] == last + 1
    assert events(club, t, t.admin, f"latest={len(more)}")["events"] == more


def test_audit_latest_and_before_redact_a_seats_view_as_a_forward_page_does(club: Club):
    """A seat token gets the hidden information removed from the live hand's events on a
    page read back exactly as on one read forward (its own tiles only), the admin all."""
    t = played(club, 5)
    r = club.post(t, "/spectators", {})
    assert r.status_code == 201, r.get_json()
    for token in (t.admin, *t.seats, r.get_json()["token"]):
        forward = events(club, t, token, "limit=1000")["events"]
        assert events(club, t, token, "latest=1000")["events"] == forward
        assert events(club, t, token, "latest=4")["events"] == forward[-4:]
        back = events(club, t, token, f"before={forward[-4]['version']}&limit=6")
        assert back["events"] == forward[-10:-4]
    dealt = [[e for e in events(club, t, token, "latest=1000")["events"]
              if e["type"] == "tiles_dealt"] for token in (t.admin, t.seats[0])]
    assert dealt[0] and dealt[0] != dealt[1]  # the seat's is redacted


@pytest.mark.parametrize("query", [
    "latest=0", "latest=1001", "latest=x", "latest=-1", "latest=", "latest=1.5",
    "before=0", "before=x", "before=", "before=-1", "latest=3&latest=4", "before=5&before=6"])
def test_audit_latest_and_before_refuse_a_bad_value_with_a_422(club: Club, query: str):
    t = club.create()
    j = club.problem(club.get(t, path=f"/events?{query}"), 422)
    assert j["code"] in ("validation_error", "invalid_filter"), j
    assert ("latest" in j["detail"]) or ("before" in j["detail"]), j


@pytest.mark.parametrize("query", [
    "latest=3&after=0", "latest=3&limit=3", "latest=3&before=5", "before=5&after=1"])
def test_audit_latest_and_before_refuse_a_combination_naming_it(club: Club, query: str):
    t = club.create()
    j = club.problem(club.get(t, path=f"/events?{query}"), 422, "invalid_filter")
    assert "after" in j["detail"] or "limit" in j["detail"] or "before" in j["detail"], j


@pytest.mark.parametrize("query", ["latest=3", "before=5&limit=2"])
def test_audit_a_stream_refuses_latest_and_before_naming_what_to_do(club: Club, query: str):
    """A stream goes forward, and counts positions: read the page, then stream after its
    last event's position."""
    t = club.create()
    r = club.c.get(f"/v1/tables/{t.id}/events?{query}",
                   headers=club.auth(t.admin) | {"Accept": SSE})
    j = club.problem(r, 422, "invalid_filter")
    assert "position of its last event" in j["detail"], j


def test_audit_the_spec_declares_latest_before_and_earlier_on_the_table_events(club: Club):
    spec = club.c.get("/openapi.json").get_json()
    op = spec["paths"]["/v1/tables/{table_id}/events"]["get"]
    params = {p["name"]: p for p in op["parameters"] if p["in"] == "query"}
    assert set(params) == {"after", "limit", "latest", "before"}
    latest, before = params["latest"]["schema"], params["before"]["schema"]
    assert (latest["type"], latest["minimum"], latest["maximum"]) == ("integer", 1, 1000)
    assert (before["type"], before["minimum"]) == ("integer", 1)
    assert "most recent" in params["latest"]["description"]
    assert "earlier" in params["before"]["description"]
    ref = op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    shape = spec["components"]["schemas"][ref.rsplit("/", 1)[-1]]
    assert shape["required"] == ["events", "next"]
    assert shape["properties"]["earlier"]["type"] == "integer"
    assert "?before=" in shape["properties"]["earlier"]["description"]
