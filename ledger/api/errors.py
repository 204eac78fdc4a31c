"""Every error leaves the API here, as application/problem+json (RFC 9457, API.md)."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from flask import Flask, Response, has_request_context, request
from werkzeug.exceptions import HTTPException

from ledger.app.contract import IdempotencyConflict, StoreUnavailable, VersionConflict
from ledger.core.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    Invalid,
    LedgerError,
    NotFound,
    RuleViolation,
    Unauthorized,
)
from ledger.web import error_page, guides, wants_html

log = logging.getLogger(__name__)
PROBLEM = "application/problem+json"


def problem(status: int, code: str, title: str, detail: str, *, rule: str | None = None,
            headers: dict[str, str] | None = None,
            extra: dict[str, Any] | None = None) -> Response:
    """One problem document; extra members (e.g. `errors`) come after the fixed ones.

    `type` is where the problem is explained (RFC 9457 §3.1.1): the rule it cites in the
    rule book, or its code among the HTTP guide's problem types; absolute, on this server.
    Clients match on `code`, which is stable; `type` is for the person reading."""
    path = guides.problem_type(code, rule)
    base = request.url_root.rstrip("/") if has_request_context() else ""
    body: dict[str, Any] = {"type": base + path, "title": title, "status": status,
                            "detail": detail, "code": code}
    if rule is not None:
        # The rule as the person refused can read it: a link into the rule book, its text.
        body["rule"] = rule
        body.update(guides.rule(rule))
    body.update({k: v for k, v in (extra or {}).items() if k not in body})
    resp = Response(json.dumps(body), status=status, mimetype=PROBLEM)
    resp.headers.update(headers or {})
    if status == 401 and "WWW-Authenticate" not in resp.headers:
        # RFC 9110 15.5.2: a 401 names the scheme it wants; RFC 6750 3: a bad token says so
        resp.headers["WWW-Authenticate"] = 'Bearer error="invalid_token"' \
            if code == "invalid_token" else "Bearer"
    return resp


def _snake(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


# One title per status, whoever refuses (RFC 9110's names): a rule violation, a value this
# service refuses and a body the schema refuses are all "Unprocessable content"; `code` says
# which (and `rule` for a rule violation). Werkzeug's own names ("Unprocessable Entity",
# "Not Found") are replaced by these.
TITLES: dict[int, str] = {400: "Bad request", 401: "Unauthorized", 403: "Forbidden",
                          404: "Not found", 409: "Conflict", 422: "Unprocessable content"}

# Each kind of domain error as HTTP says it (the most specific kind first).
HTTP: tuple[tuple[type[LedgerError], int, str], ...] = tuple(
    (kind, status, TITLES[status]) for kind, status in (
        (RuleViolation, 422), (Invalid, 422), (Conflict, 409), (NotFound, 404),
        (Forbidden, 403), (Unauthorized, 401), (BadRequest, 400)))


def http_status(err: LedgerError) -> tuple[int, str]:
    """(status, title) for a domain error; a kind nobody mapped is a plain 400."""
    for kind, status, title in HTTP:
        if isinstance(err, kind):
            return status, title
    return 400, TITLES[400]


def handle_ledger_error(err: LedgerError) -> Response:
    status, title = http_status(err)
    return problem(status, err.code, title, err.detail, rule=err.rule, extra=err.extra)


def handle_version_conflict(err: VersionConflict) -> Response:
    return problem(409, "version_conflict", TITLES[409],
                   f"the {'club' if str(err.table_id).startswith('club_') else 'table'} is at "
                   f"version {err.actual}, not {err.expected}: "
                   "read it again and retry with its current version",
                   extra={"expected_version": err.expected, "version": err.actual})


def handle_idempotency_conflict(err: IdempotencyConflict) -> Response:
    return problem(409, "idempotency_conflict", TITLES[409],
                   "this Idempotency-Key was already used with another request body (or "
                   "query string); use a new key for a new request")


def handle_store_unavailable(err: StoreUnavailable) -> Response:
    log.error("store unavailable: %s", err)
    return problem(503, "store_unavailable", "Service unavailable",
                   "the event store cannot be reached; retry shortly", headers={"Retry-After": "2"})


def handle_http_error(err: HTTPException) -> Response:
    """Werkzeug's and flask-smorest's errors: 400, 404, 405, 415, 422 (webargs), ..."""
    status = err.code or 500
    code, detail = _snake(err.name or "error"), err.description or ""
    data = getattr(err, "data", None) or {}
    extra: dict[str, Any] = {}
    if isinstance(getattr(err, "exc", None), ValueError) and status == 400:
        code, detail = "malformed_json", "the request body is not valid JSON"
    elif status == 422 and "messages" in data:
        code, detail = "validation_error", "the request does not match the schema: " \
            + _first_error(data["messages"]) + " (see errors)"
        extra["errors"] = data["messages"]
    if status in (404, 405) and wants_html():  # a browser on a page: a page, not JSON
        return error_page(status, "Page not found" if status == 404 else err.name or "Error",
                          "There is no page at this address. Tables open from the start "
                          "page, with their id and a token.")
    headers = {k: v for k, v in err.get_headers() if k.lower() != "content-type"}
    headers.update(data.get("headers") or {})
    return problem(status, code, TITLES.get(status) or err.name or "Error", detail,
                   headers=headers, extra=extra)


def _first_error(messages: Any) -> str:
    """The first of marshmallow's messages with where it is ("drawn.0: ..."), for `detail`;
    the location ("json", "query") and a dict's "value" level are left out of the path."""
    path: list[str] = []
    node = messages
    while isinstance(node, dict) and node:
        key = next(iter(node))
        node = node[key]
        path.append(str(key))
    path = [p for p in path[1:] if p != "value"]
    text = node[0] if isinstance(node, list) and node and isinstance(node[0], str) else None
    if text is None:
        return "a field is not valid"
    return f"{'.'.join(path)}: {text}" if path else text


def handle_unexpected(err: Exception) -> Response:
    """A bug: log it with its traceback, answer without one."""
    log.exception("unhandled error")
    return problem(500, "internal_error", "Internal server error",
                   "the server failed to handle this request; the error has been logged")


def register(app: Flask) -> None:
    """Install the handlers (after flask-smorest's Api, whose own HTTP handler this replaces)."""
    app.register_error_handler(LedgerError, handle_ledger_error)
    app.register_error_handler(VersionConflict, handle_version_conflict)
    app.register_error_handler(IdempotencyConflict, handle_idempotency_conflict)
    app.register_error_handler(StoreUnavailable, handle_store_unavailable)
    app.register_error_handler(HTTPException, handle_http_error)
    app.register_error_handler(Exception, handle_unexpected)
