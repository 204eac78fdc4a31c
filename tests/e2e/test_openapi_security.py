"""The spec says how to authenticate (issue 16): bearer securitySchemes by role, each
operation's `security`, and problem+json error responses; and what it says is true: an
operation that needs a token answers 401 without one, and 403 to a role it does not list."""

from __future__ import annotations

import re
from typing import Any

from tests.e2e.club import Club

METHODS = ("get", "post", "put", "patch", "delete")
PUBLIC = {("get", "/healthz"), ("get", "/readyz"), ("get", "/metrics"), ("post", "/v1/tables"),
          ("get", "/v1/bots"), ("get", "/v1/checkpoints/key"),
          ("get", "/v1/schemas/loo-hh-1.0.json")}


def operations(spec: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(m, p, op) for p, item in spec["paths"].items() for m, op in item.items()
            if m in METHODS]


def world(club: Club) -> dict[str, Any]:
    """A table with a spectator, and a club with a token of each role, a member, a season
    and a table: every path parameter of the spec gets a real value."""
    t = club.create(first_dealer=0)
    c = club.c
    spec_tok = c.post(f"/v1/tables/{t.id}/spectators", json={"label": "screen"},
                      headers=Club.auth(t.admin)).get_json()
    made = c.post("/v1/clubs", json={"name": "Red Lion"}).get_json()
    cid, owner = made["id"], made["token"]
    tokens = {}
    for role in ("scorer", "viewer"):
        r = c.post(f"/v1/clubs/{cid}/tokens", json={"role": role, "label": role},
                   headers=Club.auth(owner)).get_json()
        tokens[role] = r
    member = c.post(f"/v1/clubs/{cid}/members", json={"name": "Ann"},
                    headers=Club.auth(owner)).get_json()["id"]
    season = c.post(f"/v1/clubs/{cid}/seasons", json={"name": "Winter",
                                                       "starts_on": "2026-11-01"},
                    headers=Club.auth(owner)).get_json()["id"]
    # A webhook to a port that refuses (private addresses allowed only while it is added:
    # its deliveries are then blocked, nothing leaves the machine).
    import os

    os.environ["LOO_WEBHOOK_ALLOW_PRIVATE"] = "1"
    try:
        hook = c.post(f"/v1/clubs/{cid}/webhooks", headers=Club.auth(owner),
                      json={"url": "http://127.0.0.1:9/", "events": ["*"]}).get_json()["id"]
    finally:
        del os.environ["LOO_WEBHOOK_ALLOW_PRIVATE"]
    return {"table": t, "params": {
        "table_id": t.id, "number": "1", "spectator_id": spec_tok["id"], "club_id": cid,
        "member_id": member, "season_id": season, "token_id": tokens["viewer"]["id"],
        "webhook_id": hook},
        "tokens": {"tableAdmin": t.admin, "tableSeat": t.seats[0],
                   "tableSpectator": spec_tok["token"], "clubOwner": owner,
                   "clubScorer": tokens["scorer"]["token"],
                   "clubViewer": tokens["viewer"]["token"]}}


def call(club: Club, method: str, path: str, params: dict[str, str],
         token: str | None) -> Any:
    url = re.sub(r"\{(\w+)\}", lambda m: params[m.group(1)], path)
    return club.c.open(url, method=method.upper(), headers=Club.auth(token),
                       json={} if method != "get" else None)


def test_the_spec_declares_bearer_auth_and_problem_responses(club: Club) -> None:
    spec = club.c.get("/openapi.json").get_json()
    schemes = spec["components"]["securitySchemes"]
    assert set(schemes) >= {"tableAdmin", "tableSeat", "tableSpectator", "clubOwner",
                            "clubScorer", "clubViewer", "operator"}
    assert all(s == {**s, "type": "http", "scheme": "bearer"} for s in schemes.values())
    public = set()
    for method, path, op in operations(spec):
        assert "security" in op, (method, path)
        for requirement in op["security"]:
            assert set(requirement) <= set(schemes), (method, path)
        if op["security"] == []:
            public.add((method, path))
        else:
            assert "401" in op["responses"], (method, path)
        for status, response in op["responses"].items():
            if status[0] in "45":
                response = spec["components"]["responses"][response["$ref"].rsplit("/", 1)[1]] \
                    if "$ref" in response else response
                assert list(response["content"]) == ["application/problem+json"], (
                    method, path, status)
        if path.startswith("/v1/"):
            assert "429" in op["responses"], (method, path)
            retry = spec["components"]["responses"]["TOO_MANY_REQUESTS"]["headers"]
            assert "Retry-After" in retry
    assert public == PUBLIC
    assert spec["paths"]["/v1/clubs"]["post"]["security"] == [{"operator": []}, {}]


def test_what_the_spec_says_about_tokens_is_true(club: Club) -> None:
    spec = club.c.get("/openapi.json").get_json()
    w = world(club)
    checked = 0
    for method, path, op in operations(spec):
        security = op["security"]
        if not security or {} in security:
            continue
        r = call(club, method, path, w["params"], None)
        assert r.status_code == 401, (method, path, r.status_code, r.get_json())
        assert r.mimetype == "application/problem+json"
        allowed = {name for req in security for name in req}
        family = "table" if path.startswith("/v1/tables") else "club"
        for name, token in w["tokens"].items():
            if name.startswith(family) and name not in allowed:
                r = call(club, method, path, w["params"], token)
                # (a hint for the admin is a 422 naming the seat it should ask with)
                expected = 422 if path.endswith("/hint") and name == "tableAdmin" else 403
                assert r.status_code == expected, (method, path, name, r.status_code,
                                                   r.get_json())
                assert r.mimetype == "application/problem+json"
        checked += 1
    assert checked >= 30
