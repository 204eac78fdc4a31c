"""Idempotency-Keys are the caller's own (API.md Conventions: a repeat returns the first
answer and appends nothing): a key sent with another bearer token is another key, so nobody
gets the first answer of someone else's creation (it holds tokens shown once), and the
same caller reusing a key with another body is a 409 that changes nothing."""

from __future__ import annotations

from typing import Any

from tests.e2e.club import Club
from tests.e2e.test_api_clubs import League

FOUR = [{"name": n} for n in ("Ann", "Bob", "Cat", "Dan")]


def h(token: str | None, key: str) -> dict[str, str]:
    out = {"Idempotency-Key": key}
    if token:
        out["Authorization"] = f"Bearer {token}"
    return out


def secrets_of(created: dict[str, Any]) -> set[str]:
    return {created["admin_token"]} | {s["token"] for s in created["seats"]}


def test_a_table_key_sent_with_another_token_never_replays_its_tokens(club: Club):
    body = {"seats": FOUR, "deal": "results"}
    first = club.c.post("/v1/tables", json=body, headers=h("alice-integration", "t-1"))
    assert first.status_code == 201
    again = club.c.post("/v1/tables", json=body, headers=h("alice-integration", "t-1"))
    assert again.status_code == 201 and again.get_json() == first.get_json()
    mine = first.get_json()
    for other in ("mallory", None):  # another token, or none: its own table
        theirs = club.c.post("/v1/tables", json=body, headers=h(other, "t-1"))
        assert theirs.status_code == 201, theirs.get_json()
        assert theirs.get_json()["id"] != mine["id"]
        assert not secrets_of(theirs.get_json()) & secrets_of(mine)
    # The same caller with another body: 409, nothing created or changed.
    refused = club.c.post("/v1/tables", json=body | {"deal": "recorded"},
                          headers=h("alice-integration", "t-1"))
    club.problem(refused, 409, "idempotency_conflict")
    assert club.c.post("/v1/tables", json=body, headers=h("alice-integration", "t-1")
                       ).get_json() == mine
    view = club.c.get(f"/v1/tables/{mine['id']}",
                      headers={"Authorization": f"Bearer {mine['admin_token']}"}).get_json()
    assert view["version"] == mine["version"] and view["deal"] == "results"


def test_a_club_key_sent_with_another_token_creates_its_own_club(club: Club):
    first = club.c.post("/v1/clubs", json={"name": "Red Lion"}, headers=h(None, "c-1"))
    assert first.status_code == 201
    theirs = club.c.post("/v1/clubs", json={"name": "Red Lion"}, headers=h("someone", "c-1"))
    assert theirs.status_code == 201
    assert theirs.get_json()["id"] != first.get_json()["id"]
    assert theirs.get_json()["token"] != first.get_json()["token"]
    assert club.c.post("/v1/clubs", json={"name": "Red Lion"},
                       headers=h("someone", "c-1")).get_json() == theirs.get_json()
    club.problem(club.c.post("/v1/clubs", json={"name": "Crown"}, headers=h("someone", "c-1")),
                 409, "idempotency_conflict")


def test_club_tables_and_writes_keys_are_per_token(club: Club):
    """An owner and a scorer (both the tables' admins) sending one key create one table
    each, each with its own tokens; two owner tokens issuing a token under one key each
    get their own; a caller's repeat is its own first answer, its other body a 409."""
    lg = League(club)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")]
    body = {"seats": [{"member": m} for m in ms], "first_dealer": 0, "deal": "results"}
    by_owner = club.c.post(lg.url("/tables"), json=body, headers=h(lg.owner, "table-1"))
    by_scorer = club.c.post(lg.url("/tables"), json=body, headers=h(lg.scorer, "table-1"))
    assert by_owner.status_code == by_scorer.status_code == 201
    assert by_owner.get_json()["id"] != by_scorer.get_json()["id"]
    assert not secrets_of(by_owner.get_json()) & secrets_of(by_scorer.get_json())
    assert club.c.post(lg.url("/tables"), json=body, headers=h(lg.scorer, "table-1")
                       ).get_json() == by_scorer.get_json()
    assert len(lg.get("/tables").get_json()["items"]) == 2
    club.problem(club.c.post(lg.url("/tables"), json=body | {"first_dealer": 1},
                             headers=h(lg.scorer, "table-1")), 409, "idempotency_conflict")
    assert len(lg.get("/tables").get_json()["items"]) == 2
    # Spectators of one table: each admin's key is its own.
    t = by_owner.get_json()["id"]
    a = club.c.post(f"/v1/tables/{t}/spectators", json={}, headers=h(lg.owner, "screen"))
    b = club.c.post(f"/v1/tables/{t}/spectators", json={}, headers=h(lg.scorer, "screen"))
    assert a.status_code == b.status_code == 201 and a.get_json()["token"] != b.get_json()["token"]
    # Club writes: a second owner token's key is its own.
    second = lg.token("owner")
    issued = [club.c.post(lg.url("/tokens"), json={"role": "viewer", "label": "tv"},
                          headers=h(tok, "tv-token")) for tok in (lg.owner, second)]
    assert [r.status_code for r in issued] == [201, 201], [r.get_json() for r in issued]
    assert issued[0].get_json()["token"] != issued[1].get_json()["token"]
    assert issued[0].get_json()["id"] != issued[1].get_json()["id"]
    repeat = club.c.post(lg.url("/tokens"), json={"role": "viewer", "label": "tv"},
                         headers=h(second, "tv-token"))
    assert repeat.get_json() == issued[1].get_json()
    members = len(lg.get("/members").get_json()["items"])
    club.c.post(lg.url("/members"), json={"name": "Eve"}, headers=h(lg.scorer, "eve"))
    club.problem(club.c.post(lg.url("/members"), json={"name": "Fay"},
                             headers=h(lg.scorer, "eve")), 409, "idempotency_conflict")
    assert len(lg.get("/members").get_json()["items"]) == members + 1


def test_a_key_without_a_token_is_its_client_addresss_and_never_replays_to_another(
        club: Club, backend_url: str):
    """A creation without a bearer token (POST /v1/tables, POST /v1/clubs without an
    operator token) keyed its Idempotency-Key by the key and the body alone: anyone
    repeating both, from anywhere, got the first answer with its admin, seat or owner
    tokens. Now the key is also its client address's: from another address it is another
    key (its own table or club, its own tokens), from the same address a repeat replays,
    and another body there is a 409 as before. Behind LOO_TRUSTED_PROXIES, the address is
    the one the trusted proxy names."""
    body = {"seats": FOUR, "deal": "results"}

    def post(path: str, body: dict[str, Any], addr: str, client: Any = None,
             forwarded_for: str | None = None) -> Any:
        headers = h(None, "shared-key")
        if forwarded_for:
            headers["X-Forwarded-For"] = forwarded_for
        return (client or club.c).post(path, json=body, headers=headers,
                                       environ_base={"REMOTE_ADDR": addr})

    first = post("/v1/tables", body, "198.51.100.7")
    assert first.status_code == 201
    assert post("/v1/tables", body, "198.51.100.7").get_json() == first.get_json()
    theirs = post("/v1/tables", body, "203.0.113.9")
    assert theirs.status_code == 201, theirs.get_json()
    assert theirs.get_json()["id"] != first.get_json()["id"]
    assert not secrets_of(theirs.get_json()) & secrets_of(first.get_json())
    club.problem(post("/v1/tables", body | {"deal": "recorded"}, "198.51.100.7"), 409,
                 "idempotency_conflict")
    mine = post("/v1/clubs", {"name": "Red Lion"}, "198.51.100.7")
    other = post("/v1/clubs", {"name": "Red Lion"}, "203.0.113.9")
    assert mine.status_code == other.status_code == 201
    assert mine.get_json()["id"] != other.get_json()["id"]
    assert mine.get_json()["token"] != other.get_json()["token"]
    assert post("/v1/clubs", {"name": "Red Lion"}, "198.51.100.7").get_json() == \
        mine.get_json()

    # Behind one trusted proxy: the client is the address it appended, not the proxy's.
    from ledger.api.app import create_app
    from ledger.bootstrap import Settings, bootstrap

    container = bootstrap(Settings(database_url=backend_url))
    try:
        proxied = create_app(container, {"LOO_TRUSTED_PROXIES": "1"}).test_client()
        a = post("/v1/tables", body, "10.0.0.1", proxied, "192.0.2.1")
        b = post("/v1/tables", body, "10.0.0.1", proxied, "192.0.2.2")
        again = post("/v1/tables", body, "10.0.0.2", proxied, "192.0.2.1")
        assert a.status_code == b.status_code == again.status_code == 201
        assert a.get_json()["id"] != b.get_json()["id"]
        assert again.get_json() == a.get_json()
    finally:
        container.close()
