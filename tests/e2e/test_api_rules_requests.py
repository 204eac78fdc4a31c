"""Action bodies on recorded tables (both stores): what API.md "Actions" and RULES.md let a
client send, and what `legal_actions` tells it to send. A refused body is a 422
problem+json that changes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.club import Club, Table
from tests.e2e.test_api_rules import DEAL, undecided

# A tile with anything around it is not a tile (API.md Conventions: "6-3", either order).
PADDED = [" 6-3", "6-3 ", " 6-3 ", "\t6-3", "6-3\n", "6 -3", "6- 3", "\u00a06-3", "6-3\u200b"]


def pad(tile: str, how: str) -> str:
    """`tile` written the way `how` writes 6-3."""
    return how.replace("6-3", tile)


def unchanged(club: Club, t: Table, before: dict[str, Any]) -> None:
    after = club.view(t)
    assert after["version"] == before["version"]
    assert after["hand"] == before["hand"]


def refused_tile(club: Club, t: Table, r: Any, field: str) -> None:
    j = club.problem(r, 422, "validation_error")
    assert field in j["errors"]["json"], j
    assert "is not a tile" in str(j["errors"]["json"][field]), j
    assert "is not a tile" in j["detail"], j


def three_player_recorded(club: Club) -> Table:
    """DEAL's seats 0-2 (dealer 0): seat 1 decides first; a miss draws 6 of 12 (§4)."""
    return undecided(club, players=3)


# ---- §1 / API.md Conventions: a tile is written exactly -----------------------------------

@pytest.mark.parametrize("how", PADDED)
def test_s1_recorded_deal_with_a_padded_tile_is_refused(club: Club, how: str):
    t = club.create(deal="recorded", first_dealer=0)
    hands = {s: list(tiles) for s, tiles in DEAL["hands"].items()}
    hands["0"][1] = pad("6-3", how)
    r = club.start(t, {"hands": hands, "turn_up": DEAL["turn_up"]})
    j = club.problem(r, 422, "validation_error")
    assert "is not a tile" in str(j["errors"]), j
    r = club.start(t, {"hands": DEAL["hands"], "turn_up": pad("6-2", how)})
    refused_tile(club, t, r, "turn_up")
    assert club.view(t)["hand"] is None and club.view(t)["version"] == t.created["version"]


@pytest.mark.parametrize("how", PADDED)
def test_s1_padded_tiles_in_decisions_discards_and_plays_are_refused(club: Club, how: str):
    t = three_player_recorded(club)
    before = club.view(t)
    boneyard = before["hand"]["boneyard"]
    drawn = [pad(boneyard[0], how), *boneyard[1:6]]
    r = club.act(t, {"type": "decide", "choice": "miss", "drawn": drawn}, t.seats[1])
    refused_tile(club, t, r, "drawn")
    unchanged(club, t, before)
    club.ok(t, {"type": "decide", "choice": "miss", "drawn": boneyard[:6]}, t.seats[1])
    before = club.view(t)
    held = before["hand"]["hands"]["1"]
    r = club.act(t, {"type": "discard", "tiles": [pad(held[0], how)]}, t.seats[1])
    refused_tile(club, t, r, "tiles")
    unchanged(club, t, before)
    club.ok(t, {"type": "discard", "tiles": [held[0]]}, t.seats[1])
    club.ok(t, {"type": "decide", "choice": "play"}, t.seats[2])
    before = club.view(t)
    body = {"type": "decide", "choice": "play", "take_turn_up": True,
            "discard": [pad("6-3", how)]}
    r = club.act(t, body, t.seats[0])
    refused_tile(club, t, r, "discard")
    unchanged(club, t, before)
    club.ok(t, body | {"discard": ["6-3"]}, t.seats[0])
    before = club.view(t)
    lead = before["legal_actions"][0]
    r = club.act(t, lead | {"tile": pad(lead["tile"], how)})
    refused_tile(club, t, r, "tile")
    unchanged(club, t, before)
    club.ok(t, lead)


def test_s1_either_order_of_a_tile_is_the_same_tile(club: Club):
    """API.md Conventions: "3-6" is the same tile as "6-3"; output is high end first."""
    t = club.create(deal="recorded", first_dealer=0)
    hands = {s: [f"{x[2]}-{x[0]}" for x in tiles] for s, tiles in DEAL["hands"].items()}
    r = club.start(t, {"hands": hands, "turn_up": "2-6"})
    assert r.status_code == 200, r.get_json()
    assert club.view(t)["hand"]["hands"]["0"] == DEAL["hands"]["0"]


# ---- §4 the miss on a recorded table: to_complete says what to send ------------------------

def miss_entries(view: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in view["legal_actions"] if b.get("choice") == "miss"]


def to_complete(view: dict[str, Any]) -> list[dict[str, Any]]:
    return view["to_complete"]


def completed(entry: dict[str, Any], boneyard: list[str]) -> dict[str, Any]:
    """A body built from a legal_actions entry alone: a {"count": n} stands for n tiles."""
    drawn = entry.get("drawn")
    if isinstance(drawn, dict):
        return entry | {"drawn": boneyard[:drawn["count"]]}
    return dict(entry)


@pytest.mark.parametrize("players", [2, 3])
def test_s4_recorded_miss_that_must_name_its_draw_is_offered_to_complete(
        club: Club, players: int):
    """§4: with 2-3 players a miss draws six of the boneyard; on a recorded table the scorer
    names them (API.md Actions, `drawn`). legal_actions lists only bodies that would be
    accepted as they are (API.md), so that miss is not in it: the view's `to_complete`
    offers it with "drawn": {"count": 6}, for the seat and for the admin."""
    t = undecided(club, players=players)
    for token in (t.seats[1], t.admin):
        view = club.view(t, token)
        assert miss_entries(view) == []
        assert to_complete(view) == [{"type": "decide", "choice": "miss",
                                      "drawn": {"count": 6}}
                                     | ({"seat": 1} if token == t.admin else {})]
        choices = [b["choice"] for b in view["legal_actions"]]
        assert choices == ["play"] + (["drop"] if players == 3 else [])
    # Sent as offered, it names no tile: a 422 that says what to send, and nothing changes.
    before = club.view(t)
    entry = to_complete(club.view(t, t.seats[1]))[0]
    j = club.problem(club.act(t, entry, t.seats[1]), 422, "validation_error")
    assert "drawn" in j["errors"]["json"] and "count" in j["detail"], j
    unchanged(club, t, before)
    # Completed from the entry alone (the count of tiles drawn), it is accepted.
    boneyard = before["hand"]["boneyard"]
    out = club.ok(t, completed(entry, boneyard), t.seats[1])
    assert sorted(out["table"]["hand"]["hands"]["1"]) == sorted(boneyard[:6])
    assert to_complete(out["table"]) == []  # a discard is due: nothing to complete
    held = out["table"]["hand"]["hands"]["1"]
    club.ok(t, {"type": "discard", "tiles": [held[0]]}, t.seats[1])
    # The next seat: with 3 players the last miss takes the whole boneyard (6 left), so the
    # service knows the draw and the miss is a plain body of legal_actions; with 2, six of
    # eleven again.
    nxt = 2 if players == 3 else 0
    view = club.view(t, t.seats[nxt])
    if players == 3:
        assert miss_entries(view) == [{"type": "decide", "choice": "miss"}]
        assert to_complete(view) == []
        entry = miss_entries(view)[0]
    else:
        assert miss_entries(view) == []
        entry = to_complete(view)[0]
        assert entry == {"type": "decide", "choice": "miss", "drawn": {"count": 6}}
    rest = club.view(t)["hand"]["boneyard"]
    club.ok(t, completed(entry, rest), t.seats[nxt])


def test_s4_four_player_and_shuffled_misses_stay_plain_bodies(club: Club):
    """The service knows those draws: the miss is a plain body and nothing is to complete."""
    t = undecided(club, players=4)
    view = club.view(t, t.seats[1])
    assert miss_entries(view) == [{"type": "decide", "choice": "miss"}]
    assert to_complete(view) == []
    s = club.create(first_dealer=0, seats=[{"name": "Ann"}, {"name": "Bob"}, {"name": "Cat"}])
    view = club.view(s, s.seats[1])
    assert miss_entries(view) == [{"type": "decide", "choice": "miss"}]
    assert to_complete(view) == []
    assert all(not isinstance(b.get("drawn"), dict) for b in view["legal_actions"])


# ---- §6 a follow's suit: declares nothing, ignored whatever it names -----------------------

def test_s6_a_follow_declares_no_suit_so_any_suit_it_names_is_ignored(club: Club):
    """§6 Leading: only the leader declares a suit (API.md: `suit` is needed only when leading
    a plain tile). A client may send a suit on every play, the led suit included when it
    trumps or cannot follow: a follow is played as if it named none, the trick keeps the
    led suit, and no tile_played records a suit for it."""
    t = undecided(club)  # DEAL: sixes are trumps
    for seat in (1, 2, 3, 0):
        club.ok(t, {"type": "decide", "choice": "play"}, t.seats[seat])
    club.ok(t, {"type": "play", "tile": "1-3", "suit": 3}, t.seats[1])  # threes led
    club.ok(t, {"type": "play", "tile": "3-3", "suit": 5}, t.seats[2])  # a suit 3-3 lacks
    club.ok(t, {"type": "play", "tile": "6-5", "suit": 3}, t.seats[3])  # trumps, names 3
    # The rules still apply to a follow naming a suit (seat 0 holds 5-3: follow threes).
    club.problem(club.act(t, {"type": "play", "tile": "6-4", "suit": 0}, t.seats[0]),
                 422, "must_follow_suit")
    out = club.ok(t, {"type": "play", "tile": "5-3", "suit": 5}, t.seats[0])
    trick = out["table"]["hand"]["tricks"][0]
    assert trick["suit"] == 3, trick
    played = [e for e in club.get(t, path="/events").get_json()["events"]
              if e["type"] == "tile_played"]
    assert [e["data"].get("suit") for e in played][1:] == [None, None, None], played
