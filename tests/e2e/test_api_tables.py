"""Tables over HTTP: creation and its validation, auth, reading, closing."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.e2e.club import Club, Table
from tests.e2e.test_api_clubs import League

FOUR = [{"name": n} for n in ("Ann", "Bob", "Cat", "Dan")]


def test_create_returns_admin_and_seat_tokens(club: Club):
    t = club.create(seats=FOUR, first_dealer=2)
    assert len(t.seats) == 4 and len(set(t.seats + [t.admin])) == 5
    assert t.created["version"] >= 1
    view = club.view(t)
    assert view["dealer"] == 2 and view["status"] == "playing"
    assert view["options"]["ante"] == 5 and view["options"]["loo_penalty"] == {"mode": "uncapped"}
    assert view["hand"]["number"] == 1  # auto_deal starts the first hand
    assert view["pool"] == 25


@pytest.mark.parametrize("body,code", [
    ({"seats": [{"name": "solo"}]}, None),
    ({"seats": FOUR + [{"name": "Eve"}]}, None),
    ({"seats": FOUR, "options": {"ante": 3}}, "invalid_option"),
    ({"seats": FOUR, "options": {"dealer_ante": 7}}, "invalid_option"),
    ({"seats": FOUR, "options": {"loo_penalty": {"mode": "capped", "multiplier": 12}}},
     "invalid_option"),
    ({"seats": FOUR, "options": {"loo_penalty": {"mode": "capped"}}}, "invalid_option"),
    ({"seats": FOUR, "options": {"lead_trump_threshold": 0}}, None),
    ({"seats": FOUR, "variant": "rounce", "scoring": "pool"}, "invalid_option"),
    ({"seats": FOUR, "variant": "whist"}, None),
    ({"seats": FOUR, "first_dealer": 7}, "invalid_option"),
    ({"seats": FOUR, "first_dealer": "random"}, None),
    ({"seats": [{"name": "A", "bot": "genius"}, {"name": "B"}]}, "invalid_option"),
    ({"seats": [{"name": "A", "bot": "random"}, {"name": "B"}], "deal": "recorded"},
     "invalid_option"),
    ({"seats": FOUR, "colour": "red"}, None),
])
def test_bad_table_is_refused_with_a_clear_422(club: Club, body, code):
    r = club.c.post("/v1/tables", json=body)
    j = club.problem(r, 422, code)
    assert j["detail"]


def test_malformed_json_is_400(club: Club):
    r = club.c.post("/v1/tables", data="{not json", content_type="application/json")
    club.problem(r, 400)


def test_tokens_open_only_their_own_table(club: Club):
    a, b = club.create(), club.create()
    club.problem(club.get(a, b.admin), 401)
    club.problem(club.get(a, b.seats[0]), 401)
    club.problem(club.c.get(f"/v1/tables/{a.id}"), 401)
    club.problem(club.get(a, "nonsense"), 401)


def test_unknown_table_is_404(club: Club):
    r = club.c.get("/v1/tables/nope", headers=club.auth("x"))
    club.problem(r, 404, "table_not_found")


def test_seat_token_cannot_do_admin_things(club: Club):
    t = club.create()
    club.problem(club.post(t, "/hands", {}, t.seats[0]), 403)
    club.problem(club.post(t, "/close", {}, t.seats[0]), 403)
    club.problem(club.get(t, t.seats[0], "/audit"), 403)


def test_close_reports_the_pool_left_over(club: Club):
    t = club.create(deal="results", first_dealer=0)
    club.start(t, {"result": {"decisions": {"0": "play", "1": "play", "2": "play", "3": "play"},
                              "tricks": {"0": 5}}})
    r = club.post(t, "/close", {})
    assert r.status_code == 200, r.get_json()
    j = r.get_json()
    assert j["leftover"] == 75 and j["table"]["status"] == "closed"
    club.problem(club.start(t, {"result": {"decisions": {"1": "drop", "2": "drop",
                                                          "3": "drop"}}}), 422)


def test_stale_expected_version_is_409(club: Club):
    t = club.create(deal="results", first_dealer=0)
    v = club.view(t)["version"]
    body = {"result": {"decisions": {"1": "drop", "2": "drop", "3": "drop"}},
            "expected_version": v - 1}
    club.problem(club.start(t, body), 409, "version_conflict")
    body["expected_version"] = v
    assert club.start(t, body).status_code == 200


def test_idempotency_key_returns_first_answer_and_appends_nothing(club: Club):
    t = club.create(deal="results", first_dealer=0)
    body = {"result": {"decisions": {"1": "drop", "2": "drop", "3": "drop"}}}
    key = {"Idempotency-Key": "abc-1"}
    first = club.post(t, "/hands", body, headers=key)
    again = club.post(t, "/hands", body, headers=key)
    assert first.status_code == again.status_code == 200
    assert first.get_json()["version"] == again.get_json()["version"]
    assert first.get_json()["events"] == again.get_json()["events"]
    other = dict(body, result={"decisions": {"1": "drop", "2": "drop", "3": "play",
                                             "0": "drop"}})
    club.problem(club.post(t, "/hands", other, headers=key), 409, "idempotency_conflict")
    assert club.view(t)["hand"]["number"] == 1


def test_table_creation_is_idempotent_with_a_key(club: Club):
    body = {"seats": FOUR, "deal": "results"}
    r1 = club.c.post("/v1/tables", json=body, headers={"Idempotency-Key": "club-42"})
    r2 = club.c.post("/v1/tables", json=body, headers={"Idempotency-Key": "club-42"})
    assert r1.status_code == 201 and r2.status_code == 201
    assert r1.get_json()["id"] == r2.get_json()["id"]
    assert r1.get_json()["admin_token"] == r2.get_json()["admin_token"]


def test_table_creation_key_reused_with_another_body_is_409(club: Club):
    key = {"Idempotency-Key": "club-43"}
    first = club.c.post("/v1/tables", json={"seats": FOUR, "deal": "results"}, headers=key)
    assert first.status_code == 201
    again = club.c.post("/v1/tables", json={"seats": FOUR, "deal": "recorded"}, headers=key)
    club.problem(again, 409, "idempotency_conflict")


def test_tokens_of_an_idempotent_create_cannot_be_computed_from_the_key(club: Club):
    """They are HMACs under the deployment's secret, not hashes of the key and body alone
    (the earlier derivation, which anyone could repeat offline, is checked against)."""
    import base64
    import hashlib
    import hmac

    from ledger.api import idempotency as idem

    body = {"seats": FOUR, "deal": "results"}
    made = club.c.post("/v1/tables", json=body, headers={"Idempotency-Key": "club-44"})
    with club.c.application.test_request_context("/v1/tables", method="POST", json=body):
        request_hash = idem.fingerprint(None, body)
    root = hashlib.sha256(f"club-44|{request_hash}".encode()).digest()
    offline = base64.urlsafe_b64encode(
        hmac.new(root, b"admin", hashlib.sha256).digest()[:24]).decode().rstrip("=")
    assert made.get_json()["admin_token"] != offline
    assert made.get_json()["id"] != hashlib.sha256(b"club-44").hexdigest()[:32]


def test_closing_mid_hand_opens_the_abandoned_hand_to_every_seat(club: Club):
    """§10: the game is over, so the abandoned hand's record and its seed are revealed."""
    t = club.create(first_dealer=0, options={"auto_deal": False})
    assert club.start(t).status_code == 200
    assert club.view(t, t.seats[1])["hand"]["hands"]["2"] == {"count": 5}
    assert club.post(t, "/close", {}).status_code == 200
    hand = club.get(t, t.seats[1], "/hands/1").get_json()["hand"]
    assert all(len(tiles) == 5 for tiles in hand["hands"].values()), hand["hands"]
    assert club.get(t, t.seats[1], "/hands/1/replay?step=1").status_code == 200
    events = club.get(t, t.seats[1], "/events").get_json()["events"]
    assert [e["type"] for e in events][-2:] == ["seed_revealed", "table_closed"]
    audit = club.get(t, t.admin, "/audit").get_json()
    assert audit["ok"], audit


BOTS = [{"name": f"Bot {i}", "bot": "heuristic"} for i in range(4)]


def test_all_bot_table_with_auto_deal_plays_to_max_hands_and_closes_itself(club: Club):
    """API.md, Tables: auto_deal means the same whoever sits; max_hands closes any table."""
    t = club.create(seats=BOTS, options={"max_hands": 3})
    view = club.view(t)
    assert view["status"] == "closed" and view["hand"]["number"] == 3
    assert view["options"]["max_hands"] == 3
    events = club.get(t, path="/events?limit=1000").get_json()["events"]
    closed = [e for e in events if e["type"] == "table_closed"]
    assert [e["data"]["reason"] for e in closed] == ["max_hands"]
    assert sum(1 for e in events if e["type"] == "hand_settled") == 3
    assert club.get(t, path="/audit").get_json()["ok"] is True


def test_all_bot_pool_table_without_max_hands_gets_100(club: Club):
    t = club.create(seats=BOTS[:3])
    view = club.view(t)
    assert view["options"]["max_hands"] == 100
    assert view["status"] == "closed" and view["hand"]["number"] == 100


@pytest.mark.parametrize("max_hands", [0, 100001, "3", 2.5, True])
def test_max_hands_out_of_range_is_422(club: Club, max_hands):
    r = club.c.post("/v1/tables", json={"seats": FOUR, "options": {"max_hands": max_hands}})
    assert r.status_code == 422, r.get_json()


def test_a_body_over_the_cap_is_413_problem_json_and_creates_nothing(app, club: Club):
    app.config["MAX_CONTENT_LENGTH"] = 2048
    big = {"seats": FOUR, "pad": "x" * 4096}
    r = club.c.post("/v1/tables", json=big)
    assert r.status_code == 413 and r.content_type == "application/problem+json"
    assert r.get_json()["code"] == "request_entity_too_large"
    assert "2048" in r.get_json()["detail"] and r.headers["Connection"] == "close"
    ok = club.c.post("/v1/tables", json={"seats": FOUR})
    assert ok.status_code == 201  # a body within the cap is served as before


def test_bots_lists_every_policy_a_seat_may_name(club: Club):
    r = club.c.get("/v1/bots")
    assert r.status_code == 200
    names = [b["name"] for b in r.get_json()["items"]]
    assert {"random", "heuristic"} <= set(names) and r.get_json()["next"] is None
    assert all(b["description"] and b["version"] for b in r.get_json()["items"])
    for name in names:
        club.create(seats=[{"name": "Ann"}, {"name": "B", "bot": name}])
    r = club.c.post("/v1/tables", json={"seats": [{"name": "A"}, {"name": "B", "bot": "nobot"}]})
    assert r.status_code == 422 and all(n in r.get_json()["detail"] + str(r.get_json())
                                        for n in names)


# ---- API.md "Tables": a table's options, as GET shows them, make a new table -----------------

@st.composite
def table_bodies(draw) -> dict[str, Any]:
    """Every kind of table: Loo or Rounce, pool or points, each deal, each penalty mode,
    hints, a turn timer and max_hands where they apply (sparse: the rest left to defaults)."""
    variant = draw(st.sampled_from(["loo", "rounce"]))
    scoring = "points" if variant == "rounce" else draw(st.sampled_from(["pool", "points"]))
    deal = draw(st.sampled_from(["shuffled", "recorded", "results"]))
    players = draw(st.integers(2, 4))
    seats = [{"name": f"p{i}"} for i in range(players)]
    if deal == "shuffled" and draw(st.booleans()):
        seats[-1]["bot"] = "random"  # never all bots: they would play the table out here
    ante = draw(st.sampled_from([0, 5, 20]))
    choices: dict[str, Any] = {
        "ante": st.just(ante),
        "dealer_ante": st.sampled_from([5, 10] if ante == 0 else [0, 5, 15]),
        "loo_penalty": st.sampled_from([{"mode": "uncapped"}, {"mode": "fixed"},
                                        {"mode": "capped", "multiplier": 10}]),
        "lead_trump_threshold": st.integers(1, 6),
        "target": st.integers(1, 1000),
        "auto_deal": st.booleans(),
        "max_hands": st.integers(1, 100000),
    }
    if deal == "shuffled":
        choices |= {"hints": st.booleans(), "turn_seconds": st.integers(5, 3600)}
    chosen = draw(st.lists(st.sampled_from(sorted(choices)), unique=True))
    options = {k: draw(choices[k]) for k in chosen}
    if "dealer_ante" in options and "ante" not in options and options["dealer_ante"] == 0:
        options["ante"] = 5
    return {"variant": variant, "scoring": scoring, "deal": deal, "seats": seats,
            "first_dealer": 0, "options": options}


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(body=table_bodies())
def test_tables_options_as_get_shows_them_make_a_new_table_and_club_table(club: Club, body):
    """A club copies a table's options (GET /v1/tables/{id}) into a new table's: POST
    /v1/tables and POST /v1/clubs/{id}/tables take them as they are, and the copy's options
    read back the same. A client that writes an option with no value as null (a table
    without a timer: turn_seconds null) means the same as leaving it out."""
    options = club.view(club.create(**body))["options"]
    lg = League(club)
    for copied in (options, options | {"turn_seconds": options.get("turn_seconds")}):
        again = body | {"options": copied}
        made = [club.c.post("/v1/tables", json=again),
                club.c.post(lg.url("/tables"), json=again | {"season": None},
                            headers=lg.h(lg.scorer))]
        for r in made:
            assert r.status_code == 201, (copied, r.get_json())
            t = r.get_json()
            view = club.c.get(f"/v1/tables/{t['id']}", headers=club.auth(t["admin_token"]))
            assert view.get_json()["options"] == options


@pytest.mark.parametrize("deal", ["shuffled", "recorded", "results"])
def test_tables_turn_seconds_null_is_no_timer_and_the_bounds_stay(club: Club, deal):
    """API.md "Tables": options.turn_seconds null is no timer, as when it is left out;
    5-3600 whole seconds otherwise (shuffled tables only), on both create operations."""
    lg = League(club)
    for post in (lambda b: club.c.post("/v1/tables", json=b),
                 lambda b: club.c.post(lg.url("/tables"), json=b, headers=lg.h(lg.scorer))):
        r = post({"seats": FOUR, "deal": deal, "options": {"turn_seconds": None}})
        assert r.status_code == 201, r.get_json()
        t = r.get_json()
        view = club.c.get(f"/v1/tables/{t['id']}", headers=club.auth(t["admin_token"]))
        assert "turn_seconds" not in view.get_json()["options"]
        for bad in (4, 3601, 5.5, "60", True):
            r = post({"seats": FOUR, "deal": deal, "options": {"turn_seconds": bad}})
            club.problem(r, 422)
        if deal != "shuffled":
            r = post({"seats": FOUR, "deal": deal, "options": {"turn_seconds": 60}})
            club.problem(r, 422, "invalid_option")
    if deal == "results":  # an import takes the file's options: null there is no timer too
        r = club.c.post("/v1/tables", json={"seats": FOUR, "deal": deal, "first_dealer": 0})
        t = Table(r.get_json()["id"], r.get_json()["admin_token"], [], r.get_json())
        assert club.start(t, {"result": {"decisions": {"0": "play", "1": "play", "2": "drop",
                                                       "3": "play"},
                                         "tricks": {"0": 3, "1": 2, "2": 0, "3": 0}}}
                          ).status_code == 200
        docs = [json.loads(x) for x in club.get(t, path="/history").data.splitlines()]
        for doc in docs:
            doc["table"]["options"]["turn_seconds"] = None
        r = club.c.post(lg.url("/tables/import"), data="\n".join(map(json.dumps, docs)),
                        headers=lg.h(lg.scorer) | {"Content-Type": "application/x-ndjson"})
        assert r.status_code == 201, r.get_json()
