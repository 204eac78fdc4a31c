"""Per request: a request id (X-Request-Id in, X-Request-Id out, on every log line), and
the HTTP metrics by route template and status; GET /metrics serves them (ledger/metrics.py)."""

from __future__ import annotations

import logging
from typing import Any

from flask import Flask, Response, current_app, g, request

from ledger import metrics
from ledger.observe import REQUEST_ID, new_request_id

log = logging.getLogger("ledger.api.requests")
HEADER = "X-Request-Id"


def start() -> None:
    g.loo_t0 = metrics.now()
    rid = new_request_id(request.headers.get(HEADER))
    g.request_id = rid
    g.loo_rid_token = REQUEST_ID.set(rid)


def finish(resp: Response) -> Response:
    rid = g.get("request_id")
    if rid is not None:
        resp.headers[HEADER] = rid
    t0 = g.get("loo_t0")
    if t0 is not None:
        route = request.url_rule.rule if request.url_rule is not None else "unmatched"
        seconds = metrics.now() - t0
        metrics.count_request(request.method, route, resp.status_code, seconds)
        if log.isEnabledFor(logging.INFO):  # the access log: one JSON line per request
            log.info("%s %s %d", request.method, request.path, resp.status_code,
                     extra={"method": request.method, "route": route, "path": request.path,
                            "status": resp.status_code, "ms": round(seconds * 1000, 2),
                            "remote": request.remote_addr})
    return resp


def reset(_exc: BaseException | None) -> None:
    token = g.pop("loo_rid_token", None)
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
