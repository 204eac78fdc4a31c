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
    t = club.create(first_dealer=0, options={"hints": True})
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
                assert r.status_code == 403, (method, path, name, r.status_code,
                                              r.get_json())
                assert r.mimetype == "application/problem+json"
        checked += 1
    assert checked >= 30


def test_every_operation_has_an_operation_id_and_links_name_real_ones(club: Club) -> None:
    """Client generators name methods by operationId; links name their target by it, and
    pass only parameters the target has (its path parameters, the Authorization header of
    a secured operation, expected_version in a body that takes it)."""
    spec = club.c.get("/openapi.json").get_json()
    ops = {op["operationId"]: (m, p, op) for m, p, op in operations(spec)}
    assert len(ops) == len(operations(spec))  # present on each, none repeated
    schemas = spec["components"]["schemas"]
    linked = 0
    for _, path, op in operations(spec):
        for status, response in op["responses"].items():
            for name, link in response.get("links", {}).items():
                assert status.startswith("2"), (path, name)
                _, target_path, target = ops[link["operationId"]]
                for param in link["parameters"]:
                    where, _, pname = param.rpartition(".")
                    if where == "header":
                        assert pname == "Authorization" and target["security"], (path, name)
                    else:
                        assert "{" + pname + "}" in target_path, (path, name, param)
                body = link.get("requestBody")
                if isinstance(body, dict):
                    ref = target["requestBody"]["content"]["application/json"]["schema"]
                    props = schemas[ref["$ref"].rsplit("/", 1)[1]]["properties"]
                    assert set(body) <= set(props), (path, name)
                linked += 1
    assert linked >= 100
    created = spec["paths"]["/v1/tables"]["post"]["responses"]["201"]["links"]
    assert created["GetTable"]["parameters"] == {
        "table_id": "$response.body#/id",
        "header.Authorization": "Bearer {$response.body#/admin_token}"}


def test_bodies_and_writes_declare_their_problems(club: Club) -> None:
    """A body can be malformed (400), too large (413) or not JSON (415); a write can lose a
    race or repeat an Idempotency-Key with another body (409), or send a malformed key
    (400); every write declares the header. And each is what the server answers."""
    spec = club.c.get("/openapi.json").get_json()
    for method, path, op in operations(spec):
        statuses = set(op["responses"])
        if "requestBody" in op:
            assert {"400", "413", "415"} <= statuses, (method, path)
        if method != "get" and path.startswith("/v1/"):
            assert {"400", "409"} <= statuses, (method, path)
        if any(p["in"] == "query" for p in op.get("parameters", [])):
            assert "422" in statuses, (method, path)  # a bad value, an unknown parameter
    keyed = {(m, p) for m, p, op in operations(spec)
             if any(x["name"] == "Idempotency-Key" for x in op.get("parameters", []))}
    assert keyed == {(m, p) for m, p, _ in operations(spec) if m != "get"}
    assert "401" in spec["paths"]["/v1/clubs"]["post"]["responses"]  # not the operator
    club.problem(club.c.post("/v1/tables", data=b"\x00", content_type="application/json"),
                 400, "malformed_json")
    club.problem(club.c.post("/v1/tables", json={"seats": [{"name": "a"}, {"name": "b"}]},
                             headers={"Idempotency-Key": " "}), 400, "invalid_idempotency_key")
    club.problem(club.c.post("/v1/tables", data="x", content_type="text/plain"), 415)
    made = club.c.post("/v1/clubs", json={"name": "Crown"}).get_json()
    auth = Club.auth(made["token"])
    first = club.c.post(f"/v1/clubs/{made['id']}/members", headers=auth,
                        json={"name": "Ann", "external_id": "x1"})
    assert first.status_code == 201
    club.problem(club.c.post(f"/v1/clubs/{made['id']}/members", headers=auth,
                             json={"name": "Bob", "external_id": "x1"}), 409)
