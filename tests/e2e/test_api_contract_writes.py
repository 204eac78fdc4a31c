"""The write side of the HTTP contract (API.md), read literally, as a club's integrator would.

Bad input of every kind gets a clean problem+json 4xx and appends nothing; auth is decided
before the body is read; a repeated Idempotency-Key returns the first answer.
"""

from __future__ import annotations

import random

import pytest

from tests.e2e.club import Club, Table

FOUR = [{"name": n} for n in ("Ann", "Bob", "Cat", "Dan")]
RESULT = {"result": {"decisions": {"0": "play", "1": "miss", "2": "drop", "3": "drop"},
                     "tricks": {"0": 3, "1": 2}}}


def version(club: Club, t: Table) -> int:
    return club.view(t)["version"]


def raw(club: Club, path: str, data: bytes, token: str | None = None) -> object:
    return club.c.post(path, data=data, content_type="application/json",
                       headers=club.auth(token))


# ---- what a client sends -------------------------------------------------------------------

def test_create_answers_the_documented_fields(club: Club):
    r = club.c.post("/v1/tables", json={"seats": [{"name": "Ann"}, {"name": "Bot",
                                                                   "bot": "heuristic"}]})
    assert r.status_code == 201
    j = r.get_json()
    assert {"id", "admin_token", "seats", "version"} <= set(j)
    assert [set(s) >= {"seat", "name", "bot", "token"} for s in j["seats"]] == [True, True]
    assert [(s["seat"], s["name"], s["bot"]) for s in j["seats"]] == [
        (0, "Ann", None), (1, "Bot", "heuristic")]


@pytest.mark.parametrize("options", [{"auto_deal": "yes"}, {"auto_deal": 1},
                                     {"auto_deal": "false"}])
def test_option_booleans_are_json_true_or_false(club: Club, options):
    r = club.c.post("/v1/tables", json={"seats": FOUR, "options": options})
    j = club.problem(r, 422, "validation_error")
    assert "auto_deal" in j["errors"]["json"]["options"]


@pytest.mark.parametrize("extra", [{"take_turn_up": "yes"}, {"take_turn_up": 1},
                                   {"for_pool": "true"}, {"for_pool": 0}])
def test_action_booleans_are_json_true_or_false(club: Club, extra):
    t = club.create(first_dealer=0)
    before = version(club, t)
    r = club.act(t, {"type": "decide", "choice": "play", **extra}, t.seats[1])
    j = club.problem(r, 422, "validation_error")
    assert set(j["errors"]["json"]) == set(extra)
    assert version(club, t) == before


def test_result_for_pool_is_json_true_or_false(club: Club):
    t = club.create(deal="results", first_dealer=0)
    body = {"result": dict(RESULT["result"], for_pool="yes")}
    club.problem(club.start(t, body), 422, "validation_error")
    assert club.view(t)["hand"] is None


@pytest.mark.parametrize("data", [
    b'{"seats": ' + b"[" * 5000 + b"]" * 5000 + b"}",  # deeper than Python's json recursion
    b'{"seats": [{"name": "A"}, {"name": "B"}], "first_dealer": ' + b"9" * 5000 + b"}",
])
def test_json_python_cannot_read_is_400_not_500(club: Club, data):
    club.problem(raw(club, "/v1/tables", data), 400, "malformed_json")
    t = club.create(first_dealer=0)
    before = version(club, t)
    body = data.replace(b'"seats"', b'"type"', 1)
    club.problem(raw(club, f"/v1/tables/{t.id}/actions", body, t.seats[1]), 400,
                 "malformed_json")
    assert version(club, t) == before


@pytest.mark.parametrize("data", [
    b'{"seats": [{"name": "A\\u0000B"}, {"name": "B"}]}',  # PostgreSQL cannot store a NUL
    b'{"seats": [{"name": "\\ud800"}, {"name": "B"}]}',  # a lone surrogate is not UTF-8
    b'{"seats": [{"name": "A\\u001bB"}, {"name": "B"}]}',
    b'{"seats": [{"name": "   "}, {"name": "B"}]}',
])
def test_seat_names_must_be_printable_text(club: Club, data):
    j = club.problem(raw(club, "/v1/tables", data), 422, "validation_error")
    assert "name" in j["errors"]["json"]["seats"]["0"]


def test_seat_names_may_be_any_printable_unicode(club: Club):
    t = club.create(seats=[{"name": "Zoë 🂡"}, {"name": "李"}])
    assert [s["name"] for s in club.view(t)["seats"]] == ["Zoë 🂡", "李"]


@pytest.mark.parametrize("body", [
    None, {}, {"type": "pass"}, {"type": "decide"}, {"type": "decide", "choice": "stand"},
    {"type": "decide", "choice": "play", "x": 1}, {"type": "decide", "choice": "play",
                                                   "tile": "6-6"},
    {"type": "decide", "choice": "play", "seat": -1},
    {"type": "decide", "choice": "play", "seat": 10 ** 30},
    {"type": "decide", "choice": "play", "seat": "1"},
    {"type": "decide", "choice": "play", "expected_version": "3"},
    {"type": "decide", "choice": "play", "expected_version": -1},
    {"type": "play", "tile": "6-7"}, {"type": "play", "tile": 66}, {"type": "play"},
    {"type": "play", "tile": "6-6", "suit": 10 ** 30},
    {"type": "discard", "tiles": "6-6"}, [], "play",
])
def test_bad_action_bodies_are_clean_4xx_and_append_nothing(club: Club, body):
    t = club.create(first_dealer=0)
    before = version(club, t)
    r = club.act(t, body, t.seats[1])
    assert 400 <= r.status_code < 500, (r.status_code, r.get_json())
    club.problem(r, r.status_code)
    assert version(club, t) == before


# ---- who may ask: before anything about the body -------------------------------------------

def test_auth_is_decided_before_the_body_is_read(club: Club):
    t, other = club.create(first_dealer=0), club.create()
    before = version(club, t)
    bad = {"type": "no-such-action"}
    club.problem(club.c.post(f"/v1/tables/{t.id}/actions", json=bad), 401, "missing_token")
    club.problem(club.act(t, bad, other.admin), 401, "invalid_token")
    club.problem(raw(club, f"/v1/tables/{t.id}/actions", b"{not json", other.seats[0]), 401)
    club.problem(club.post(t, "/hands", {"hands": 3}, t.seats[0]), 403, "admin_only")
    club.problem(club.post(t, "/close", {"x": 1}, t.seats[0]), 403, "admin_only")
    r = club.c.post("/v1/tables/no-such-table/actions", json=bad, headers=club.auth(t.admin))
    club.problem(r, 404, "table_not_found")
    assert version(club, t) == before


def test_a_seat_token_acts_only_for_its_seat(club: Club):
    t = club.create(first_dealer=0)
    before = version(club, t)
    club.problem(club.act(t, {"type": "decide", "choice": "play", "seat": 1}, t.seats[2]),
                 403, "not_your_seat")
    club.problem(club.act(t, {"type": "decide", "choice": "play"}, t.seats[2]), 422,
                 "not_your_turn")
    assert version(club, t) == before


# ---- the miss, the dealer, the answer ------------------------------------------------------

@pytest.mark.parametrize("players,drawn,discard", [(4, 7, 2), (3, 6, 1), (2, 6, 1)])
def test_s4_miss_draws_and_discards_by_the_number_of_players(club: Club, players, drawn,
                                                             discard):
    t = club.create(seats=FOUR[:players], first_dealer=0)
    out = club.ok(t, {"type": "decide", "choice": "miss"}, t.seats[1])
    held = out["table"]["hand"]["hands"]["1"]
    assert len(held) == drawn and out["table"]["hand"]["phase"] == "discarding"
    assert all(len(b["tiles"]) == discard for b in out["table"]["legal_actions"])
    admin = club.view(t)["hand"]["hands"]["1"]
    assert admin == held  # the admin sees the drawn tiles before the discard
    if players > 2:
        assert club.view(t, t.seats[2])["hand"]["hands"]["1"] == {"count": drawn}
    wrong = held[:discard + 1]
    club.problem(club.act(t, {"type": "discard", "tiles": wrong}, t.seats[1]), 422,
                 "invalid_discard")
    # Tiles in either order; output high end first.
    given = ["-".join(reversed(x.split("-"))) for x in held[:discard]]
    out = club.ok(t, {"type": "discard", "tiles": given}, t.seats[1])
    assert out["table"]["hand"]["hands"]["1"] == held[discard:]


def test_action_answer_has_version_events_table_and_seat_for_the_admin(club: Club):
    t = club.create(first_dealer=0)
    seat_answer = club.ok(t, {"type": "decide", "choice": "play"}, t.seats[1])
    assert {"version", "events", "table"} <= set(seat_answer) and "seat" not in seat_answer
    assert seat_answer["events"][0]["type"] == "player_decided"
    assert seat_answer["table"]["version"] == seat_answer["version"]
    admin_answer = club.ok(t, {"type": "decide", "choice": "play", "seat": 2})
    assert admin_answer["seat"] == 2


def test_dealer_takes_the_turn_up_and_plays_for_the_pool(club: Club):
    t = club.create(first_dealer=0)
    out = club.ok(t, {"type": "decide", "choice": "miss"}, t.seats[1])
    club.ok(t, out["table"]["legal_actions"][0], t.seats[1])
    for seat in (2, 3):
        club.ok(t, {"type": "decide", "choice": "drop"}, t.seats[seat])
    legal = club.view(t, t.seats[0])["legal_actions"]
    assert {"type": "decide", "choice": "play", "for_pool": True} in legal
    assert {"type": "decide", "choice": "miss"} not in legal
    take = [b for b in legal if b.get("take_turn_up") and b.get("for_pool")][0]
    out = club.ok(t, take, t.seats[0])
    hand = out["table"]["hand"]
    assert hand["for_pool"] is True and hand["turn_up_taken"] is True
    assert hand["turn_up"] in hand["hands"]["0"] and take["discard"][0] not in hand["hands"]["0"]
    assert club.view(t, t.seats[1])["hand"]["hands"]["0"] == {"count": 5}


# ---- Idempotency-Key: the first answer, whatever happened since ---------------------------

def test_idempotent_repeat_returns_the_first_answer_after_others_moved(club: Club):
    t = club.create(first_dealer=0)
    key = {"Idempotency-Key": "ann-decides-1"}
    body = {"type": "decide", "choice": "play"}
    first = club.act(t, body, t.seats[1], headers=key)
    assert first.status_code == 200
    club.ok(t, {"type": "decide", "choice": "play"}, t.seats[2])
    moved = version(club, t)
    again = club.act(t, body, t.seats[1], headers=key)
    assert again.status_code == 200
    assert again.get_json() == first.get_json()
    assert version(club, t) == moved  # nothing appended
    club.problem(club.act(t, {"type": "decide", "choice": "drop"}, t.seats[1], headers=key),
                 409, "idempotency_conflict")


def test_idempotent_repeats_through_hands_and_bots_give_the_first_answers(club: Club):
    """Repeats after the game went on: hand-completing plays (settled and auto-dealt), and
    a table whose bots move in-process after each of the human's actions."""
    rng = random.Random(7)
    for seats in (FOUR, [{"name": "Ann"}] + [{"name": f"B{i}", "bot": "heuristic"}
                                             for i in (1, 2, 3)]):
        t = club.create(seats=seats, first_dealer=0)
        sent = []
        for step in range(60):
            view = club.view(t)
            if view["hand"]["number"] > 2 or not view["legal_actions"]:
                break
            seat = view["hand"]["turn"]
            body = rng.choice(club.view(t, t.seats[seat])["legal_actions"])
            key = {"Idempotency-Key": f"k{step}"}
            r = club.act(t, body, t.seats[seat], headers=key)
            assert r.status_code == 200, r.get_json()
            sent.append((body, seat, key, r.get_json()))
        assert club.view(t)["hand"]["number"] > 1  # at least one hand was completed
        last = version(club, t)
        for body, seat, key, answer in sent:
            assert club.act(t, body, t.seats[seat], headers=key).get_json() == answer
        assert version(club, t) == last


def test_idempotent_create_repeat_returns_the_first_answer(club: Club):
    body = {"seats": FOUR, "first_dealer": 0}
    key = {"Idempotency-Key": "club-create-7"}
    first = club.c.post("/v1/tables", json=body, headers=key)
    assert first.status_code == 201
    j = first.get_json()
    t = Table(j["id"], j["admin_token"], [s["token"] for s in j["seats"]], j)
    club.ok(t, {"type": "decide", "choice": "play"}, t.seats[1])
    again = club.c.post("/v1/tables", json=body, headers=key)
    assert again.status_code == 201
    assert again.get_json() == j


def test_an_action_answer_stops_at_the_state_it_loaded(club: Club, app, monkeypatch):
    """A hand dealt by another process between the answer's load and its event read must not
    reach a seat (unredacted, against the wrong hand): the answer ends at the loaded version."""
    from ledger.api.writes import write_response
    from ledger.app.service import Outcome
    from ledger.app.views import Viewer
    from ledger.core import commands as c

    t = club.create(first_dealer=0, options={"auto_deal": False})
    assert club.start(t).status_code == 200
    for seat in (1, 2, 3):  # everyone drops: the dealer wins without play, settled at once
        club.ok(t, {"type": "decide", "choice": "drop"}, t.seats[seat])
    led = app.extensions["loo_ledger"]
    before = led.load(t.id)
    load = led.load

    def load_then_someone_deals(table_id: str):
        p = load(table_id)
        monkeypatch.setattr(led, "load", load)
        led.execute(table_id, c.StartHand())  # another writer, right after our read
        return p

    monkeypatch.setattr(led, "load", load_then_someone_deals)
    written = Outcome(before.version, [], before)
    with app.test_request_context():
        led._cache.pop(t.id, None)  # the answer must load: something followed the write
        out = write_response(t.id, Viewer(admin=False, seat=1), written)
    assert out["version"] == before.version
    assert all(e["hand"] != 2 for e in out["events"]), out["events"]
    assert led.load(t.id).version > before.version  # the deal did happen meanwhile


def test_a_write_without_expected_version_is_decided_again_after_losing_a_race(club: Club, app,
                                                                              monkeypatch):
    """Bots in other processes append between our read and our append: without an
    expected_version the client asked for the latest table, so the write is decided again
    (bounded) instead of answering 409 for a version it never sent."""
    t = club.create(deal="results", first_dealer=0)
    led = app.extensions["loo_ledger"]
    stale = led.load(t.id)
    assert club.start(t, {"result": {"decisions": {"1": "drop", "2": "drop", "3": "drop"}}}
                      ).status_code == 200
    real = led.load
    calls: list[str] = []

    def slow_reader(table_id: str):
        calls.append(table_id)
        return stale if len(calls) <= 3 else real(table_id)  # three reads lose the race

    monkeypatch.setattr(led, "load", slow_reader)
    monkeypatch.setattr(led, "cached", lambda table_id: None)
    r = club.post(t, "/close", {})
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["table"]["status"] == "closed"
    # With an expected_version the same race is the client's to see: 409.
    t2 = club.create(deal="results", first_dealer=0)
    v = club.view(t2)["version"]
    assert club.start(t2, {"result": {"decisions": {"1": "drop", "2": "drop", "3": "drop"}}}
                      ).status_code == 200
    club.problem(club.post(t2, "/close", {"expected_version": v}), 409, "version_conflict")
