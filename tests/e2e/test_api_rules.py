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


@pytest.mark.parametrize(("hands", "turn_up", "where"), [
    ({"3": ["6-6", "6-5", "4-4", "5-0", "2-0"]}, "6-6", "in seat 3's hand and as the turn-up"),
    ({"2": ["3-3", "4-1", "5-5", "2-2", "4-0"], "3": ["6-6", "6-5", "4-4", "5-0", "4-1"]}, "6-2",
     "in seat 2's hand and in seat 3's hand"),
    ({"1": ["3-1", "3-0", "5-4", "2-1", "1-3"]}, "6-2", "twice in seat 1's hand"),
])
def test_s3_recorded_deal_with_a_tile_twice_names_the_tile_and_where(club: Club, hands, turn_up,
                                                                       where):
    """§1/§3: each of the 28 tiles is dealt once; the scorer entering a deal with a tile twice
    is told which tile and where it was entered (input in any order, named high end first)."""
    t = club.create(deal="recorded", first_dealer=0)
    bad = {"hands": DEAL["hands"] | hands, "turn_up": turn_up}
    j = club.problem(club.start(t, bad), 422, "invalid_deal")
    assert j["rule"] == "3"
    dup = "4-1" if "seat 2" in where else "3-1" if "seat 1" in where else "6-6"
    assert j["detail"].startswith(f"{dup} appears twice in the deal"), j
    assert where in j["detail"], j
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


def undecided(club: Club, players: int = 4) -> Table:
    """A recorded table whose deal (DEAL's first seats) waits for its first decision."""
    seats = [{"name": n} for n in ("Ann", "Bob", "Cat", "Dan")[:players]]
    t = club.create(deal="recorded", first_dealer=0, seats=seats)
    hands = {str(s): DEAL["hands"][str(s)] for s in range(players)}
    r = club.start(t, {"hands": hands, "turn_up": DEAL["turn_up"]})
    assert r.status_code == 200, r.get_json()
    return t


def test_s3_3_dealer_who_takes_the_turn_up_may_not_discard_it(club: Club):
    """§3.3: once the dealer takes the turn-up, everyone knows he holds it until he plays it:
    the tile he discards (§4) is one of his own five."""
    t = undecided(club)
    for seat in (1, 2, 3):
        club.ok(t, {"type": "decide", "choice": "play"}, t.seats[seat])
    offered = club.view(t, t.seats[0])["legal_actions"]
    assert {b["discard"][0] for b in offered if b.get("take_turn_up")} == set(
        DEAL["hands"]["0"])
    body = {"type": "decide", "choice": "play", "take_turn_up": True, "discard": ["6-2"]}
    j = club.problem(club.act(t, body, t.seats[0]), 422, "invalid_discard")
    assert j["rule"] == "3.3" and j["type"].endswith("/docs/rules#rule-3.3")
    assert "6-2" in j["detail"] and "own five" in j["detail"]
    club.ok(t, body | {"discard": ["1-1"]}, t.seats[0])
    hand = club.view(t)["hand"]
    assert hand["turn_up_taken"] and "6-2" in hand["hands"]["0"] and "1-1" not in hand["hands"]["0"]


def test_s4_recorded_four_player_miss_drawn_empty_is_the_same_as_omitted(club: Club):
    """§4: with 4 players the miss takes all seven boneyard tiles, so the service knows the
    draw: `"drawn": []` names no tile, like leaving `drawn` out (as `"discard": []` does)."""
    t = undecided(club)
    unseen = sorted(club.view(t)["hand"]["boneyard"])
    r = club.ok(t, {"type": "decide", "choice": "miss", "drawn": []}, t.seats[1])
    assert sorted(r["table"]["hand"]["hands"]["1"]) == unseen
    assert r["table"]["hand"]["phase"] == "discarding"


def test_s4_recorded_three_player_miss_drawn_empty_is_drawn_required(club: Club):
    t = undecided(club, players=3)
    r = club.act(t, {"type": "decide", "choice": "miss", "drawn": []}, t.seats[1])
    j = club.problem(r, 422, "drawn_required")
    assert j["rule"] == "4"
    r = club.act(t, {"type": "decide", "choice": "play", "drawn": []}, t.seats[1])
    assert r.status_code == 200, r.get_json()
