"""RULES §10 against an attacker: nothing a seat, a spectator or a club viewer reads while a
hand is live lets it work out a hidden tile, not even by searching the deal's few
possibilities against a hash."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from ledger.store.hashing import event_hash
from tests.e2e.club import Club, Table
from tests.e2e.test_api_webhooks import Receiver

ALL = [f"{a}-{b}" for a in range(7) for b in range(a + 1)]  # high end first
DEAL = {"hands": {"0": ["6-6", "5-5", "4-4", "3-3", "2-2"],
                  "1": ["6-5", "6-4", "5-3", "2-1", "1-0"]}, "turn_up": "6-2"}


def _recorded_two_player(club: Club) -> Table:
    t = club.create(seats=[{"name": "Ann"}, {"name": "Bob"}], scoring="points",
                    deal="recorded", first_dealer=0, options={"auto_deal": False})
    assert club.start(t, DEAL).status_code == 200
    return t


def _events(club: Club, t: Table, token: str) -> list[dict[str, Any]]:
    r = club.get(t, token, "/events?limit=500")
    assert r.status_code == 200, r.get_json()
    return r.get_json()["events"]


def _canonical(tile: str) -> int:
    a, b = map(int, tile.split("-"))
    return [(x, y) for x in range(7) for y in range(x, 7)].index((min(a, b), max(a, b)))


def _search_seat_1(table_id: str, seen: list[dict[str, Any]]) -> tuple[str, ...] | None:
    """Seat 0's attack: try every hand seat 1 could hold against every hash it was shown
    after the deal (the chain from the hash of the deal's predecessor, which it sees)."""
    dealt = next(e for e in seen if e["type"] == "tiles_dealt")
    later = [e for e in seen if e["version"] > dealt["version"]]
    shown = {e["hash"] for e in later if e["hash"]} | {e["prev_hash"] for e in later
                                                          if e["prev_hash"]}
    if not shown:
        return None
    mine = dealt["data"]["hands"]["0"]
    turn_up = next(e for e in seen if e["type"] == "trump_turned")["data"]["tile"]
    # (seat 1's tiles were entered high first: each hand is tried in that order only)
    unseen = sorted((x for x in ALL if x not in mine and x != turn_up), key=_canonical,
                    reverse=True)
    for other in itertools.combinations(unseen, 5):  # C(22, 5) = 26,334 hands
        boneyard = sorted(set(unseen) - set(other), key=_canonical)
        data = {"hands": {"0": mine, "1": list(other)}, "boneyard": boneyard,
                "ordered": False, "seed": None}
        digest = event_hash(dealt["prev_hash"], table_id, dealt["version"], "tiles_dealt",
                            dealt["hand"], data, dealt["causation"], dealt["recorded_at"])
        for e in later:  # the rest of the chain is public: its hashes follow
            if digest in shown:
                return other
            digest = event_hash(digest, table_id, e["version"], e["type"], e["hand"],
                                e["data"], e["causation"], e["recorded_at"])
        if digest in shown:
            return other
    return None


def test_s10_a_spectator_added_mid_hand_shows_no_hash_over_the_live_deal(club: Club):
    """A table-level event appended while a hand is live (a spectator added or revoked)
    chains on the hand's hidden events: its prev_hash and hash commit to the deal. Shown to
    a seat, the hash of a recorded deal is one of a few ten thousand: seat 0 found seat 1's
    hand in a fraction of a second. While the hand is live no caller but the admin sees a
    hash or prev_hash from the deal on, whatever hand the event belongs to; once the hand
    is complete the whole chain shows again."""
    t = _recorded_two_player(club)
    early = club.post(t, "/spectators", {"label": "revoked mid-hand"}).get_json()
    r = club.post(t, "/spectators", {"label": "club screen"})
    assert r.status_code == 201
    spy = r.get_json()["token"]
    gone = club.c.delete(f"/v1/tables/{t.id}/spectators/{early['id']}",
                         headers=club.auth(t.admin))
    assert gone.status_code in (200, 204), gone.get_json()
    answer = club.ok(t, {"type": "decide", "choice": "play"}, t.seats[1])
    assert _search_seat_1(t.id, _events(club, t, t.seats[0])) is None
    hand_started = next(e for e in _events(club, t, t.admin) if e["type"] == "hand_started")
    for token in (t.seats[0], spy):
        for seen in (_events(club, t, token), club.get(t, token, "/hands/1").get_json()
                     ["events"]):
            for e in seen:
                if e["version"] > hand_started["version"] and e["type"] != "stake_posted":
                    assert e["hash"] is None, e
                    assert e["prev_hash"] is None or e["type"] == "tiles_dealt", e
    for e in answer["events"]:  # the answer to seat 1's own move
        assert e["hash"] is None and e["prev_hash"] is None, e
    # The admin's view is whole, and so is everyone's once the hand is complete.
    assert all(e["hash"] for e in _events(club, t, t.admin))
    club.ok(t, {"type": "decide", "choice": "play"}, t.seats[0])
    while (view := club.view(t))["hand"]["phase"] == "playing":
        club.ok(t, view["legal_actions"][0])
    assert all(e["hash"] and e["prev_hash"] for e in _events(club, t, t.seats[0]))


def test_s10_the_club_feed_and_webhooks_show_no_hash_over_a_live_deal(
        club: Club, monkeypatch: pytest.MonkeyPatch):
    """The same through a club: its viewer token's feed and its webhooks' bodies (the
    spectator's view) carry no hash of a spectator event appended while a hand is live."""
    monkeypatch.setenv("LOO_WEBHOOK_ALLOW_PRIVATE", "1")
    r = club.c.post("/v1/clubs", json={"name": "Leaks"})
    cid, owner = r.get_json()["id"], r.get_json()["token"]
    viewer = club.c.post(f"/v1/clubs/{cid}/tokens", json={"role": "viewer"},
                         headers=club.auth(owner)).get_json()["token"]
    receiver = Receiver().start()
    try:
        hook = club.c.post(f"/v1/clubs/{cid}/webhooks", headers=club.auth(owner),
                           json={"url": receiver.url, "events": ["spectator_added"]})
        assert hook.status_code == 201, hook.get_json()
        r = club.c.post(f"/v1/clubs/{cid}/tables", headers=club.auth(owner), json={
            "seats": [{"name": "Ann"}, {"name": "Bob"}], "scoring": "points",
            "deal": "recorded", "first_dealer": 0, "options": {"auto_deal": False}})
        assert r.status_code == 201, r.get_json()
        t = Table(r.get_json()["id"], owner, [s["token"] for s in r.get_json()["seats"]], {})
        assert club.start(t, DEAL).status_code == 200
        assert club.post(t, "/spectators", {"label": "club screen"}).status_code == 201
        feed = club.c.get(f"/v1/clubs/{cid}/events?limit=500",
                          headers=club.auth(viewer)).get_json()["events"]
        (added,) = [e for e in feed if e["type"] == "spectator_added"]
        assert added["hash"] is None and added["prev_hash"] is None, added
        receiver.wait_for(lambda got: got, "the webhook")
        (body,) = receiver.docs()
        assert body["hash"] is None and body["prev_hash"] is None, body
    finally:
        receiver.stop()
