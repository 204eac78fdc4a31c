"""RULES.md §2-§10 audited from outside, over HTTP (both stores): what the broad property
test in test_api_rules_conformance.py does not reach."""

from __future__ import annotations

from tests.e2e.club import Club

RESULT = {"decisions": {"1": "play", "2": "play", "0": "play"},
          "tricks": {"1": 3, "2": 2, "0": 0}}


def test_rules_10_corrections_a_void_takes_back_the_seats_tricks(club: Club):
    """A voided hand leaves balances, pool and scores as before it (API.md Corrections): the
    tricks each seat shows on the table (seats[].tricks) too, as the standings do."""
    t = club.create(deal="results", seats=[{"name": n} for n in ("Ann", "Bob", "Cat")],
                    first_dealer=0)
    assert club.start(t, {"result": RESULT}).status_code == 200
    assert [s["tricks"] for s in club.view(t)["seats"]] == [0, 3, 2]
    assert club.post(t, "/hands/1/void", {"reason": "wrong seats"}).status_code == 200
    view = club.view(t)
    assert [s["tricks"] for s in view["seats"]] == [0, 0, 0]  # [0, 3, 2] before the fix
    assert [s["balance"] for s in view["seats"]] == [0, 0, 0] and view["pool"] == 0
    # entered again, the hand counts once
    again = {"decisions": RESULT["decisions"], "tricks": {"1": 1, "2": 0, "0": 4}}
    assert club.start(t, {"result": again}).status_code == 200
    assert [s["tricks"] for s in club.view(t)["seats"]] == [4, 1, 0]
    audit = club.get(t, path="/audit").get_json()
    assert audit["ok"] is True, audit
