"""API.md read as an outside checker reads it, statement by statement (an audit of the HTTP
contract). Each test is named after the section it holds the service to and failed before
the change it came with."""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

import pytest

from tests.e2e.club import Club
from tests.e2e.test_api_clubs import League


def key() -> dict[str, str]:
    return {"Idempotency-Key": uuid.uuid4().hex}


def in_threads(app: Any, n: int, call: Any) -> list[Any]:
    """`call(client)` from n threads at once, each with its own client; their answers."""
    out: list[Any] = []
    barrier = threading.Barrier(n)

    def run() -> None:
        client = app.test_client()
        barrier.wait()
        out.append(call(client))

    threads = [threading.Thread(target=run) for _ in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return out


# ---- Conventions: "repeating a request with the same key returns the first answer" ---------

def test_conventions_a_repeated_club_write_returns_the_first_answer_after_the_club_moved_on(
        club: Club, monkeypatch: pytest.MonkeyPatch):
    """Phase 2: every club write takes an Idempotency-Key as tables do; the repeat answered
    with the club as it is now (a later rename, archive, season close; a removed webhook
    was even a 404)."""
    monkeypatch.setenv("LOO_WEBHOOK_ALLOW_PRIVATE", "1")
    lg = League(club)
    h = lg.h(lg.owner)

    def twice(method: str, path: str, body: dict[str, Any], then: list[tuple[str, str, Any]]):
        k = key()
        first = club.c.open(lg.url(path), method=method, json=body, headers=h | k)
        assert first.status_code in (200, 201), first.get_json()
        for m, p, b in then:
            r = club.c.open(lg.url(p.format(**first.get_json())), method=m, json=b, headers=h)
            assert r.status_code in (200, 201, 204), r.get_json()
        v = lg.get("").get_json()["version"]
        repeat = club.c.open(lg.url(path), method=method, json=body, headers=h | k)
        assert (repeat.status_code, repeat.get_json()) == (first.status_code, first.get_json())
        assert lg.get("").get_json()["version"] == v  # and appended nothing
        return first.get_json()

    mid = twice("POST", "/members", {"name": "Ann"},
                [("PATCH", "/members/{id}", {"name": "Anne"}),
                 ("POST", "/members/{id}/archive", {})])["id"]
    bob = lg.member("Bob")
    twice("PATCH", f"/members/{bob}", {"name": "Bobby"},
          [("PATCH", f"/members/{bob}", {"name": "Robert"})])
    twice("POST", f"/members/{lg.member('Cat')}/archive", {},
          [("PATCH", f"/members/{mid}", {"name": "Annie"})])
    twice("POST", "/seasons", {"name": "Winter", "starts_on": "2026-11-01"},
          [("POST", "/seasons/{id}/close", {})])
    sid = lg.season("Spring")
    twice("POST", f"/seasons/{sid}/close", {}, [("POST", "/members", {"name": "Dan"})])
    twice("POST", "/webhooks", {"url": "http://127.0.0.1:9/hook", "events": ["*"]},
          [("DELETE", "/webhooks/{id}", None)])

    k = key()
    made = club.c.post("/v1/clubs", json={"name": "Crown"}, headers=k)
    crown = made.get_json()
    r = club.c.post(f"/v1/clubs/{crown['id']}/tokens", json={"role": "viewer"},
                    headers=lg.h(crown["token"]))
    assert r.status_code == 201
    again = club.c.post("/v1/clubs", json={"name": "Crown"}, headers=k)
    assert (again.status_code, again.get_json()) == (201, crown)


def test_conventions_club_writes_without_expected_version_never_meet_a_version_conflict(app):
    """409 version_conflict is for a stale expected_version: a club's integration adding
    members from several threads (none sending one) got it for most of them."""
    club = Club(app.test_client())
    lg = League(club)
    answers = in_threads(app, 12, lambda client: client.post(
        lg.url("/members"), json={"name": "Member"}, headers=lg.h(lg.scorer)))
    assert sorted(r.status_code for r in answers) == [201] * 12, [
        r.get_json() for r in answers if r.status_code != 201]
    assert len(lg.get("/members?limit=500").get_json()["items"]) == 12


def test_conventions_concurrent_repeats_of_a_keyed_club_write_get_the_one_first_answer(app):
    """The same request sent at once by a client's retry logic: one token issued, every
    answer the same; the repeats that lost the race in the store were 500s."""
    club = Club(app.test_client())
    lg = League(club)
    k = key()
    v = lg.get("").get_json()["version"]
    answers = in_threads(app, 8, lambda client: client.post(
        lg.url("/tokens"), json={"role": "viewer", "label": "screen"},
        headers=lg.h(lg.owner) | k))
    assert [r.status_code for r in answers] == [201] * 8, [r.get_json() for r in answers]
    assert len({r.get_data() for r in answers}) == 1
    assert lg.get("").get_json()["version"] == v + 1


# ---- Lists / Hands: an unknown or repeated query parameter is a 422, never ignored -----------

def test_lists_an_unknown_query_parameter_is_a_422_on_every_operation_not_ignored(club: Club):
    """API.md Lists: "an unknown filter or a bad value is a 422, never ignored"; and Hands:
    a step that is not an integer is never silently answered. A typo (?stp=3, ?afer=40)
    was answered as if nothing had been asked: step 0, the events from the start."""
    lg = League(club)
    t = club.create(first_dealer=0)
    mid = lg.member("Ann")
    for path, token in ((f"/v1/tables/{t.id}", t.admin), (f"/v1/tables/{t.id}/events", t.admin),
                        (f"/v1/tables/{t.id}/hands/1/replay", t.admin),
                        (f"/v1/tables/{t.id}/hands/1", t.seats[0]),
                        (f"/v1/tables/{t.id}/ledger", t.seats[0]),
                        (f"/v1/tables/{t.id}/audit", t.admin),
                        (lg.url(""), lg.viewer), (lg.url(f"/members/{mid}"), lg.viewer),
                        ("/v1/checkpoints/key", None), ("/v1/schemas/loo-hh-1.0.json", None)):
        assert club.c.get(path, headers=lg.h(token)).status_code == 200, path
        r = club.c.get(path + "?stp=3", headers=lg.h(token))
        assert "stp" in club.problem(r, 422, "unknown_filter")["detail"], path
    r = club.c.get(f"/v1/tables/{t.id}/hands/1/replay?step=1&step=2", headers=lg.h(t.admin))
    club.problem(r, 422, "invalid_filter")
    r = club.c.get(lg.url("/members?q=A&q=B"), headers=lg.h(lg.viewer))
    club.problem(r, 422, "invalid_filter")
    # who may ask comes first, as before: 404 / 401 / 403 whatever the query
    club.problem(club.c.get("/v1/tables/nope/events?stp=1", headers=lg.h(t.admin)), 404)
    club.problem(club.c.get(f"/v1/tables/{t.id}/events?stp=1"), 401)
    club.problem(club.c.get(f"/v1/tables/{t.id}/audit?stp=1", headers=lg.h(t.seats[0])), 403)
    club.problem(club.c.get(lg.url("/tokens?stp=1"), headers=lg.h(lg.viewer)), 403)


@pytest.mark.parametrize("raw", ["1_0", "+1", " 1", "1 ", "0x1", "1e1"])
def test_hands_a_step_or_after_that_is_not_written_as_an_integer_is_a_422(club: Club, raw: str):
    """API.md Hands: a `k` that is not an integer is a 422; Python's int() read "1_0" as 10
    and " 1" as 1, so the answer came back for a step nobody wrote."""
    t = club.create(first_dealer=0)
    for path in (f"/hands/1/replay?step={raw}", f"/events?after={raw}", f"/events?limit={raw}"):
        r = club.get(t, path=path.replace(" ", "%20").replace("+", "%2B"))
        club.problem(r, 422, "validation_error")


# ---- Hand history (loo-hh 1.0): table.seats[{"seat", "name", "member"?, "bot"?}] ------------

def test_hand_history_names_the_member_at_each_seat_of_a_club_table(club: Club):
    """A club table's seats are its members; the loo-hh file left them out (only name), so
    an archive could not tell two members of one name apart."""
    import jsonschema

    from tests.e2e.test_api_clubs import RESULT_A

    lg = League(club)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat")]
    r = club.c.post(lg.url("/tables"), json={
        "seats": [{"member": m} for m in ms] + [{"name": "Guest"}], "first_dealer": 0,
        "deal": "results"}, headers=lg.h(lg.scorer))
    tid = r.get_json()["id"]
    assert club.c.post(f"/v1/tables/{tid}/hands", json={"result": RESULT_A},
                       headers=lg.h(lg.scorer)).status_code == 200
    schema = club.c.get("/v1/schemas/loo-hh-1.0.json").get_json()
    doc = club.c.get(f"/v1/tables/{tid}/hands/1/history", headers=lg.h(lg.viewer)).get_json()
    jsonschema.validate(doc, schema)
    assert doc["table"]["seats"] == [{"seat": 0, "name": "Ann", "member": ms[0]},
                                     {"seat": 1, "name": "Bob", "member": ms[1]},
                                     {"seat": 2, "name": "Cat", "member": ms[2]},
                                     {"seat": 3, "name": "Guest"}]
    lines = club.c.get(lg.url("/history"), headers=lg.h(lg.viewer)).get_data().splitlines()
    assert [s.get("member") for s in json.loads(lines[0])["table"]["seats"]] \
        == [*ms, None]


def test_conventions_an_import_that_is_not_json_is_400_malformed_json(club: Club):
    """API.md Conventions: 400 malformed JSON, on the import as on every other body (it was
    a 422 import_refused, the answer for a file the rules refuse); the detail names the
    line, and nothing is created."""
    import random

    from tests.e2e.test_api_clubs import RESULT_A

    lg = League(club)
    t = lg.table([lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")], deal="results")
    assert club.start(t, {"result": RESULT_A}).status_code == 200
    good = club.c.get(f"/v1/tables/{t.id}/history", headers=lg.h(lg.viewer)).get_data()
    v = lg.get("").get_json()["version"]
    for body, mimetype, line in (
            (b'{"format": "loo-hh", ', "application/json", 1),
            (random.Random(1).randbytes(4096), "application/x-ndjson", 1),
            (good + b'{"format": \n', "application/x-ndjson", 2)):
        r = club.c.post(lg.url("/tables/import"), data=body, content_type=mimetype,
                        headers=lg.h(lg.scorer))
        assert club.problem(r, 400, "malformed_json")["detail"].startswith(f"line {line}:")
    r = club.c.post(lg.url("/tables/import"), data=good.replace(b'"1.0"', b'"9.9"'),
                    content_type="application/x-ndjson", headers=lg.h(lg.scorer))
    club.problem(r, 422, "import_refused")  # JSON, but not a file this service imports
    assert lg.get("").get_json()["version"] == v
    assert len(lg.get("/tables").get_json()["items"]) == 1


# ---- Spectators: "Revocable like club tokens"; every write takes expected_version -------------

def test_spectators_revoking_a_spectator_takes_expected_version_like_a_club_token(club: Club):
    """Phase 2: every write takes expected_version; a club token's DELETE takes it as a query
    parameter, a spectator's (revocable like club tokens) ignored it: a stale version
    revoked the token all the same."""
    t = club.create(first_dealer=0)
    sid = club.post(t, "/spectators", {}).get_json()["id"]
    v = club.view(t)["version"]
    stale = club.c.delete(f"/v1/tables/{t.id}/spectators/{sid}?expected_version={v - 1}",
                          headers=club.auth(t.admin))
    club.problem(stale, 409, "version_conflict")
    assert club.view(t)["version"] == v
    for bad in ("expected_version=x", "expected_version=-1"):
        r = club.c.delete(f"/v1/tables/{t.id}/spectators/{sid}?{bad}", headers=club.auth(t.admin))
        club.problem(r, 422)
    k = key()
    for _ in range(2):  # the repeat with its key answers as the first did
        r = club.c.delete(f"/v1/tables/{t.id}/spectators/{sid}?expected_version={v}",
                          headers=club.auth(t.admin) | k)
        assert r.status_code == 204, r.get_json()
    assert club.view(t)["version"] == v + 1
    assert club.get(t, path="/spectators").get_json()["items"] == []


def test_conventions_a_creation_takes_expected_version_the_new_stream_is_at_0(club: Club):
    """API.md: writes accept expected_version (Phase 2: every write takes it); a client that
    sends it on every write got 422 "unknown field" creating a table or a club. A new table
    or club is at version 0: 0 creates it, another value is a 409 and creates nothing."""
    body = {"seats": [{"name": "Ann"}, {"name": "Bob"}], "first_dealer": 0}
    assert club.c.post("/v1/tables", json=body | {"expected_version": 0}).status_code == 201
    assert club.c.post("/v1/tables", json=body | {"expected_version": None}).status_code == 201
    club.problem(club.c.post("/v1/tables", json=body | {"expected_version": 3}), 409,
                 "version_conflict")
    club.problem(club.c.post("/v1/tables", json=body | {"expected_version": "0"}), 422)
    made = club.c.post("/v1/clubs", json={"name": "Crown", "expected_version": 0})
    assert made.status_code == 201, made.get_json()
    r = club.c.post("/v1/clubs", json={"name": "Crown", "expected_version": 2})
    assert "club is at version 0" in club.problem(r, 409, "version_conflict")["detail"]
    lg = League(club)  # a club table's expected_version is the club's, as before
    v = lg.get("").get_json()["version"]
    r = club.c.post(lg.url("/tables"), json=body | {"expected_version": v},
                    headers=lg.h(lg.scorer))
    assert r.status_code == 201, r.get_json()


def test_a_creation_answers_201_with_the_location_of_what_it_made(club: Club,
                                                                  monkeypatch: pytest.MonkeyPatch):
    """RFC 9110 15.3.2: a 201 without Location says the request's own address is what was
    created (/v1/tables, /v1/clubs/.../members). Each Location reads what the answer holds,
    and the spec declares it."""
    monkeypatch.setenv("LOO_WEBHOOK_ALLOW_PRIVATE", "1")
    r = club.c.post("/v1/tables", json={"seats": [{"name": "Ann"}, {"name": "Bob"}]})
    table = r.get_json()
    assert r.headers["Location"] == f"/v1/tables/{table['id']}"
    got = club.c.get(r.headers["Location"], headers=club.auth(table["admin_token"]))
    assert got.get_json()["id"] == table["id"]
    r = club.c.post("/v1/clubs", json={"name": "Crown"})
    crown = r.get_json()
    h = club.auth(crown["token"])
    assert club.c.get(r.headers["Location"], headers=h).get_json()["id"] == crown["id"]
    for path, body in (("/members", {"name": "Ann"}),
                       ("/webhooks", {"url": "http://127.0.0.1:9/h", "events": ["*"]}),
                       ("/tables", {"seats": [{"name": "Ann"}, {"name": "Bob"}]})):
        r = club.c.post(f"/v1/clubs/{crown['id']}{path}", json=body, headers=h)
        assert r.status_code == 201, r.get_json()
        assert club.c.get(r.headers["Location"], headers=h).get_json()["id"] == \
            r.get_json()["id"], path
    spec = club.c.get("/openapi.json").get_json()
    for path in ("/v1/tables", "/v1/clubs", "/v1/clubs/{club_id}/members",
                 "/v1/clubs/{club_id}/webhooks", "/v1/clubs/{club_id}/tables",
                 "/v1/clubs/{club_id}/tables/import"):
        assert "Location" in spec["paths"][path]["post"]["responses"]["201"]["headers"], path


def test_conventions_a_401_names_the_bearer_scheme(club: Club):
    """API.md: 401 no or bad token; RFC 9110 15.5.2: a 401 carries WWW-Authenticate (it had
    none), here Bearer, with error="invalid_token" for a token that opens nothing (RFC 6750)."""
    t = club.create(first_dealer=0)
    lg = League(club)
    for path in (f"/v1/tables/{t.id}", lg.url("/members")):
        r = club.c.get(path)
        club.problem(r, 401, "missing_token")
        assert r.headers["WWW-Authenticate"] == "Bearer"
        r = club.c.get(path, headers=club.auth("not-a-token"))
        club.problem(r, 401, "invalid_token")
        assert r.headers["WWW-Authenticate"] == 'Bearer error="invalid_token"'
    spec = club.c.get("/openapi.json").get_json()
    assert "WWW-Authenticate" in spec["components"]["responses"]["UNAUTHORIZED"]["headers"]


# ---- Conventions: never a 500 for anything a client can send --------------------------------

@pytest.mark.parametrize("text", ["a\u0000b", "\ud800", "x\udfffy"])
def test_conventions_text_no_record_can_keep_is_a_422_never_a_500(
        club: Club, text: str, monkeypatch: pytest.MonkeyPatch):
    """A NUL ("\\u0000": PostgreSQL cannot store it) or a lone surrogate (no UTF-8 encodes
    it) in a token label, an external_id, a spectator label, a void reason or a webhook URL
    was a 500 (the surrogate on SQLite too). Refused as a 422 naming the field; nothing
    changes."""
    monkeypatch.setenv("LOO_WEBHOOK_ALLOW_PRIVATE", "1")
    from tests.e2e.test_api_clubs import RESULT_A

    lg = League(club)
    t = lg.table([lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")], deal="results")
    assert club.start(t, {"result": RESULT_A}).status_code == 200
    before = (lg.get("").get_json()["version"], club.view(t)["version"])
    for path, body, field in (
            (lg.url("/tokens"), {"role": "viewer", "label": text}, "label"),
            (lg.url("/members"), {"name": "Eve", "external_id": text}, "external_id"),
            (lg.url("/webhooks"), {"url": f"http://127.0.0.1:9/{text}", "events": ["*"]},
             "url"),
            (lg.url("/webhooks"), {"url": "http://127.0.0.1:9/h", "events": [text]},
             "events[0]"),
            (f"/v1/tables/{t.id}/spectators", {"label": text}, "label"),
            (f"/v1/tables/{t.id}/hands/1/void", {"reason": text}, "reason")):
        r = club.c.post(path, json=body, headers=lg.h(lg.owner))
        assert club.problem(r, 422, "invalid_text")["field"] == field
    # a name's own check comes first, as before; an unknown field is refused as unknown
    for body in ({"seats": [{"name": text}, {"name": "B"}]},
                 {"seats": [{"name": "A"}, {"name": "B"}], text: 1}):
        club.problem(club.c.post("/v1/tables", json=body), 422, "validation_error")
    assert (lg.get("").get_json()["version"], club.view(t)["version"]) == before


def test_conventions_an_imported_file_with_text_no_record_can_keep_is_a_422(club: Club):
    """The same for a loo-hh file: a seat name holding a NUL was imported and its table
    written, a 500 on PostgreSQL."""
    from tests.e2e.test_api_clubs import RESULT_A

    lg = League(club)
    t = lg.table([lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")], deal="results")
    assert club.start(t, {"result": RESULT_A}).status_code == 200
    doc = club.c.get(f"/v1/tables/{t.id}/hands/1/history", headers=lg.h(lg.viewer)).get_json()
    doc["table"]["seats"][0]["name"] = "A\u0000nn"
    r = club.c.post(lg.url("/tables/import"), json=doc, headers=lg.h(lg.scorer))
    assert club.problem(r, 422, "invalid_text")["field"] == "line 1.table.seats[0].name"
    assert len(lg.get("/tables").get_json()["items"]) == 1


def test_conventions_an_id_holding_a_nul_is_unknown_not_a_500(club: Club):
    """/v1/tables/%00 and /v1/clubs/club_%00 were 500s on PostgreSQL (it cannot be asked
    for a string holding a NUL): no table or club has such an id, so 404."""
    t = club.create(first_dealer=0)
    lg = League(club)
    for path, code in (("/v1/tables/%00", "table_not_found"),
                       ("/v1/tables/a%00b/events", "table_not_found"),
                       ("/v1/clubs/club_%00", "club_not_found"),
                       ("/v1/clubs/club_%00/members", "club_not_found")):
        club.problem(club.c.get(path, headers=lg.h(t.admin)), 404, code)
