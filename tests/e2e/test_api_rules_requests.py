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
