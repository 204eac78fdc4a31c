"""API.md "Checkpoints": a signed head after every settled hand, kept where the database's
owner cannot forge one; the audit fails naming the checkpoint when the log no longer
reaches it (events deleted, or the chain rewritten with recomputed hashes)."""

from __future__ import annotations

import base64
import json
import sqlite3
from typing import Any

import psycopg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ledger.store.hashing import event_hash
from tests.e2e.club import Club, Table

ROUND = {"result": {"decisions": {"0": "play", "1": "play", "2": "play", "3": "play"},
                    "tricks": {"0": 2, "1": 1, "2": 1, "3": 1}}}


def _three_hands(club: Club) -> Table:
    t = club.create(deal="results", first_dealer=0)
    for _ in range(3):
        assert club.start(t, ROUND).status_code == 200
    return t


def _events(club: Club, t: Table) -> list[dict[str, Any]]:
    return club.get(t, path="/events?limit=1000").get_json()["events"]


def test_a_checkpoint_after_every_settled_hand_signed_over_the_head(club: Club):
    t = _three_hands(club)
    items = club.get(t, t.seats[2], "/checkpoints").get_json()
    cps = items["items"]
    assert items["next"] is None and len(cps) == 3
    events = {e["version"]: e for e in _events(club, t)}
    key = club.c.get("/v1/checkpoints/key").get_json()
    public = Ed25519PublicKey.from_public_bytes(base64.b64decode(key["public_key"]))
    for cp in cps:
        assert set(cp) >= {"table", "version", "hash", "at", "signature"}
        assert cp["table"] == t.id and events[cp["version"]]["type"] == "hand_settled"
        assert cp["hash"] == events[cp["version"]]["hash"]
        signed = json.dumps({k: cp[k] for k in ("table", "version", "hash", "at")},
                            sort_keys=True, separators=(",", ":")).encode()
        public.verify(base64.b64decode(cp["signature"]), signed)  # raises if forged
    page = club.get(t, path="/checkpoints?limit=2").get_json()
    assert page["items"] == cps[:2] and page["next"]
    rest = club.get(t, path=f"/checkpoints?limit=2&cursor={page['next']}").get_json()
    assert rest == {"items": cps[2:], "next": None}
    for bad in ("limit=0", "limit=501", "cursor=zz"):
        club.problem(club.get(t, path=f"/checkpoints?{bad}"), 422)
    assert club.get(t, path="/audit").get_json()["checks"]["checkpoints"] is True


class Database:
    """Direct access to the test's database, as whoever owns it could tamper with it."""

    def __init__(self, url: str) -> None:
        self.url = url

    def run(self, sql: str, *args: Any) -> None:
        if self.url.startswith("sqlite"):
            conn = sqlite3.connect(self.url.removeprefix("sqlite:///"), isolation_level=None)
            for trigger in ("events_no_update", "events_no_delete"):
                conn.execute(f"DROP TRIGGER IF EXISTS {trigger}")
            conn.execute(sql.replace("%s", "?"), args)
            conn.close()
            return
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("ALTER TABLE events DISABLE TRIGGER events_append_only")
            try:
                conn.execute(sql, args)
            finally:
                conn.execute("ALTER TABLE events ENABLE TRIGGER events_append_only")


@pytest.fixture
def db(backend_url: str) -> Database:
    return Database(backend_url)


def _audit(club: Club, t: Table) -> dict[str, Any]:
    # A fresh read: the service caches projections, the tamperer bypassed it.
    club.c.application.extensions["loo_ledger"]._cache.clear()
    return club.get(t, path="/audit").get_json()


def test_audit_fails_naming_the_checkpoint_when_the_last_events_are_deleted(club: Club,
                                                                            db: Database):
    t = _three_hands(club)
    last = club.get(t, path="/checkpoints").get_json()["items"][-1]
    events = _events(club, t)
    cut = events[-4]["version"]  # the last hand's settlement goes: the chain itself stays whole
    db.run("DELETE FROM events WHERE table_id = %s AND version > %s", t.id, cut)
    out = _audit(club, t)
    assert out["ok"] is False and out["checks"]["hash_chain"] is True
    assert f"checkpoint at version {last['version']}" in out["checks"]["checkpoints"]
    assert "deleted" in out["checks"]["checkpoints"]


def test_audit_fails_naming_the_checkpoint_when_the_chain_is_rewritten(club: Club,
                                                                       db: Database):
    t = _three_hands(club)
    cps = club.get(t, path="/checkpoints").get_json()["items"]
    events = _events(club, t)
    # Rewrite hand 2's start time and re-hash every event from there on, as an owner could.
    target = next(e for e in events if e["hand"] == 2 and e["type"] == "hand_started")
    prev = target["prev_hash"]
    for e in events[events.index(target):]:
        h = event_hash(prev, t.id, e["version"], e["type"], e["hand"], e["data"], e["causation"],
                       e["recorded_at"] + ("x" if e is target else ""))
        db.run("UPDATE events SET recorded_at = %s, prev_hash = %s, hash = %s "
               "WHERE table_id = %s AND version = %s",
               e["recorded_at"] + ("x" if e is target else ""), prev, h, t.id, e["version"])
        prev = h
    out = _audit(club, t)
    assert out["checks"]["hash_chain"] is True  # recomputed: the chain alone looks fine
    assert out["ok"] is False
    assert f"checkpoint at version {cps[-1]['version']}" in out["checks"]["checkpoints"]
    assert "rewritten" in out["checks"]["checkpoints"]


# ---- Corrections and the close: signed like a settlement ----------------------------------

def _voided_and_closed(club: Club) -> tuple[Table, dict[str, Any], dict[str, Any]]:
    """Three settled hands, the third voided, then the table closed: (table, the
    hand_voided, the table_closed) as the feed shows them."""
    t = _three_hands(club)
    r = club.post(t, "/hands/3/void", {"reason": "tricks entered wrong"})
    assert r.status_code == 200, r.get_json()
    void = _events(club, t)[-1]
    assert club.post(t, "/close", {}).status_code == 200
    closed = _events(club, t)[-1]
    assert (void["type"], closed["type"]) == ("hand_voided", "table_closed")
    return t, void, closed


def test_corrections_a_void_and_the_close_are_signed_and_ride_on_the_event_they_name(
        club: Club):
    """API.md Checkpoints, Corrections: after a table's last settled hand nothing was signed,
    neither a void (its compensating transfers are its data) nor table_closed. Each now has
    its checkpoint, listed, on the event it names in the feed, and valid."""
    t, void, closed = _voided_and_closed(club)
    cps = club.get(t, path="/checkpoints").get_json()["items"]
    assert len(cps) == 5
    key = club.c.get("/v1/checkpoints/key").get_json()
    public = Ed25519PublicKey.from_public_bytes(base64.b64decode(key["public_key"]))
    for cp, e in zip(cps[3:], (void, closed), strict=True):
        assert (cp["table"], cp["version"], cp["hash"], cp["position"]) == (
            t.id, e["version"], e["hash"], e["position"])
        assert e["checkpoint"] == cp  # the feed carries it on the event it names
        signed = json.dumps({k: cp[k] for k in ("table", "version", "hash", "at")},
                            sort_keys=True, separators=(",", ":")).encode()
        public.verify(base64.b64decode(cp["signature"]), signed)
    assert [e["version"] for e in _events(club, t) if "checkpoint" in e] == [
        cp["version"] for cp in cps]
    assert club.get(t, path="/audit").get_json()["checks"]["checkpoints"] is True


def test_corrections_deleting_a_void_fails_the_audit_naming_its_checkpoint(club: Club,
                                                                           db: Database):
    """Whoever can delete rows removed a table's last void (its events are the table's last
    ones) and the audit passed: the voided hand's chips counted again, unseen."""
    t = _three_hands(club)
    assert club.post(t, "/hands/3/void", {"reason": "typo"}).status_code == 200
    void = _events(club, t)[-1]
    assert void["type"] == "hand_voided" and _audit(club, t)["ok"] is True
    db.run("DELETE FROM events WHERE table_id = %s AND version >= %s", t.id, void["version"])
    out = _audit(club, t)
    assert out["ok"] is False and out["checks"]["hash_chain"] is True
    assert f"checkpoint at version {void['version']}" in out["checks"]["checkpoints"]
    assert "deleted" in out["checks"]["checkpoints"]


def test_corrections_deleting_table_closed_fails_the_audit_naming_its_checkpoint(
        club: Club, db: Database):
    t, _void, closed = _voided_and_closed(club)
    assert _audit(club, t)["ok"] is True
    db.run("DELETE FROM events WHERE table_id = %s AND version = %s", t.id, closed["version"])
    out = _audit(club, t)
    assert out["ok"] is False and out["checks"]["hash_chain"] is True
    assert f"checkpoint at version {closed['version']}" in out["checks"]["checkpoints"]
    assert "deleted" in out["checks"]["checkpoints"]
