"""Per request: a request id (X-Request-Id in, X-Request-Id out, on every log line), and
the HTTP metrics by route template and status; GET /metrics serves them (ledger/metrics.py)."""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, Response, current_app

from ledger import metrics
from ledger.api.context import current_request, request_state
from ledger.observe import REQUEST_ID, new_request_id

log = logging.getLogger("ledger.api.requests")
HEADER = "X-Request-Id"


def start() -> None:
    state = request_state()  # one proxy lookup (ledger/api/context.py)
    state.loo_t0 = metrics.now()
    rid = new_request_id(current_request().headers.get(HEADER))
    state.request_id = rid
    state.loo_rid_token = REQUEST_ID.set(rid)


def finish(resp: Response) -> Response:
    state = request_state()
    rid = state.get("request_id")
    if rid is not None:
        resp.headers[HEADER] = rid
    t0 = state.get("loo_t0")
    if t0 is not None:
        req = current_request()
        route = req.url_rule.rule if req.url_rule is not None else "unmatched"
        seconds = metrics.now() - t0
        metrics.count_request(req.method, route, resp.status_code, seconds)
        if log.isEnabledFor(logging.INFO):  # the access log: one JSON line per request
            log.info("%s %s %d", req.method, req.path, resp.status_code,
                     extra={"method": req.method, "route": route, "path": req.path,
                            "status": resp.status_code, "ms": round(seconds * 1000, 2),
                            "remote": req.remote_addr})
    return resp


def reset(_exc: BaseException | None) -> None:
    token = request_state().pop("loo_rid_token", None)
    if token is not None:
        try:
            REQUEST_ID.reset(token)
        except ValueError:  # set in another context (a streamed body): nothing to undo
            pass


def install(app: Flask) -> None:
    """Before any other before_request (the rate limiter's 429s are counted and timed too)."""
    app.before_request(start)
    app.after_request(finish)
    app.teardown_request(reset)


def metrics_view() -> Any:
    container = current_app.extensions["loo_container"]
    body, content_type = metrics.exposition(container.queue)
    return Response(body, content_type=content_type)
