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
    document_links(api)
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
    # (a key of blanks only is refused: the server strips it first)
    "schema": {"type": "string", "minLength": 1, "maxLength": 200, "pattern": "\\S"},
    "description": "Repeating the request with the same key returns the first answer and "
                   "appends nothing; the same key with another body is a 409 "
                   "idempotency_conflict (see /docs/http, Conventions). A key is its "
                   "caller's: sent with another bearer token (or none) it is another key; "
                   "without a token, a key is its client address's (another address: "
                   "another key)."}


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
                    ("get", TABLE + "/spectators/{spectator_id}"),
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
                             "(missing_token, invalid_token)") | {"headers": {
        "WWW-Authenticate": {"description": 'Bearer (with error="invalid_token" for a token '
                                            "that opens nothing here)",
                             "schema": {"type": "string"}}}},
    "FORBIDDEN": _problem("The token opens this resource but may not do this (admin_only, "
                          "read_only_token, not_your_seat, role_not_allowed, ...)"),
    "NOT_FOUND": _problem("No such table, club, hand or other resource: not_found, or "
                          "<thing>_not_found for the thing the path names (table_not_found, "
                          "hand_not_found, club_not_found, member_not_found, season_not_found, "
                          "token_not_found, webhook_not_found, spectator_not_found)"),
    "BAD_REQUEST": _problem("The body is not JSON (malformed_json), or a header is malformed "
                            "(invalid_idempotency_key, invalid_last_event_id)"),
    "CONFLICT": _problem("The write lost a race or repeats something: version_conflict (a "
                         "stale expected_version), idempotency_conflict (an Idempotency-Key "
                         "used with another body), duplicate_external_id, ..."),
    "PAYLOAD_TOO_LARGE": _problem("The body is over the server's limit (LOO_MAX_BODY_BYTES); "
                                  "nothing of it was read"),
    "UNSUPPORTED_MEDIA_TYPE": _problem("The body is not sent as JSON (Content-Type: "
                                       "application/json)"),
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
            if path.startswith("/v1/"):  # a bad query value, or any unknown parameter
                add("422", "UNPROCESSABLE_ENTITY")  # (ledger/api/query.py)
            if "requestBody" in op:
                add("400", "BAD_REQUEST")
                add("413", "PAYLOAD_TOO_LARGE")
                add("415", "UNSUPPORTED_MEDIA_TYPE")
            if method != "get" and path.startswith("/v1/"):  # Idempotency-Key, versions
                add("400", "BAD_REQUEST")
                add("409", "CONFLICT")
            if path.startswith("/v1/"):  # rate limits spare the probes and /metrics only
                add("429", "TOO_MANY_REQUESTS")
                if path not in STORELESS:
                    add("503", "SERVICE_UNAVAILABLE")


# ---- operationIds and links: what a client generator names, and how one answer leads on ----
# Every operation's operationId (the method name a generated client gets); a test checks
# that each operation has one and that none repeats.
OPERATION_IDS = {
    ("get", "/healthz"): "getLiveness",
    ("get", "/readyz"): "getReadiness",
    ("get", "/metrics"): "getMetrics",
    ("post", "/v1/tables"): "createTable",
    ("get", TABLE): "getTable",
    ("post", TABLE + "/close"): "closeTable",
    ("get", TABLE + "/spectators"): "listSpectators",
    ("post", TABLE + "/spectators"): "addSpectator",
    ("get", TABLE + "/spectators/{spectator_id}"): "getSpectator",
    ("delete", TABLE + "/spectators/{spectator_id}"): "revokeSpectator",
    ("post", TABLE + "/hands"): "startHand",
    ("post", TABLE + "/actions"): "act",
    ("get", TABLE + "/hint"): "getHint",
    ("post", TABLE + "/hands/{number}/void"): "voidHand",
    ("get", TABLE + "/hands/{number}"): "getHand",
    ("get", TABLE + "/hands/{number}/replay"): "replayHand",
    ("get", TABLE + "/events"): "listTableEvents",
    ("get", TABLE + "/ledger"): "getTableLedger",
    ("get", TABLE + "/audit"): "auditTable",
    ("get", TABLE + "/checkpoints"): "listCheckpoints",
    ("get", TABLE + "/hands/{number}/history"): "getHandHistory",
    ("get", TABLE + "/history"): "getTableHistory",
    ("get", "/v1/bots"): "listBots",
    ("get", "/v1/checkpoints/key"): "getCheckpointKey",
    ("get", "/v1/schemas/loo-hh-1.0.json"): "getHandHistorySchema",
    ("post", "/v1/clubs"): "createClub",
    ("get", CLUB): "getClub",
    ("get", CLUB + "/tokens"): "listClubTokens",
    ("post", CLUB + "/tokens"): "issueClubToken",
    ("get", CLUB + "/tokens/{token_id}"): "getClubToken",
    ("delete", CLUB + "/tokens/{token_id}"): "revokeClubToken",
    ("get", CLUB + "/webhooks"): "listWebhooks",
    ("post", CLUB + "/webhooks"): "addWebhook",
    ("get", CLUB + "/webhooks/{webhook_id}"): "getWebhook",
    ("delete", CLUB + "/webhooks/{webhook_id}"): "deleteWebhook",
    ("post", CLUB + "/webhooks/{webhook_id}/enable"): "enableWebhook",
    ("get", CLUB + "/webhooks/{webhook_id}/deliveries"): "listWebhookDeliveries",
    ("get", CLUB + "/members"): "listMembers",
    ("post", CLUB + "/members"): "addMember",
    ("get", CLUB + "/members/{member_id}"): "getMember",
    ("patch", CLUB + "/members/{member_id}"): "updateMember",
    ("post", CLUB + "/members/{member_id}/archive"): "archiveMember",
    ("get", CLUB + "/members/{member_id}/ledger"): "getMemberLedger",
    ("get", CLUB + "/seasons"): "listSeasons",
    ("post", CLUB + "/seasons"): "startSeason",
    ("get", CLUB + "/seasons/{season_id}"): "getSeason",
    ("post", CLUB + "/seasons/{season_id}/close"): "closeSeason",
    ("get", CLUB + "/tables"): "listClubTables",
    ("post", CLUB + "/tables"): "createClubTable",
    ("post", CLUB + "/tables/import"): "importClubTables",
    ("get", CLUB + "/standings"): "getStandings",
    ("get", CLUB + "/history"): "getClubHistory",
    ("get", CLUB + "/events"): "listClubEvents",
}

BEARER_FROM = "Bearer {{$response.body#/{}}}"  # a token of the answer, as a header
SAME_CALLER = "$request.header.Authorization"  # the token the request was made with


# Writes whose body takes `expected_version` (the stream's version the caller last saw).
VERSIONED = {"closeTable", "addSpectator", "startHand", "act", "voidHand", "addWebhook",
             "enableWebhook",
             "addMember", "updateMember", "archiveMember", "startSeason", "closeSeason"}


def _link(operation_id: str, description: str, version: str | None = None,
          **parameters: Any) -> dict[str, Any]:
    """An OpenAPI link; keyword `Authorization` is the header, the others path or query
    parameters of the target (runtime expressions, API.md's ids and tokens). `version`: the
    stream version the answer gives, sent on as the write's `expected_version`."""
    params = {("header.Authorization" if name == "Authorization" else name): value
              for name, value in parameters.items()}
    link = {"operationId": operation_id, "description": description, "parameters": params}
    if version is not None and operation_id in VERSIONED:
        link["requestBody"] = {"expected_version": version}
    return link


def _table_links(table_id: str, auth: str, hand: str, seat_auth: str | None,
                 whose: str) -> dict[str, Any]:
    """A table's reads and actions, opened with `auth` (`whose` names that token)."""
    def link(op: str, what: str, **more: Any) -> dict[str, Any]:
        return _link(op, f"{what}, with {whose}", "$response.body#/version",
                     table_id=table_id, Authorization=auth, **more)

    links = {
        "GetTable": link("getTable", "The table as this token sees it"),
        "Act": {**link("act", "A move at the table: its first legal action, as the body"),
                "requestBody": "$response.body#/table/legal_actions/0",
                "x-schemathesis": {"merge_body": False}},  # the action as it is
        "StartHand": link("startHand", "Deal the next hand (tables without auto_deal)"),
        "CloseTable": link("closeTable", "Close the table"),
        "AddSpectator": link("addSpectator", "Issue a spectator token"),
        "ListSpectators": link("listSpectators", "The spectator tokens issued"),
        "ListTableEvents": link("listTableEvents", "The table's events (or SSE feed)"),
        "GetTableLedger": link("getTableLedger", "Every chip transfer and the balances"),
        "AuditTable": link("auditTable", "The audit of the table's record"),
        "ListCheckpoints": link("listCheckpoints", "The signed chain heads"),
        "GetTableHistory": link("getTableHistory", "The table as loo-hh hand histories"),
        "GetHand": link("getHand", "The hand in play", number=hand),
        "ReplayHand": link("replayHand", "The hand in play, step by step", number=hand),
        "GetHandHistory": link("getHandHistory", "The hand's loo-hh history", number=hand),
        "VoidHand": link("voidHand", "Void the hand", number=hand),
    }
    if seat_auth is not None:
        links["GetHint"] = _link("getHint", "A hint for seat 0, with its seat token",
                                 table_id=table_id, Authorization=seat_auth)
        links["GetTableAsSeat"] = _link("getTable", "The table as seat 0 sees it",
                                        table_id=table_id, Authorization=seat_auth)
    return links


def _club_links(club_id: str, auth: str, whose: str) -> dict[str, Any]:
    ops = {"GetClub": ("getClub", "The club"),
           "ListClubTokens": ("listClubTokens", "The club's tokens"),
           "IssueClubToken": ("issueClubToken", "Issue a club token"),
           "ListWebhooks": ("listWebhooks", "The club's webhooks"),
           "AddWebhook": ("addWebhook", "Add a webhook"),
           "ListMembers": ("listMembers", "The members"),
           "AddMember": ("addMember", "Add a member"),
           "ListSeasons": ("listSeasons", "The seasons"),
           "StartSeason": ("startSeason", "Start a season"),
           "ListClubTables": ("listClubTables", "The club's tables"),
           "CreateClubTable": ("createClubTable", "Open a table in the club"),
           "ImportClubTables": ("importClubTables", "Import played tables (loo-hh)"),
           "GetStandings": ("getStandings", "The standings"),
           "GetClubHistory": ("getClubHistory", "The club's hand histories"),
           "ListClubEvents": ("listClubEvents", "The club's events (or SSE feed)")}
    return {name: _link(op, f"{what}, with {whose}", "$response.body#/version",
                        club_id=club_id, Authorization=auth)
            for name, (op, what) in ops.items()}


def _created_table_links() -> dict[str, Any]:
    return _table_links("$response.body#/id", BEARER_FROM.format("admin_token"),
                        "$response.body#/table/hand/number",
                        BEARER_FROM.format("seats/0/token"), "the admin token it returned")


def _same_club(what: tuple[tuple[str, str, str], ...], param: str) -> dict[str, Any]:
    return {name: _link(op, f"{desc}, with the same token", club_id="$request.path.club_id",
                        Authorization=SAME_CALLER, **{param: "$response.body#/id"})
            for name, op, desc in what}


# (operationId, status) -> its response's links.
LINKS: dict[tuple[str, str], dict[str, Any]] = {
    ("createTable", "201"): _created_table_links(),
    ("createClubTable", "201"): _created_table_links(),
    ("importClubTables", "201"): _created_table_links(),
    ("act", "200"): _table_links("$request.path.table_id", SAME_CALLER,
                                 "$response.body#/table/hand/number", None, "the same token"),
    ("startHand", "200"): _table_links("$request.path.table_id", SAME_CALLER,
                                       "$response.body#/table/hand/number", None,
                                       "the same token"),
    ("addSpectator", "201"): {
        "GetTableAsSpectator": _link("getTable", "The table as the new spectator sees it",
                                     table_id="$request.path.table_id",
                                     Authorization=BEARER_FROM.format("token")),
        "GetSpectator": _link("getSpectator", "The new spectator token, without its secret",
                              table_id="$request.path.table_id",
                              spectator_id="$response.body#/id", Authorization=SAME_CALLER),
        "RevokeSpectator": _link("revokeSpectator", "Revoke the new spectator token",
                                 table_id="$request.path.table_id",
                                 spectator_id="$response.body#/id", Authorization=SAME_CALLER)},
    ("createClub", "201"): _club_links("$response.body#/id", BEARER_FROM.format("token"),
                                       "the owner token it returned"),
    ("issueClubToken", "201"): {
        "GetClubWithToken": _link("getClub", "The club as the new token's role sees it",
                                  club_id="$request.path.club_id",
                                  Authorization=BEARER_FROM.format("token")),
        **_same_club((("GetClubToken", "getClubToken", "The new token, without its secret"),
                      ("RevokeClubToken", "revokeClubToken", "Revoke the new token")),
                     "token_id")},
    ("addWebhook", "201"): _same_club((
        ("GetWebhook", "getWebhook", "The new webhook"),
        ("DeleteWebhook", "deleteWebhook", "Delete the new webhook"),
        ("EnableWebhook", "enableWebhook", "Enable the new webhook again (once disabled)"),
        ("ListWebhookDeliveries", "listWebhookDeliveries", "The new webhook's deliveries")),
        "webhook_id"),
    ("addMember", "201"): _same_club((
        ("GetMember", "getMember", "The new member"),
        ("UpdateMember", "updateMember", "Rename the new member"),
        ("ArchiveMember", "archiveMember", "Archive the new member"),
        ("GetMemberLedger", "getMemberLedger", "The new member's chips over the seasons")),
        "member_id"),
    ("startSeason", "201"): _same_club((
        ("GetSeason", "getSeason", "The new season"),
        ("CloseSeason", "closeSeason", "Close the new season")), "season_id"),
}


# Creations answered with a Location (where the new resource reads: RFC 9110 15.3.2).
LOCATED = {"createTable": "the new table", "createClubTable": "the new table",
           "importClubTables": "the new table", "createClub": "the new club",
           "addMember": "the new member", "addWebhook": "the new webhook",
           "startSeason": "the new season", "issueClubToken": "the new token (without its "
           "secret)", "addSpectator": "the new spectator token (without its secret)"}


def document_links(api: Api) -> None:
    """operationIds on every operation, and `links` on the answers that name something a
    client goes on with: a created table (its id, admin and seat tokens) to its reads and
    actions, a club to its resources, a member, season, webhook, token or spectator to its
    own operations."""
    for path, item in api.spec._paths.items():  # noqa: SLF001 - apispec keeps no public accessor
        for method, op in item.items():
            if isinstance(op, dict) and method in METHODS:
                op["operationId"] = OPERATION_IDS[(method, path)]
                for status, response in op.get("responses", {}).items():
                    links = LINKS.get((op["operationId"], str(status)))
                    if links:
                        response["links"] = links
                    if str(status) == "201" and op["operationId"] in LOCATED:
                        response.setdefault("headers", {})["Location"] = {
                            "description": f"where {LOCATED[op['operationId']]} reads "
                                           "(GET, a path on this server)",
                            "schema": {"type": "string"}}
