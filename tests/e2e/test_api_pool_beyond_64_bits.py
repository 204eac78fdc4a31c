"""RULES §8.4-8.5: an uncapped loo penalty is the whole pool, so a pool game's pool can grow
without limit (three players looed a hand triple it). Past 2**63 chips every answer must
still carry the exact integers: the JSON reads (API.md Audit), the hand histories and
their offline check (API.md "Hand history"), the event streams (API.md Feeds).

Before this release the NDJSON histories and the Server-Sent Events broke off mid-answer
there (their encoder refused integers beyond 64 bits), and `loo verify` and the import read
such integers as floats, so a true file failed its own hash chain."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from ledger.app.verify import VerifyError, documents, verify_document
from ledger.store.hashing import event_hash
from tests.e2e.club import Club, Table
from tests.e2e.test_api_clubs import League

SSE = "text/event-stream"
HANDS = 42  # 3**42 chips: past 2**64 as well as 2**63


def grow(club: Club, t: Table) -> int:
    """HANDS results-mode hands in which the dealer takes every trick and the three others
    are looed (each pays the pool at the start of the hand): the final pool."""
    for _ in range(HANDS):
        dealer = club.view(t)["dealer"]
        result = {"decisions": {str(s): "play" for s in range(4)}, "tricks": {str(dealer): 5}}
        r = club.start(t, {"result": result})
        assert r.status_code == 200, r.get_json()
    pool = club.view(t)["pool"]
    assert pool > 2**64, pool
    return pool


def sse_events(club: Club, url: str, token: str, last_position: int) -> list[dict[str, Any]]:
    """The stream's events up to `last_position` (it would go on waiting for more)."""
    r = club.c.get(url, headers=club.auth(token) | {"Accept": SSE}, buffered=False)
    assert r.status_code == 200, r.get_data()
    out: list[dict[str, Any]] = []
    buf = b""
    try:
        for chunk in r.response:
            buf += chunk
            *frames, buf = buf.split(b"\n\n")
            for frame in frames:
                data = [line[6:] for line in frame.split(b"\n") if line.startswith(b"data: ")]
                if data:
                    out.append(json.loads(data[0]))
            if out and out[-1]["position"] >= last_position:
                return out
    finally:
        r.close()
    raise AssertionError(f"the stream ended after {len(out)} events")


def test_hand_history_streams_and_verifies_a_pool_beyond_64_bits(club: Club):
    t = club.create(deal="results", first_dealer=0)
    pool = grow(club, t)
    assert club.get(t, path="/ledger").get_json()["balances"]["pool"] == pool
    r = club.get(t, path="/history")
    assert r.status_code == 200 and r.mimetype == "application/x-ndjson"
    data = r.get_data()
    docs = [json.loads(line) for line in data.splitlines()]
    assert [d["hand"]["number"] for d in docs] == list(range(1, HANDS + 1))
    assert docs[-1]["events"][-1]["data"]["pool"] == pool
    # The per-hand file, and the offline check of the NDJSON as `loo verify -` reads it.
    one = club.get(t, path=f"/hands/{HANDS}/history").get_json()
    assert one == docs[-1]
    parsed = [doc for _, doc in documents(io.BytesIO(data))]
    assert parsed == docs
    for doc in parsed:
        verify_document(doc)
    # A file whose settlement was changed is refused naming what the rules give (the message
    # quoted the expected event with the encoder that refused its pool: a TypeError).
    forged = parsed[-1]
    prev = forged["events"][0]["prev_hash"]
    for e in forged["events"]:  # the chain made again over the change, as a forger would
        if e["type"] == "hand_settled":
            e["data"]["pool"] += 1
        e["prev_hash"] = prev
        e["hash"] = prev = event_hash(prev, t.id, e["version"], e["type"], e["hand"],
                                      e["data"], e["causation"], e["recorded_at"])
    forged["checkpoint"]["hash"] = prev
    with pytest.raises(VerifyError, match=f"hand_settled .*{pool}"):
        verify_document(forged)


def test_feeds_stream_a_pool_beyond_64_bits(club: Club):
    lg = League(club)
    t = lg.table([lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")], deal="results")
    pool = grow(club, t)
    events = club.get(t, path="/events?limit=1000").get_json()["events"]
    last = events[-1]
    assert last["type"] == "hand_settled" and last["data"]["pool"] == pool
    for url, token in ((f"/v1/tables/{t.id}/events", t.admin),
                       (lg.url("/events"), lg.viewer)):
        got = sse_events(club, url, token, last["position"])
        assert got[-1]["position"] == last["position"], url
        assert got[-1]["data"]["pool"] == pool, url
