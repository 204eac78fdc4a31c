"""Hints (API.md "Bots, hints and turn timers"; issue 18): GET /v1/tables/{id}/hint gives the
seat to act the expert's move from its own view, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import re

import pytest

from tests.e2e.club import Club, Table
from tests.e2e.test_api_games import hidden_from


def _hinted(club: Club, **options) -> Table:
    return club.create(first_dealer=0, options={"hints": True, **options})


def _to_act(club: Club, t: Table) -> int:
    return club.view(t)["hand"]["turn"]


def test_hint_is_a_legal_action_for_the_seat_to_act_and_is_accepted(club: Club):
    t = _hinted(club)
    assert club.view(t)["options"]["hints"] is True
    for _ in range(8):
        seat = _to_act(club, t)
        r = club.get(t, t.seats[seat], "/hint")
        assert r.status_code == 200, r.get_json()
        got = r.get_json()
        assert got["seat"] == seat and got["why"]
        legal = club.view(t, t.seats[seat])["legal_actions"]
        assert got["action"] in legal
        assert got["version"] == club.view(t)["version"]
        club.ok(t, got["action"], t.seats[seat])


def test_hint_never_shows_a_tile_the_seat_cannot_see(club: Club):
    t = _hinted(club, auto_deal=False)
    assert club.start(t).status_code == 200
    checked = 0
    for _ in range(60):
        admin = club.view(t)
        if admin["hand"]["phase"] in ("complete", "settling"):
            assert club.start(t).status_code == 200
            continue
        seat = admin["hand"]["turn"]
        body = club.get(t, t.seats[seat], "/hint").get_json()
        text = json.dumps(body)
        hidden = hidden_from(admin, seat)
        assert not [x for x in hidden if f'"{x}"' in text or f" {x}" in text], (hidden, text)
        club.ok(t, body["action"], t.seats[seat])
        checked += 1
    assert checked > 10


def test_hint_refusals(club: Club):
    t = _hinted(club)
    seat = _to_act(club, t)
    other = (seat + 1) % 4
    club.problem(club.get(t, t.seats[other], "/hint"), 422, "not_your_turn")
    # API.md Conventions: 403 is a token not allowed to do that (the admin's, here)
    club.problem(club.get(t, t.admin, "/hint"), 403, "seat_token_required")
    spy = club.post(t, "/spectators", {}).get_json()["token"]
    club.problem(club.get(t, spy, "/hint"), 403, "read_only_token")
    club.problem(club.c.get(f"/v1/tables/{t.id}/hint"), 401)
    elsewhere = club.create()
    club.problem(club.get(t, elsewhere.seats[seat], "/hint"), 401)
    club.problem(club.get(elsewhere, elsewhere.seats[seat], "/hint"), 403, "hints_off")
    club.problem(club.c.get("/v1/tables/nosuchtable/hint",
                            headers=club.auth(t.seats[seat])), 404)


def test_no_hint_at_a_closed_table_whose_abandoned_hand_still_names_a_turn(club: Club):
    # API.md: the hint is "the expert's action for that seat now"; a closed table takes none
    # (an action is 422 table_closed), so the hint must not offer one.
    t = _hinted(club)
    seat = _to_act(club, t)
    assert club.get(t, t.seats[seat], "/hint").status_code == 200
    assert club.post(t, "/close", {}).status_code == 200
    assert club.view(t, t.seats[seat])["legal_actions"] == []
    club.problem(club.get(t, t.seats[seat], "/hint"), 422, "table_closed")


@pytest.mark.parametrize(("options", "field"), [
    ({"hints": "yes"}, "hints"), ({"hints": 1}, "hints"), ({"turn_seconds": 4}, "turn_seconds"),
    ({"turn_seconds": 3601}, "turn_seconds"), ({"turn_seconds": "60"}, "turn_seconds")])
def test_bad_hint_and_timer_options_are_422_naming_the_field(club: Club, options, field):
    r = club.c.post("/v1/tables", json={"seats": [{"name": "A"}, {"name": "B"}],
                                        "options": options})
    problem = club.problem(r, 422)
    assert field in json.dumps(problem)


def test_hints_and_timers_only_on_shuffled_tables(club: Club):
    for options in ({"hints": True}, {"turn_seconds": 30}):
        r = club.c.post("/v1/tables", json={"seats": [{"name": "A"}, {"name": "B"}],
                                            "deal": "recorded", "options": options})
        assert next(iter(options)) in json.dumps(club.problem(r, 422))


def test_a_hint_asked_again_at_the_same_version_is_not_searched_again(club: Club, monkeypatch):
    from ledger.app import hints

    calls = []
    real = hints.expert_estimate
    monkeypatch.setattr(hints, "expert_estimate",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    t = _hinted(club)
    seat = _to_act(club, t)
    first = club.get(t, t.seats[seat], "/hint").get_json()
    again = club.get(t, t.seats[seat], "/hint").get_json()
    assert first == again and len(calls) == 1
    club.ok(t, first["action"], t.seats[seat])
    nxt = _to_act(club, t)
    assert club.get(t, t.seats[nxt], "/hint").status_code == 200 and len(calls) == 2


def _best_and_next(why: str) -> tuple[float, float] | None:
    """The expected results a hint's `why` gives its move and the next best, if both."""
    best = re.search(r": ([+-]\d+\.\d) points expected", why)
    other = re.search(r"next best, .*: ([+-]\d+\.\d)$", why)
    return (float(best.group(1)), float(other.group(1))) if best and other else None


@pytest.mark.parametrize("variant", ["loo", "rounce"])
def test_bots_hints_and_turn_timers_a_hint_s_why_gives_points_as_the_score_moves(
        club: Club, variant: str):
    # API.md "Bots, hints and turn timers": the hint comes "with a short why". RULES §9: a
    # Loo score goes up a point a trick, a Rounce score counts down (minus 1 a trick, plus 5
    # when rounced; the lowest wins). The why's expected points are the move's on the score
    # as the table shows it: at Rounce the best move's are the lowest, never the highest.
    t = club.create(variant=variant, scoring="points", first_dealer=0, options={"hints": True},
                    seats=[{"name": "Ann"}, {"name": "Bob"}])
    pairs, whys = [], []
    for _ in range(80):
        v = club.view(t)
        if v["status"] != "playing" or len(pairs) >= 6:
            break
        seat = v["hand"]["turn"]
        got = club.get(t, t.seats[seat], "/hint").get_json()
        found = _best_and_next(got["why"])
        if found is not None:
            pairs.append(found)
            whys.append(got["why"])
        club.ok(t, got["action"], t.seats[seat])
    assert len(pairs) >= 3, pairs
    if variant == "rounce":
        assert all(best <= other for best, other in pairs), whys
        assert all("counts down" in why for why in whys), whys
    else:
        assert all(best >= other for best, other in pairs), pairs
    assert any(best != other for best, other in pairs), pairs
