"""Every blueprint of the v1 API, registered in one place."""

from __future__ import annotations

from typing import Any

from flask_smorest import Api

PROBLEM = "application/problem+json"
METHODS = ("get", "post", "put", "patch", "delete")


def register(api: Api) -> None:
    from ledger.api import clubs, history, play, published, records, tables

    for module in (tables, play, records, history, published, clubs):
        api.register_blueprint(module.blp)
    document_security(api)
    document_problems(api)
    document_idempotency(api.spec._paths)  # noqa: SLF001 - see document_problems
    clubs.document(api.spec._paths)  # noqa: SLF001 - see document_problems
    from ledger.api.feeds import document

    document(api.spec._paths)  # noqa: SLF001 - see document_problems


def _as_problem(response: dict[str, Any]) -> None:
    if "$ref" in response:
        return
    content = response.setdefault("content", {})
    if "application/json" in content:
        content[PROBLEM] = content.pop("application/json")
    if not content:  # an alt_response given only a description: it is a problem all the same
        content[PROBLEM] = {"schema": {"$ref": "#/components/schemas/Problem"}}


IDEMPOTENCY_KEY = {
    "in": "header", "name": "Idempotency-Key", "required": False,
    "schema": {"type": "string", "minLength": 1, "maxLength": 200},
    "description": "Repeating the request with the same key returns the first answer and "
                   "appends nothing; the same key with another body is a 409 "
                   "idempotency_conflict (API.md Conventions)."}


def document_idempotency(paths: dict[str, Any]) -> None:
    """Every write takes an Idempotency-Key: say so on every POST, PATCH and DELETE."""
    for item in paths.values():
        for method, op in item.items():
            if method in ("post", "patch", "put", "delete") and isinstance(op, dict):
                op.setdefault("parameters", []).append(dict(IDEMPOTENCY_KEY))


def document_problems(api: Api) -> None:
    """Errors are application/problem+json: say so in the spec, so it stays true."""
    for response in api.spec.components.responses.values():
        _as_problem(response)
    for item in api.spec._paths.values():  # noqa: SLF001 - apispec keeps no public accessor
        for op in item.values():
            if isinstance(op, dict):
                for status, response in op.get("responses", {}).items():
                    if str(status)[0] in "45" and isinstance(response, dict):
                        _as_problem(response)


# ---- who may call what: bearer tokens by role (components.securitySchemes) ------------------
def _bearer(description: str) -> dict[str, Any]:
    return {"type": "http", "scheme": "bearer", "description": description}


SECURITY_SCHEMES = {
    "tableAdmin": _bearer("A table's admin token (from its creation), or for a club table a "
                          "token of its club with the owner or scorer role."),
    "tableSeat": _bearer("A seat token of the table (from its creation): reads as that seat "
                         "sees the table, and acts for that seat only."),
    "tableSpectator": _bearer("A spectator token of the table (POST .../spectators), or for "
                              "a club table a viewer token of its club: reads only."),
    "clubOwner": _bearer("A club token with the owner role (the first one comes with the "
                         "club's creation)."),
    "clubScorer": _bearer("A club token with the scorer role."),
    "clubViewer": _bearer("A club token with the viewer role: reads only."),
    "operator": _bearer("LOO_OPERATOR_TOKEN: when the server sets it, creating a club needs "
                        "it; otherwise anyone may."),
}
TABLE = "/v1/tables/{table_id}"
CLUB = "/v1/clubs/{club_id}"
# Table operations only the admin may call (besides every POST and DELETE of the tables
# blueprint: close and spectators).
TABLE_ADMIN_ONLY = {("post", TABLE + "/hands"), ("post", TABLE + "/hands/{number}/void"),
                    ("get", TABLE + "/audit"), ("get", TABLE + "/spectators"),
                    ("post", TABLE + "/close"), ("post", TABLE + "/spectators"),
                    ("delete", TABLE + "/spectators/{spectator_id}")}


def security_for(method: str, path: str) -> list[dict[str, list[str]]]:
    """The callers the handlers admit (ledger/api/auth.py, clubs.caller): the first
    requirement that the token meets. [] declares the operation public."""
    if path == TABLE or path.startswith(TABLE + "/"):
        if (method, path) in TABLE_ADMIN_ONLY:
            return [{"tableAdmin": []}]
        if path == TABLE + "/hint":  # a seat's own hint: the admin is told to use one
            return [{"tableSeat": []}]
        if method != "get":
            return [{"tableAdmin": []}, {"tableSeat": []}]
        return [{"tableAdmin": []}, {"tableSeat": []}, {"tableSpectator": []}]
    if path == CLUB or path.startswith(CLUB + "/"):
        if path.startswith((CLUB + "/tokens", CLUB + "/webhooks")):
            return [{"clubOwner": []}]
        if method != "get":
            return [{"clubOwner": []}, {"clubScorer": []}]
        return [{"clubOwner": []}, {"clubScorer": []}, {"clubViewer": []}]
    if (method, path) == ("post", "/v1/clubs"):
        return [{"operator": []}, {}]  # {}: no token, when LOO_OPERATOR_TOKEN is unset
    return []


def _problem(description: str, retry_after: bool = False) -> dict[str, Any]:
    response: dict[str, Any] = {"description": description, "content": {
        PROBLEM: {"schema": {"$ref": "#/components/schemas/Problem"}}}}
    if retry_after:
        response["headers"] = {"Retry-After": {
            "description": "Seconds to wait before retrying", "schema": {"type": "integer"}}}
    return response


PROBLEM_RESPONSES = {
    "UNAUTHORIZED": _problem("No bearer token, or one that opens nothing here "
                             "(missing_token, invalid_token)"),
    "FORBIDDEN": _problem("The token opens this resource but may not do this (admin_only, "
                          "read_only_token, not_your_seat, role_not_allowed, ...)"),
    "NOT_FOUND": _problem("No such table, club, hand or other resource"),
    "TOO_MANY_REQUESTS": _problem("Over a rate limit (rate_limited); nothing was done",
                                  retry_after=True),
    "SERVICE_UNAVAILABLE": _problem("The event store cannot be reached (store_unavailable)",
                                    retry_after=True),
}
STORELESS = {"/v1/bots", "/v1/checkpoints/key", "/v1/schemas/loo-hh-1.0.json"}


def document_security(api: Api) -> None:
    """securitySchemes, each operation's `security`, and its problem responses: 401/403
    where a token is needed, 404 where the path names something, 429 where rate limits
    apply, 503 where the store is read."""
    spec = api.spec
    for name, scheme in SECURITY_SCHEMES.items():
        spec.components.security_scheme(name, scheme)
    for name, response in PROBLEM_RESPONSES.items():
        spec.components.response(name, response)
    for path, item in spec._paths.items():  # noqa: SLF001 - apispec keeps no public accessor
        for method, op in item.items():
            if not isinstance(op, dict) or method not in METHODS:
                continue
            security = security_for(method, path)
            op["security"] = security
            responses = op.setdefault("responses", {})

            def add(status: str, name: str, responses: dict[str, Any] = responses) -> None:
                responses.setdefault(status, {"$ref": f"#/components/responses/{name}"})

            if any(security) and {} not in security:
                add("401", "UNAUTHORIZED")
                add("403", "FORBIDDEN")
            elif {} in security:
                add("401", "UNAUTHORIZED")
            if "{" in path:
                add("404", "NOT_FOUND")
            if path.startswith("/v1/"):  # rate limits spare the probes and /metrics only
                add("429", "TOO_MANY_REQUESTS")
                if path not in STORELESS:
                    add("503", "SERVICE_UNAVAILABLE")
