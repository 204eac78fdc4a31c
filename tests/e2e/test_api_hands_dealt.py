"""API.md Hands: `POST /v1/tables/{id}/hands` starts the next hand; with `auto_deal` the
service starts it itself (the first at the table's creation). A client that starts every
hand itself, the first included, gets the hand it asked for: 200, the hand as dealt,
nothing appended. Once anyone has acted in the hand a start is refused as before
(422 hand_in_progress, rule 7)."""

from __future__ import annotations

from tests.e2e.club import Club


def _events(club: Club, t) -> list[dict]:
    return club.get(t, path="/events?limit=1000").get_json()["events"]


def test_hands_a_start_of_the_hand_auto_deal_dealt_at_creation_answers_that_hand(club: Club):
    t = club.create(deal="shuffled")
    before = club.view(t)
    assert before["hand"]["number"] == 1 and before["legal_actions"]
    logged = _events(club, t)
    r = club.start(t)
    assert r.status_code == 200, r.get_json()
    j = r.get_json()
    assert j["version"] == before["version"] and j["events"] == []
    assert j["table"]["hand"]["number"] == 1
    assert j["table"]["legal_actions"] == before["legal_actions"]
    assert _events(club, t) == logged  # nothing appended
    # With the version it read, as a careful client sends it, the same.
    r = club.start(t, {"expected_version": before["version"]})
    assert r.status_code == 200 and r.get_json()["events"] == []
    # A stale version is still a 409, as on any write.
    club.problem(club.start(t, {"expected_version": before["version"] - 1}), 409,
                 "version_conflict")


def test_hands_a_start_after_someone_acted_is_refused_as_before(club: Club):
    t = club.create(deal="shuffled")
    view = club.view(t)
    club.ok(t, dict(view["legal_actions"][0], expected_version=view["version"]))
    p = club.problem(club.start(t), 422, "hand_in_progress")
    assert p["rule"] == "7"


def test_hands_without_auto_deal_a_second_start_is_refused(club: Club):
    t = club.create(deal="shuffled", options={"auto_deal": False})
    assert club.view(t)["hand"] is None
    r = club.start(t)
    assert r.status_code == 200 and r.get_json()["events"]  # the deal's events
    club.problem(club.start(t), 422, "hand_in_progress")


def test_hands_the_start_of_an_auto_dealt_hand_is_the_admins(club: Club):
    t = club.create(deal="shuffled")
    club.problem(club.post(t, "/hands", {}, token=t.seats[0]), 403)
    club.problem(club.c.post(f"/v1/tables/{t.id}/hands", json={}), 401)


def test_hands_a_repeated_start_under_its_key_answers_as_the_first_after_play(club: Club):
    t = club.create(deal="shuffled")
    key = {"Idempotency-Key": "start-1"}
    first = club.post(t, "/hands", {}, headers=key)
    assert first.status_code == 200, first.get_json()
    view = club.view(t)
    club.ok(t, dict(view["legal_actions"][0], expected_version=view["version"]))
    again = club.post(t, "/hands", {}, headers=key)
    assert again.status_code == 200, again.get_json()
    assert again.get_json()["version"] == first.get_json()["version"]
    assert again.get_json()["events"] == []
    # Another body under the same key is a 409, as on every write.
    club.problem(club.post(t, "/hands", {"expected_version": 1}, headers=key), 409)


def test_hands_a_deal_sent_to_a_shuffled_table_is_still_refused(club: Club):
    t = club.create(deal="shuffled")
    r = club.start(t, {"turn_up": "6-6"})
    assert r.status_code == 422, r.get_json()
