"""Regressions found by auditing the running service against API.md and RULES.md."""

from __future__ import annotations

from tests.e2e.club import Club

FOUR = [{"name": n} for n in ("Ann", "Bob", "Cat", "Dan")]


def _dealer_chosen(club: Club, t) -> dict:
    events = club.get(t, path="/events").get_json()["events"]
    (chosen,) = [e for e in events if e["type"] == "dealer_chosen"]
    return chosen["data"]


def test_rules_9_rounce_first_trump_holder_is_chosen_by_lots_unless_named(club: Club):
    """RULES §9: "First trump-holder: whoever turns the highest tile (the "by lots" method
    of §2), unless the table names a seat." """
    t = club.create(variant="rounce", seats=FOUR)
    chosen = _dealer_chosen(club, t)
    assert chosen["method"] == "lots" and len(chosen["draws"]) == 4
    assert club.view(t)["dealer"] == chosen["seat"]
    named = club.create(variant="rounce", seats=FOUR, first_dealer=2)
    assert _dealer_chosen(club, named)["method"] == "named"
    assert club.view(named)["dealer"] == 2


def test_rules_2_loo_first_dealer_named_when_given_and_seat_0_when_omitted(club: Club):
    t = club.create(seats=FOUR)
    chosen = _dealer_chosen(club, t)
    assert chosen["method"] == "named" and chosen["seat"] == 0
    r = club.c.post("/v1/tables", json={"seats": FOUR, "first_dealer": None})
    club.problem(r, 422)
