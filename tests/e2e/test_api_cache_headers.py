"""The API's answers are never kept by a cache: they carry tokens shown once, tiles only one
seat may see, and state that changes with every move (Cache-Control: no-store)."""

from __future__ import annotations

from tests.e2e.club import Club


def test_every_api_answer_says_no_store_and_the_pages_assets_do_not(club: Club) -> None:
    c = club.c
    created = c.post("/v1/tables", json={"seats": [{"name": n} for n in ("Ann", "Bob")]})
    assert created.status_code == 201
    assert created.headers["Cache-Control"] == "no-store"  # the tokens, shown once
    t = created.get_json()
    seat = {"Authorization": f"Bearer {t['seats'][0]['token']}"}
    admin = {"Authorization": f"Bearer {t['admin_token']}"}
    answers = [
        c.get(f"/v1/tables/{t['id']}", headers=seat),  # a seat's own tiles
        c.get(f"/v1/tables/{t['id']}/events", headers=seat),
        c.get(f"/v1/tables/{t['id']}/ledger", headers=admin),
        c.post("/v1/clubs", json={"name": "The Crown"}),  # the owner token, shown once
        c.get("/v1/tables/no-such-table", headers=seat),  # problems too
        c.post(f"/v1/tables/{t['id']}/actions", json={"type": "play"}, headers=seat),
        c.get(f"/v1/tables/{t['id']}"),  # 401
    ]
    assert [a.status_code for a in answers] == [200, 200, 200, 201, 404, 422, 401]
    for a in answers:
        assert a.headers.get("Cache-Control") == "no-store", (a.status_code, a.headers)
    # What is not the API keeps its own caching (the probes and the pages are not /v1/).
    assert "no-store" not in c.get("/healthz").headers.get("Cache-Control", "")
