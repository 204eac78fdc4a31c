"""Rule violations over HTTP on a recorded table: 422 problem+json with code, rule, detail."""

from __future__ import annotations

import pytest

from tests.e2e.club import Club, Table

DEAL = {
    "hands": {
        "1": ["3-1", "3-0", "5-4", "2-1", "1-0"],
        "2": ["3-3", "4-1", "5-5", "2-2", "4-0"],
        "3": ["6-6", "6-5", "4-4", "5-0", "2-0"],
        "0": ["6-4", "6-3", "5-3", "4-2", "1-1"],
    },
    "turn_up": "2-6",
}


@pytest.fixture
def recorded(club: Club) -> Table:
    t = club.create(deal="recorded", first_dealer=0)
    r = club.start(t, DEAL)
    assert r.status_code == 200, r.get_json()
    for seat in (1, 2, 3, 0):
        club.ok(t, {"type": "decide", "choice": "play"}, t.seats[seat])
    return t


def test_s3_recorded_deal_is_shown_high_end_first(club: Club, recorded: Table):
    view = club.view(recorded)
    assert view["hand"]["turn_up"] == "6-2" and view["hand"]["trump"] == 6
    assert view["hand"]["hands"]["0"] == ["6-4", "6-3", "5-3", "4-2", "1-1"]


def test_s4_not_your_turn(club: Club, recorded: Table):
    r = club.act(recorded, {"type": "play", "tile": "3-3"}, recorded.seats[2])
    j = club.problem(r, 422, "not_your_turn")
    assert "seat 1" in j["detail"]


def test_s6_tile_not_in_hand(club: Club, recorded: Table):
    r = club.act(recorded, {"type": "play", "tile": "6-6"}, recorded.seats[1])
    club.problem(r, 422, "tile_not_in_hand")


def test_s6_plain_lead_needs_a_suit(club: Club, recorded: Table):
    r = club.act(recorded, {"type": "play", "tile": "3-1"}, recorded.seats[1])
    club.problem(r, 422, "suit_required")


def test_s6_3_follower_must_follow_suit_and_s6_4_must_trump(club: Club, recorded: Table):
    club.ok(recorded, {"type": "play", "tile": "1-3", "suit": 3}, recorded.seats[1])
    r = club.act(recorded, {"type": "play", "tile": "4-1"}, recorded.seats[2])
    j = club.problem(r, 422, "must_follow_suit")
    assert j["rule"] == "6.3" and "3-3" in j["detail"] and "threes" in j["detail"]
    club.ok(recorded, {"type": "play", "tile": "3-3"}, recorded.seats[2])
    r = club.act(recorded, {"type": "play", "tile": "4-4"}, recorded.seats[3])
    j = club.problem(r, 422, "must_trump")
    assert j["rule"] == "6.4"
    club.ok(recorded, {"type": "play", "tile": "6-5"}, recorded.seats[3])
    # 6-3 bears a three but is a trump: it cannot follow threes while 5-3 can (§5).
    r = club.act(recorded, {"type": "play", "tile": "6-3"}, recorded.seats[0])
    club.problem(r, 422, "must_follow_suit")
    out = club.ok(recorded, {"type": "play", "tile": "5-3"}, recorded.seats[0])
    assert out["table"]["hand"]["tricks"][0]["winner"] == 3
    # §6.2: the trick winner holding a trump must lead one.
    r = club.act(recorded, {"type": "play", "tile": "4-4"}, recorded.seats[3])
    j = club.problem(r, 422, "must_lead_trump")
    assert j["rule"] == "6.2"


def test_s6_1_leader_with_two_trumps_must_lead_trump(club: Club):
    t = club.create(deal="recorded", first_dealer=0)
    deal = {"hands": {"1": ["6-6", "6-5", "4-4", "5-0", "2-0"],
                      "2": ["3-3", "4-1", "5-5", "2-2", "4-0"],
                      "3": ["3-1", "3-0", "5-4", "2-1", "1-0"],
                      "0": ["6-4", "6-3", "5-3", "4-2", "1-1"]}, "turn_up": "6-2"}
    assert club.start(t, deal).status_code == 200
    for seat in (1, 2, 3, 0):
        club.ok(t, {"type": "decide", "choice": "play"}, t.seats[seat])
    r = club.act(t, {"type": "play", "tile": "4-4"}, t.seats[1])
    j = club.problem(r, 422, "must_lead_trump")
    assert j["rule"] == "6.1"


def test_s3_recorded_deal_with_a_tile_twice_is_refused(club: Club):
    t = club.create(deal="recorded", first_dealer=0)
    bad = {"hands": dict(DEAL["hands"]), "turn_up": "6-6"}
    club.problem(club.start(t, bad), 422)
    assert club.view(t)["hand"] is None


def test_admin_acts_for_a_seat_and_must_name_it(club: Club, recorded: Table):
    r = club.act(recorded, {"type": "play", "tile": "1-3", "suit": 3})
    club.problem(r, 422, "seat_required")
    out = club.ok(recorded, {"type": "play", "tile": "1-3", "suit": 3, "seat": 1})
    assert out["seat"] == 1


def test_seat_token_cannot_act_for_another_seat(club: Club, recorded: Table):
    r = club.act(recorded, {"type": "play", "tile": "1-3", "suit": 3, "seat": 1},
                 recorded.seats[2])
    club.problem(r, 403, "not_your_seat")
