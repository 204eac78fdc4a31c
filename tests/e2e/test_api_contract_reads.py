"""The read side as an outside auditor uses it: ledger, events, hash chain, replay, audit,
the fair deal and what each token may see (API.md "Hands", "Audit", "Fair deal"; RULES §8-§10).

The auditor's tools here (hash chain, deal) are written from the contract, not imported.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import itertools
import json
import uuid

import pytest

from ledger.core import commands as c
from ledger.store.base import NewEvent
from tests.e2e.club import Club, Table

TILES = [f"{b}-{a}" for a in range(7) for b in range(a, 7)]  # 0-0, 1-0, ... high end first
GENESIS = "0" * 64


def _results(decisions: dict[str, str], tricks: dict[str, int] | None = None) -> dict:
    body: dict = {"decisions": decisions}
    if tricks is not None:
        body["tricks"] = tricks
    return {"result": body}


ALL_PLAY = {"0": "play", "1": "play", "2": "play", "3": "play"}
WORKED_EXAMPLE = [  # RULES §8: A=0 deals hand 1, B=1 hand 2, C=2 hand 3
    _results(ALL_PLAY, {"0": 3, "1": 0, "2": 0, "3": 2}),
    _results({"0": "play", "1": "drop", "2": "play", "3": "play"},
             {"0": 0, "1": 0, "2": 5, "3": 0}),
    _results(ALL_PLAY, {"0": 1, "1": 1, "2": 1, "3": 2}),
]


def _events(club: Club, t: Table, token: str | None = None) -> list[dict]:
    r = club.get(t, token, "/events?limit=1000")
    assert r.status_code == 200, r.get_json()
    return r.get_json()["events"]


def _event_hash(table_id: str, prev: str, e: dict) -> str:
    """sha256(prev_hash + canonical JSON of the event's envelope and data)."""
    body = {"table_id": table_id, "version": e["version"], "type": e["type"], "hand": e["hand"],
            "data": e["data"], "causation": e["causation"], "recorded_at": e["recorded_at"]}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256((prev + text).encode()).hexdigest()


# ---- RULES §8: the chip ledger ---------------------------------------------------------------

def test_s8_worked_example_ledger_lists_every_transfer_and_balance(club: Club):
    t = club.create(deal="results", first_dealer=0)
    for n, body in enumerate(WORKED_EXAMPLE, start=1):
        r = club.start(t, body)
        assert r.status_code == 200, r.get_json()
        assert club.get(t, path=f"/hands/{n}").get_json()["hand"]["pool_at_start"] == [
            25, 55, 115][n - 1]
    ledger = club.get(t, t.seats[2], "/ledger").get_json()  # every token of the table
    got = [(x["hand"], x["from"], x["to"], x["amount"], x["reason"]) for x in ledger["transfers"]]
    assert got == [
        (1, "seat:1", "pool", 5, "ante"), (1, "seat:2", "pool", 5, "ante"),
        (1, "seat:3", "pool", 5, "ante"), (1, "seat:0", "pool", 5, "ante"),
        (1, "seat:0", "pool", 5, "dealer_ante"),  # P = 25
        (1, "pool", "seat:0", 15, "trick"), (1, "pool", "seat:3", 10, "trick"),
        (1, "seat:1", "pool", 25, "loo"), (1, "seat:2", "pool", 25, "loo"),
        (2, "seat:1", "pool", 5, "dealer_ante"),  # the stake before hand 2 is hand 2's: P = 55
        (2, "pool", "seat:2", 55, "trick"),
        (2, "seat:0", "pool", 55, "loo"), (2, "seat:3", "pool", 55, "loo"),
        (3, "seat:2", "pool", 5, "dealer_ante"),  # P = 115, 23 a trick
        (3, "pool", "seat:0", 23, "trick"), (3, "pool", "seat:1", 23, "trick"),
        (3, "pool", "seat:2", 23, "trick"), (3, "pool", "seat:3", 46, "trick"),
    ]
    versions = [x["version"] for x in ledger["transfers"]]
    assert versions == sorted(versions) and all(isinstance(v, int) for v in versions)
    assert ledger["balances"] == {"seat:0": -27, "seat:1": -12, "seat:2": 43, "seat:3": -4,
                                  "pool": 0}
    assert sum(ledger["balances"].values()) == 0


def test_ledger_loo_transfer_records_the_uncapped_penalty_and_the_cap(club: Club):
    """§8.5: "The ledger records both the uncapped amount and the cap applied"."""
    t = club.create(deal="results", first_dealer=0,
                    options={"loo_penalty": {"mode": "capped", "multiplier": 10}})
    for body in WORKED_EXAMPLE[:2]:
        assert club.start(t, body).status_code == 200
    loo = [x for x in club.get(t, path="/ledger").get_json()["transfers"] if x["reason"] == "loo"]
    assert [(x["hand"], x["amount"], x["uncapped"], x["cap"]) for x in loo] == [
        (1, 25, 25, 40), (1, 25, 25, 40), (2, 40, 55, 40), (2, 40, 55, 40)]


# ---- RULES §10: hidden information and the hash chain --------------------------------------

def _recover_discard(table_id: str, events: list[dict]) -> list[str] | None:
    """What a curious seat would try: every possible discard against any hash it was given
    (the event's own, or a later one chained on it through events it can read)."""
    by_version = {e["version"]: e for e in events}
    for e in events:
        tiles = e["data"].get("tiles")
        if e["type"] != "tiles_discarded" or not isinstance(tiles, dict):
            continue  # not hidden from this seat
        prev = e["prev_hash"] or by_version.get(e["version"] - 1, {}).get("hash")
        chain = [x for x in events if x["version"] >= e["version"]]
        anchor = next((i for i, x in enumerate(chain) if x["hash"] is not None), None)
        if prev is None or anchor is None:
            continue
        for guess in itertools.permutations(TILES, tiles["count"]):
            h = _event_hash(table_id, prev, e | {"data": e["data"] | {"tiles": list(guess)}})
            for x in chain[1 : anchor + 1]:
                h = _event_hash(table_id, h, x)
            if h == chain[anchor]["hash"]:
                return list(guess)
    return None


def test_seat_cannot_recover_hidden_discards_from_event_hashes_while_live(club: Club):
    """A discard is one of a few hundred tile pairs: a hash over it must not reach a seat."""
    t = club.create(first_dealer=0)
    club.ok(t, {"type": "decide", "choice": "miss"}, t.seats[1])  # the 4-player miss
    drawn = club.view(t, t.seats[1])["hand"]["hands"]["1"]
    club.ok(t, {"type": "discard", "tiles": drawn[:2]}, t.seats[1])
    club.ok(t, {"type": "decide", "choice": "play"}, t.seats[2])
    club.ok(t, {"type": "decide", "choice": "play"}, t.seats[3])
    dealer = club.view(t, t.seats[0])["hand"]["hands"]["0"]
    out = club.ok(t, {"type": "decide", "choice": "play", "take_turn_up": True,
                      "discard": [dealer[0]]}, t.seats[0])
    for seat in (1, 2, 3):
        tok = t.seats[seat]
        seen = [_events(club, t, tok), club.get(t, tok, "/hands/1").get_json()["events"]]
        for events in seen:
            assert _recover_discard(t.id, events) is None, seat
            dealt = next(e for e in events if e["type"] == "tiles_dealt")
            assert all(e["hash"] is None for e in events if e["version"] >= dealt["version"])
    assert _recover_discard(t.id, out["events"]) is None  # the dealer's own action answer
    # The admin sees everything, hashes included.
    assert all(e["hash"] for e in _events(club, t))


def test_hash_chain_verifies_from_version_one_for_every_token_once_the_hand_is_over(club: Club):
    t = club.create(deal="results", first_dealer=0)
    for body in WORKED_EXAMPLE:
        assert club.start(t, body).status_code == 200
    for token in (t.admin, *t.seats):
        events = _events(club, t, token)
        prev = GENESIS
        for i, e in enumerate(events, start=1):
            assert e["version"] == i and e["prev_hash"] == prev
            assert _event_hash(t.id, prev, e) == e["hash"], (e["version"], e["type"])
            prev = e["hash"]
        positions = [e["position"] for e in events]
        assert positions == sorted(positions) and len(set(positions)) == len(positions)


def test_replay_keeps_the_live_hands_seed_secret_even_from_the_admin(club: Club):
    t = club.create(first_dealer=0)
    events = _events(club, t)
    step = [e["type"] for e in events if e["hand"] == 1].index("tiles_dealt") + 1
    r = club.get(t, path=f"/hands/1/replay?step={step}").get_json()
    assert r["event"]["type"] == "tiles_dealt"
    assert "seed" not in r["event"]["data"]
    assert r["state"]["hand"]["boneyard"]  # the admin still sees every tile


@pytest.mark.parametrize("path,who", [("/events?limit=1000", "seat"), ("/audit", "admin")])
def test_a_read_answers_from_one_state_when_a_hand_is_dealt_meanwhile(
        club: Club, app, monkeypatch, path, who):
    """A writer dealing hand 2 between the read's load and its event query must not make hand
    2's deal pass for a complete hand's (all tiles and the seed to a seat), nor fail an audit."""
    t = club.create(first_dealer=0, options={"auto_deal": False})
    assert club.start(t).status_code == 200
    for seat in (1, 2, 3):  # everyone drops: the dealer wins without play, settled at once
        club.ok(t, {"type": "decide", "choice": "drop"}, t.seats[seat])
    assert club.view(t)["hand"]["phase"] == "complete"
    led = app.extensions["loo_ledger"]
    load = led.load
    dealt: list[int] = []

    def load_then_someone_deals(table_id: str):
        p = load(table_id)
        if not dealt:
            dealt.append(1)
            led.execute(table_id, c.StartHand())
        return p

    monkeypatch.setattr(led, "load", load_then_someone_deals)
    r = club.get(t, t.seats[1] if who == "seat" else t.admin, path)
    assert dealt and r.status_code == 200, r.get_json()
    body = r.get_json()
    if path.startswith("/events"):
        for e in body["events"]:
            if e["type"] == "tiles_dealt" and e["hand"] == 2:
                assert "seed" not in e["data"] and e["data"]["boneyard"] == {"count": 7}
    else:
        assert body["ok"], body


# ---- reading the events ---------------------------------------------------------------------

def test_events_page_with_after_and_limit_and_next(club: Club):
    t = club.create(deal="results", first_dealer=0)
    assert club.start(t, WORKED_EXAMPLE[0]).status_code == 200
    everything = _events(club, t, t.seats[0])
    pages, after = [], 0
    while True:
        page = club.get(t, t.seats[0], f"/events?after={after}&limit=4").get_json()
        if not page["events"]:
            assert page["next"] == after
            break
        assert len(page["events"]) <= 4 and page["events"][0]["version"] == after + 1
        after = page["next"]
        assert after == page["events"][-1]["version"]
        pages += page["events"]
    assert pages == everything
    assert [e["version"] for e in everything] == list(range(1, len(everything) + 1))


def test_events_after_past_any_version_is_an_empty_page_not_a_server_error(club: Club):
    t = club.create(first_dealer=0)
    for after in (10**6, 10**23):
        r = club.get(t, path=f"/events?after={after}")
        assert r.status_code == 200, r.get_json()
        assert r.get_json() == {"events": [], "next": after}
    for query in ("after=-1", "after=x", "limit=0", "limit=1001", "limit=1.5"):
        club.problem(club.get(t, path=f"/events?{query}"), 422, "validation_error")


def test_unknown_table_and_bad_token_come_before_query_validation(club: Club):
    t = club.create(first_dealer=0)
    club.problem(club.c.get("/v1/tables/nope/events?limit=0",
                            headers=club.auth(t.admin)), 404, "table_not_found")
    club.problem(club.c.get(f"/v1/tables/{t.id}/events?limit=0"), 401)
    club.problem(club.c.get(f"/v1/tables/{t.id}/hands/1/replay?step=-1",
                            headers=club.auth("wrong")), 401)
    club.problem(club.get(t, t.seats[0], "/audit"), 403, "admin_only")


# ---- replay ---------------------------------------------------------------------------------

def test_replay_steps_through_each_event_to_the_hands_record(club: Club):
    t = club.create(first_dealer=0)
    club.ok(t, {"type": "decide", "choice": "miss"}, t.seats[1])
    held = club.view(t, t.seats[1])["hand"]["hands"]["1"]
    club.ok(t, {"type": "discard", "tiles": held[:2]}, t.seats[1])
    for seat in (2, 3, 0):
        club.ok(t, {"type": "decide", "choice": "drop" if seat != 0 else "play"}, t.seats[seat])
    while club.view(t)["hand"]["number"] == 1 and club.view(t)["hand"]["phase"] != "complete":
        seat = club.view(t)["hand"]["turn"]
        club.ok(t, club.view(t, t.seats[seat])["legal_actions"][0], t.seats[seat])
    mine = [e for e in _events(club, t) if e["hand"] == 1]
    first = club.get(t, t.seats[2], "/hands/1/replay?step=0").get_json()
    assert first["step"] == 0 and first["event"] is None and first["steps"] == len(mine)
    for k in range(1, len(mine) + 1):
        r = club.get(t, t.seats[2], f"/hands/1/replay?step={k}").get_json()
        assert r["step"] == k and r["event"] == mine[k - 1]
    record = club.get(t, t.seats[2], "/hands/1").get_json()
    assert r["state"]["hand"] == record["hand"] and record["events"] == mine


# ---- the fair deal --------------------------------------------------------------------------

def _shuffle(seed: bytes) -> list[str]:
    """API.md "Fair deal", steps 1-4, from the text."""
    items = [(a, b) for a in range(7) for b in range(a, 7)]
    words = (int.from_bytes(hmac.new(seed, k.to_bytes(8, "big"), hashlib.sha256).digest()[i:i + 4],
                            "big") for k in itertools.count() for i in range(0, 32, 4))

    def uniform(n: int) -> int:
        while (x := next(words)) >= 2**32 - (2**32 % n):
            pass
        return x % n

    for i in range(27, 0, -1):
        j = uniform(i + 1)
        items[i], items[j] = items[j], items[i]
    return [f"{b}-{a}" for a, b in items]


def test_fair_deal_recomputes_from_the_revealed_seed(club: Club):
    assert " ".join(_shuffle(bytes(32))[:5]) == "1-1 6-4 4-1 5-3 5-4"  # API.md's test vector
    t = club.create(first_dealer=2, seats=[{"name": n} for n in "ABC"])
    for seat in (0, 1):  # two misses, then the dealer plays: drawn in boneyard order
        club.ok(t, {"type": "decide", "choice": "miss"}, t.seats[seat])
        held = club.view(t, t.seats[seat])["hand"]["hands"][str(seat)]
        club.ok(t, {"type": "discard", "tiles": held[:1]}, t.seats[seat])
    club.ok(t, {"type": "decide", "choice": "play"}, t.seats[2])
    while club.view(t)["hand"]["number"] == 1 and club.view(t)["hand"]["phase"] != "complete":
        seat = club.view(t)["hand"]["turn"]
        club.ok(t, club.view(t, t.seats[seat])["legal_actions"][0], t.seats[seat])
    events = [e for e in _events(club, t, t.seats[0]) if e["hand"] == 1]
    kind = {e["type"]: e["data"] for e in events}
    seed = bytes.fromhex(kind["seed_revealed"]["seed"])
    assert hashlib.sha256(seed).hexdigest() == kind["hand_started"]["commitment"]
    order = _shuffle(seed)
    assert kind["tiles_dealt"]["hands"] == {"0": order[0:5], "1": order[5:10], "2": order[10:15]}
    assert kind["trump_turned"]["tile"] == order[15]
    assert kind["tiles_dealt"]["boneyard"] == order[16:]
    draws = [e["data"]["tiles"] for e in events if e["type"] == "miss_drawn"]
    assert draws == [order[16:22], order[22:28]]


# ---- the audit ------------------------------------------------------------------------------

def _rewrite(app, src_id: str, change) -> str:
    """An insider writes a changed copy of a table straight into the store (hashes redone)."""
    store = app.extensions["loo_container"].store
    copied = []
    for s in store.load(src_id):
        data = copy.deepcopy(s.data)
        change(s.type, data)
        copied.append(NewEvent(s.type, s.hand, data, s.causation, s.recorded_at))
    new_id = uuid.uuid4().hex
    store.append(new_id, copied, 0)
    return new_id


def test_audit_recomputes_every_settlement_of_a_rewritten_record(club: Club, app):
    t = club.create(deal="results", first_dealer=0)
    for body in WORKED_EXAMPLE:
        assert club.start(t, body).status_code == 200
    assert club.get(t, path="/audit").get_json()["ok"]
    done: list[int] = []

    def pay_seat_3_more(kind: str, data: dict) -> None:
        """Five chips more to seat 3 in hand 1, and the totals after kept consistent."""
        if kind == "tricks_paid" and not done:
            data["payments"]["3"] += 5
            done.append(1)
        elif kind == "hand_settled" and done:
            data["balances"]["3"] += 5
            data["pool"] -= 5

    forged = Table(_rewrite(app, t.id, pay_seat_3_more), t.admin, t.seats, {})
    audit = club.get(forged, path="/audit").get_json()
    assert audit["checks"]["hash_chain"] is True and audit["checks"]["plays_legal"] is True
    assert not audit["ok"] and "settlement" in audit["checks"]["chips_conserved"]


def test_audit_checks_the_first_dealer_drawn_by_lots(club: Club, app):
    t = club.create(first_dealer="lots", seats=[{"name": n} for n in "ABC"],
                    options={"auto_deal": False})
    assert club.get(t, path="/audit").get_json()["ok"]

    def other_dealer(kind: str, data: dict) -> None:
        if kind == "dealer_chosen":
            data["seat"] = (data["seat"] + 1) % 3

    forged = Table(_rewrite(app, t.id, other_dealer), t.admin, t.seats, {})
    audit = club.get(forged, path="/audit").get_json()
    assert not audit["ok"] and "lots" in audit["checks"]["deals_match_commitments"]


# ---- the OpenAPI spec -----------------------------------------------------------------------

def _json_schema(node):
    """OpenAPI 3.0 schema -> JSON Schema (nullable becomes a null type)."""
    if isinstance(node, list):
        return [_json_schema(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {k: _json_schema(v) for k, v in node.items() if k != "nullable"}
    if "$ref" in out:
        out["$ref"] = out["$ref"].replace("#/components/schemas/", "#/definitions/")
    if node.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    return out


def test_openapi_read_schemas_hold_for_real_bodies(club: Club):
    jsonschema_rs = pytest.importorskip("jsonschema_rs")
    spec = club.c.get("/openapi.json").get_json()
    defs = _json_schema(spec["components"]["schemas"])
    transfer = spec["components"]["schemas"]["TransferOut"]
    assert {"hand", "version", "from", "to", "amount", "reason"} <= set(transfer["required"])
    assert set(transfer["properties"]["reason"]["enum"]) == {
        "ante", "dealer_ante", "trick", "loo", "pool_award", "void"}  # void: Corrections

    def valid(name: str, body: dict) -> None:
        schema = {"definitions": defs, "$ref": f"#/definitions/{name}"}
        errors = [str(e) for e in jsonschema_rs.Draft4Validator(schema).iter_errors(body)]
        assert not errors, (name, errors[:3])

    t = club.create(first_dealer=0)  # hand 1 live
    club.ok(t, {"type": "decide", "choice": "miss"}, t.seats[1])
    for token in (t.admin, t.seats[2]):
        valid("EventsOut", club.get(t, token, "/events").get_json())
        valid("HandRecordOut", club.get(t, token, "/hands/1").get_json())
        valid("TableOut", club.view(t, token))
        valid("LedgerOut", club.get(t, token, "/ledger").get_json())
    valid("ReplayOut", club.get(t, path="/hands/1/replay?step=9").get_json())
    valid("AuditOut", club.get(t, path="/audit").get_json())
    r = club.start(club.create(deal="results", first_dealer=0), WORKED_EXAMPLE[0])
    valid("ActionOut", r.get_json())
