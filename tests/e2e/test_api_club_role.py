"""GET /v1/clubs/{id} names the caller's role, so the club pages offer each token only what
it may do (API.md Clubs: extra fields are fine)."""

from __future__ import annotations

from tests.e2e.club import Club


def test_the_club_answer_names_the_callers_role(club: Club) -> None:
    c = club.c
    made = c.post("/v1/clubs", json={"name": "Roles"}).get_json()
    owner = {"Authorization": f"Bearer {made['token']}"}
    tokens = {"owner": made["token"]}
    for role in ("scorer", "viewer"):
        r = c.post(f"/v1/clubs/{made['id']}/tokens", json={"role": role, "label": role},
                   headers=owner)
        assert r.status_code == 201, r.get_json()
        tokens[role] = r.get_json()["token"]
    for role, token in tokens.items():
        r = c.get(f"/v1/clubs/{made['id']}", headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 200 and r.get_json()["role"] == role, r.get_json()
    assert c.get(f"/v1/clubs/{made['id']}").status_code == 401
