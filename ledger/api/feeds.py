"""Server-Sent Events for the table and club feeds (API.md Feeds).

`Accept: text/event-stream` on `GET /v1/tables/{id}/events` or `GET /v1/clubs/{id}/events`
answers a stream: `id: <position>`, `event: <type>`, `data: <the JSON feed's event>`; the
event that ends a settled hand, a hand_voided and a table_closed carry their signed
`checkpoint`, as in the JSON feed. Resume with `Last-Event-ID` (or `?after=<position>`).

Serving model: a stream holds one request thread for its whole life (gthread, or the
threaded development server), so a process serves at most LOO_SSE_MAX_STREAMS streams at
once (more are refused 503 with Retry-After) and `loo serve` gives its workers that many
threads on top of `--threads`, so open streams never take the threads other requests need.
Each stream ends after LOO_SSE_MAX_SECONDS (the client reconnects with Last-Event-ID), and
waits on the process's one follower of the store (ledger/app/feed.py: woken by each commit),
never polling by itself.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Collection, Iterator, Mapping
from typing import Any

from flask import Response, current_app, request

from ledger.api.errors import problem
from ledger.app import encoding
from ledger.app.feed import FeedConfig, Source, follow, hub_for
from ledger.app.service import Ledger
from ledger.bootstrap import ConfigError
from ledger.core.errors import BadRequest, Invalid

SSE = "text/event-stream"
SSE_UTF8 = SSE + "; charset=utf-8"  # what the stream is sent as; an Accept may name it so
MAX_POSITION = 2**63 - 1
STREAMED = ("/v1/tables/{table_id}/events", "/v1/clubs/{club_id}/events")
LAST_EVENT_ID = {
    "in": "header", "name": "Last-Event-ID", "required": False,
    "schema": {"type": "integer", "minimum": 0},
    "description": "With Accept: text/event-stream: resume after this position (the last "
                   "`id:` received; it wins over ?after=, which is then a position too). "
                   "Empty is the same as absent (no id yet: ?after= or the beginning); "
                   "anything else but a whole number is a 400."}
SSE_CONTENT = {"schema": {"type": "string"},
               "example": "id: 42\nevent: tile_played\ndata: {\"version\": 17, ...}\n\n"}
SSE_NOTE = ("With Accept: text/event-stream: Server-Sent Events, `id: <position>`, `event: "
            "<type>`, `data: <the event as in the JSON feed>` (the event that ends a settled "
            "hand, a hand_voided and a table_closed carry their signed `checkpoint`); a "
            "comment line every 15 s when idle. The stream ends after a while, or after "
            "?limit= events when given: reconnect with Last-Event-ID.")


def document(spec: dict[str, Any]) -> None:
    """Add the event-stream answer, Last-Event-ID and the 503 to the feed operations."""
    for path in STREAMED:
        op = spec.get(path, {}).get("get")
        if not isinstance(op, dict):
            continue
        op.setdefault("parameters", []).append(LAST_EVENT_ID)
        ok = op["responses"]["200"]
        ok.setdefault("content", {})[SSE] = SSE_CONTENT
        ok["description"] = ok.get("description", "OK") + ". " + SSE_NOTE
        op["responses"].setdefault("400", {"$ref": "#/components/responses/BAD_REQUEST"})
        op["responses"]["503"] = {
            "description": "This process already holds its bound of open event streams: "
                           "retry after Retry-After seconds",
            "content": {"application/problem+json": {"schema": {"type": "object"}}}}


def feed_config(environ: Mapping[str, str] = os.environ) -> FeedConfig:
    """LOO_SSE_KEEPALIVE, LOO_SSE_MAX_SECONDS, LOO_SSE_MAX_STREAMS, LOO_FEED_POLL."""
    def number(var: str, default: float, low: float, high: float) -> float:
        raw = environ.get(var, "").strip()
        if not raw:
            return default
        try:
            value = float(raw)
        except ValueError:
            value = float("nan")
        if not low <= value <= high:
            raise ConfigError(f"{var}: {raw!r} is not a number from {low:g} to {high:g}")
        return value

    return FeedConfig(keepalive=number("LOO_SSE_KEEPALIVE", 15.0, 0.05, 3600),
                      max_seconds=number("LOO_SSE_MAX_SECONDS", 300.0, 0.5, 86400),
                      max_streams=int(number("LOO_SSE_MAX_STREAMS", 32, 1, 100_000)),
                      poll=number("LOO_FEED_POLL", 0.05, 0.005, 10))


def wants_sse() -> bool:
    """Accept names text/event-stream, in any case (media types are case-insensitive, RFC
    9110 8.3.1), and prefers it to JSON."""
    accept = request.headers.get("Accept", "")
    return SSE in accept.lower() and request.accept_mimetypes.best_match(
        ["application/json", SSE, SSE_UTF8]) in (SSE, SSE_UTF8)


def start_position(after: int | None) -> int:
    """Last-Event-ID (a position) wins over ?after=; a malformed one is a 400. An empty one
    is no id at all (the SSE spec: an empty last event ID is "none"; a client that has seen
    no `id:` may send it empty), so ?after= or the beginning decides, as without it."""
    raw = request.headers.get("Last-Event-ID")
    if raw is not None:
        raw = raw.strip()
    if not raw:
        if after is not None and after > MAX_POSITION:
            raise Invalid("invalid_filter", f"after must be a position from 0 to {MAX_POSITION}",
                          field="after")
        return after or 0
    # Length first: int() refuses a string of more than 4300 digits (ValueError, a 500).
    if not raw.isdigit() or not raw.isascii() or len(raw.lstrip("0")) > 19 \
            or int(raw) > MAX_POSITION:
        raise BadRequest("invalid_last_event_id",
                             f"Last-Event-ID must be a position (a whole number >= 0), as in "
                             f"the `id:` lines of this stream; got {raw[:40]!r}")
    return int(raw)


def one_way(sent: Collection[str], unit: str = "position") -> None:
    """?after= reads forward, ?before= back, ?latest= back from the head: one at a time, on
    a club's events and a table's alike (`sent`: the query's parameters; `unit`: what
    after and before count, a position or a table's version). 422 invalid_filter."""
    if "latest" in sent:
        also = [name for name in ("after", "before", "limit") if name in sent]
        if also:
            raise Invalid("invalid_filter", f"latest takes no {' or '.join(also)}: it is the "
                          "page's size and reads back from the head (follow on with "
                          "?after=<next>, read back with ?before=<earlier>)", field=also[0])
    if "before" in sent and "after" in sent:
        raise Invalid("invalid_filter", f"after and before cannot both be given: ?after= "
                      f"reads forward from a {unit}, ?before= back from one", field="before")


def forward_only(sent: Collection[str], then: str = "?after=<its next>") -> None:
    """A stream goes forward: ?latest= and ?before= read back a page of JSON (422); `then`
    says where to stream from after the page."""
    back = [name for name in ("latest", "before") if name in sent]
    if back:
        raise Invalid("invalid_filter", f"{back[0]} reads back a page of JSON, and a "
                      f"stream goes forward: read the page, then stream with {then}",
                      field=back[0])


class _Slots:
    """The streams this process may hold open at once."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.sem = threading.BoundedSemaphore(size)
        self.pid = os.getpid()


def _slots(config: FeedConfig) -> _Slots:
    found = current_app.extensions.get("loo_sse_slots")
    if found is None or found.pid != os.getpid():
        found = current_app.extensions["loo_sse_slots"] = _Slots(config.max_streams)
    return found


class _Body:
    """The response body: releases its slot and its hub subscription when closed."""

    def __init__(self, inner: Iterator[bytes], release: Any) -> None:
        self.inner, self._release = inner, release

    def __iter__(self) -> Iterator[bytes]:
        return self.inner

    def close(self) -> None:
        release, self._release = self._release, None
        try:
            close = getattr(self.inner, "close", None)
            if close is not None:
                close()
        finally:
            if release is not None:
                release()


def sent_limit(limit: int) -> int | None:
    """The ?limit= a client sent (already checked), None when it sent none: it bounds the
    events one stream carries, as it bounds those of a JSON page (API.md Feeds: the same
    URL); without it only LOO_SSE_MAX_SECONDS ends a stream."""
    return limit if "limit" in request.args else None


def stream(ledger: Ledger, source: Source, after: int, limit: int | None = None) -> Response:
    """The SSE response for `source` from position `after` (at most `limit` events, then
    the end), or 503 when the process holds its bound of open streams."""
    config: FeedConfig = current_app.extensions["loo_feed_config"]
    slots = _slots(config)
    if not slots.sem.acquire(blocking=False):
        return problem(503, "too_many_streams", "Service unavailable",
                       f"this server process already holds {slots.size} open event streams; "
                       "retry shortly (or follow the JSON feed with ?after=)",
                       headers={"Retry-After": "5"})
    hub = hub_for(ledger, config.poll)
    hub.subscribe()

    def release() -> None:
        hub.unsubscribe()
        slots.sem.release()

    body = _Body(follow(source, hub, after, config, encoding.dumps, limit=limit), release)
    resp = Response(body, mimetype=SSE, direct_passthrough=True)
    resp.headers["Cache-Control"] = "no-cache"
    resp.headers["X-Accel-Buffering"] = "no"  # a proxy in front must not buffer it
    return resp
