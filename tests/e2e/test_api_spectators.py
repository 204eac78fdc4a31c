"""API.md "Spectators": a read-only token that sees what no seat hides, revocable."""

from __future__ import annotations

import json

from ledger.app.checkpoints import public_key
from ledger.app.verify import verify_document
from tests.e2e.club import Club, Table


def _spectator(club: Club, t: Table, **body) -> dict:
    r = club.post(t, "/spectators", body)
    assert r.status_code == 201, r.get_json()
    return r.get_json()


def _tiles_in(obj) -> list[str]:
    """Every hand's tiles a document shows (lists under `hands`), wherever they are."""
    found: list[str] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "hands" and isinstance(v, dict):
                found += [x for h in v.values() if isinstance(h, list) for x in h]
            else:
                found += _tiles_in(v)
    elif isinstance(obj, list):
        for v in obj:
            found += _tiles_in(v)
    return found


def test_a_spectator_sees_no_hidden_tile_while_live_and_every_tile_once_complete(club: Club):
    t = club.create(first_dealer=0)
    spy = _spectator(club, t, label="club screen")["token"]
    assert club.view(t, spy)["viewer"] == {"role": "spectator", "seat": None}
    while club.view(t)["hand"]["number"] == 1:
        view = club.view(t, spy)
        assert _tiles_in(view) == [] and view["legal_actions"] == []
        events = club.get(t, spy, "/events?limit=1000").get_json()["events"]
        for e in events:
            if e["hand"] == 1:
                assert _tiles_in(e["data"]) == [], e
                assert not isinstance(e["data"].get("boneyard"), list), e
                assert not isinstance(e["data"].get("drawn"), list), e
                if e["type"] == "tiles_discarded":
                    assert not isinstance(e["data"].get("tiles"), list), e
        club.problem(club.get(t, spy, "/hands/1/replay"), 403)
        seat = view["hand"]["turn"]
        club.ok(t, club.view(t, t.seats[seat])["legal_actions"][0], t.seats[seat])
    record = club.get(t, spy, "/hands/1").get_json()
    assert len(_tiles_in(record)) >= 15  # every seat's tiles, now that the hand is over
    assert club.get(t, spy, "/hands/1/replay?step=3").status_code == 200
    ledger = club.get(t, spy, "/ledger").get_json()
    assert sum(ledger["balances"].values()) == 0


def test_a_spectator_writes_nothing(club: Club):
    t = club.create(first_dealer=0)
    spy = _spectator(club, t)["token"]
    version = club.view(t)["version"]
    club.problem(club.act(t, {"type": "decide", "choice": "play", "seat": 1}, spy), 403,
                 "read_only_token")
    club.problem(club.post(t, "/close", {}, spy), 403, "read_only_token")
    club.problem(club.post(t, "/spectators", {}, spy), 403, "read_only_token")
    club.problem(club.get(t, spy, "/audit"), 403)
    assert club.view(t)["version"] == version


def test_revoked_at_once_and_only_the_admin_manages_spectators(club: Club):
    t = club.create(first_dealer=0)
    made = _spectator(club, t, label="bar")
    club.problem(club.post(t, "/spectators", {}, t.seats[0]), 403, "admin_only")
    listed = club.get(t, path="/spectators").get_json()
    assert listed == {"items": [{"id": made["id"], "label": "bar"}], "next": None}
    assert "token" not in json.dumps(listed)
    r = club.c.delete(f"/v1/tables/{t.id}/spectators/{made['id']}",
                      headers=club.auth(t.seats[0]))
    club.problem(r, 403, "admin_only")
    r = club.c.delete(f"/v1/tables/{t.id}/spectators/{made['id']}", headers=club.auth(t.admin))
    assert r.status_code == 204
    club.problem(club.get(t, made["token"]), 401, "invalid_token")
    r = club.c.delete(f"/v1/tables/{t.id}/spectators/{made['id']}", headers=club.auth(t.admin))
    club.problem(r, 404, "spectator_not_found")
    assert club.get(t, path="/spectators").get_json()["items"] == []
    other = club.create(first_dealer=0)
    spy = _spectator(club, other)["token"]
    club.problem(club.get(t, spy), 401)  # a token of one table opens nothing at another


def test_an_idempotency_key_repeat_answers_with_the_same_token(club: Club):
    t = club.create(first_dealer=0)
    key = {"Idempotency-Key": "spectator-1"}
    first = club.post(t, "/spectators", {"label": "x"}, headers=key)
    again = club.post(t, "/spectators", {"label": "x"}, headers=key)
    assert first.status_code == again.status_code == 201
    assert first.get_json() == again.get_json()
    assert len(club.get(t, path="/spectators").get_json()["items"]) == 1
    club.problem(club.post(t, "/spectators", {"label": "y"}, headers=key), 409)


def test_a_spectator_added_mid_hand_leaves_the_audit_and_the_hand_history_whole(club: Club):
    t = club.create(first_dealer=0)
    seat = club.view(t)["hand"]["turn"]
    club.ok(t, club.view(t, t.seats[seat])["legal_actions"][0], t.seats[seat])
    _spectator(club, t)
    while club.view(t)["hand"]["number"] == 1:
        seat = club.view(t)["hand"]["turn"]
        club.ok(t, club.view(t, t.seats[seat])["legal_actions"][0], t.seats[seat])
    assert club.get(t, path="/audit").get_json()["ok"] is True
    doc = club.get(t, path="/hands/1/history").get_json()
    verify_document(doc, public_key(club.c.get("/v1/checkpoints/key").get_json()["public_key"]))
