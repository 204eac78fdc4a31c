"""The shared write path of the API: auth -> idempotency -> command -> answer."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from flask import request
from webargs import core
from webargs.flaskparser import FlaskParser, is_json_request

from ledger.api import idempotency as idem
from ledger.api.auth import authenticated, ledger, require_admin, viewer_for
from ledger.api.context import current_request
from ledger.app.contract import AlreadyApplied, IdempotentResult, VersionConflict
from ledger.app.projector import Projection
from ledger.app.service import Outcome
from ledger.app.views import Viewer, live_hand, redact, table_view
from ledger.core import commands as c
from ledger.core.errors import Invalid, LedgerError

Written = Outcome | IdempotentResult  # what a write appended, or the earlier run it repeats
LATEST_RETRIES = 4  # writes without expected_version: fresh decisions after a lost race


def _not_json(name: str) -> Any:
    """NaN, Infinity and -Infinity: Python's json module reads them, JSON (RFC 8259) has no
    such numbers, so a body holding one is malformed JSON, a 400 like any other."""
    raise ValueError(f"{name} is not a JSON number")


class JsonBodyParser(FlaskParser):
    """webargs' parser; a body Python's json module cannot take (nested too deep, a number
    of thousands of digits) or that is not JSON though Python reads it (NaN, Infinity) is
    malformed JSON too, a 400, not a server error nor a validation error."""

    def get_default_request(self) -> Any:
        """The request itself, not Flask's proxy of it (ledger/api/context.py): webargs
        reads the body and its type through what this returns."""
        return current_request()

    def _raw_load_json(self, req: Any) -> Any:
        if not is_json_request(req):
            return core.missing
        try:
            text = req.get_data(cache=True).decode()
        except UnicodeDecodeError as err:
            raise json.JSONDecodeError(f"not UTF-8: {err.reason}", "<body>", err.start) from err
        try:
            return json.loads(text, parse_constant=_not_json)
        except json.JSONDecodeError:
            raise
        except (RecursionError, ValueError) as err:
            raise json.JSONDecodeError(f"unreadable JSON: {err}", "<body>", 0) from err

    def parse(self, *args: Any, **kwargs: Any) -> Any:
        """The body as its schema loaded it (a field's own checks first: a name's is a
        validation_error), then every string of it checked to be storable."""
        data = super().parse(*args, **kwargs)
        # A NUL or a lone surrogate reaches a string parsed from JSON only through a \\u
        # escape (JSON refuses raw control characters, and no UTF-8 encodes a surrogate):
        # a body without one has nothing to find, and is not walked.
        if kwargs.get("location") not in (None, "json") \
                or b"\\u" in current_request().get_data(cache=True):
            storable(data)
        return data


_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable(data: Any, where: str = "") -> None:
    """Every string of a body can be kept: JSON may carry a NUL ("\\u0000", which PostgreSQL
    cannot store) or a lone surrogate ("\\ud800", which is no text UTF-8 can encode); either,
    in a label, a reason, an external_id or a URL, was a 500. Refused as a 422 naming it.
    (A loop, not recursion: a body nested as deep as the JSON parser allows is walked too.)"""
    todo: list[tuple[Any, str]] = [(data, where)]
    while todo:
        item, at = todo.pop()
        if isinstance(item, str):
            if _UNSTORABLE.search(item):
                named = at.encode("ascii", "backslashreplace").decode() or "the body"
                raise Invalid("invalid_text", f"{named}: text may not hold a NUL character or "
                              "a lone surrogate (\\u0000, \\ud800-\\udfff)", field=named)
        elif isinstance(item, dict):
            for k, v in item.items():
                inner = f"{at}.{k}" if at else str(k)
                todo += ((v, inner), (k, inner))
        elif isinstance(item, list):
            todo += ((v, f"{at}[{i}]") for i, v in enumerate(item))


BODY_PARSER = JsonBodyParser()


def write(table_id: str, body: dict[str, Any],
          make: Callable[[Viewer, Projection], c.Command],
          admin_only: bool = False) -> tuple[Viewer, Written]:
    """Run a write for the caller: the viewer, and the outcome (or, when this repeats an
    earlier request with the same Idempotency-Key, that request's idempotent result).

    The command is first decided on this process's cached state of the table when that
    can stand for the latest (no expected_version, or the cached version is the one
    expected): the append's version check then proves it was the latest. Anything that
    attempt refuses (a stale cache, a rule error) is decided again on the table read
    fresh from the store, so a client never hears of a stale cache.
    """
    led = ledger()
    expected = body.get("expected_version")
    cached = led.cached(table_id)
    optimistic = cached is not None and expected in (None, cached.version)
    p = cached if cached is not None and optimistic else led.load(table_id)
    viewer = authenticated()
    if viewer is None:  # tokens never change, so any version of the table will do
        viewer = viewer_for(p)
        if admin_only:
            require_admin(viewer)
    key = idem.scoped()
    request_hash = None if key is None else idem.fingerprint(viewer,
                                                             request.get_json(silent=True))

    def attempt(p: Projection) -> tuple[Viewer, Written]:
        # The ledger decides whether the key was used (a repeat raises AlreadyApplied before
        # anything is decided; another body under it, IdempotencyConflict), and the store's
        # append enforces it against a concurrent repeat.
        try:
            out = led.execute(table_id, make(viewer, p), expected_version=expected,
                              idempotency_key=key, request_hash=request_hash, loaded=p)
        except AlreadyApplied as err:  # an earlier (or concurrent) run of this request
            return viewer, err.result
        return viewer, out

    if optimistic:
        try:
            return attempt(p)
        except (LedgerError, VersionConflict):
            pass  # decide again on the latest state
    if expected is None:
        # The client asked for "now", not for a version: a concurrent writer (a bot moving
        # in another process) that appended first only means deciding again on the newer
        # table. A refused append applied nothing, so nothing can apply twice. Bounded.
        for _ in range(LATEST_RETRIES):
            try:
                return attempt(led.load(table_id))
            except VersionConflict:
                continue
    return attempt(led.load(table_id))


def write_response(table_id: str, viewer: Viewer, written: Written) -> dict[str, Any]:
    """`version`, the events from the write on (bots' moves included), and the table."""
    led = ledger()
    if isinstance(written, IdempotentResult):
        p, stored = led.first_answer(table_id, written)
    elif led.cached(table_id) is written.projection or led.queued:
        # Nothing followed in this process (no in-process bot moves), or what follows is a
        # worker's to append (RQ): answer from the write itself, without reading back what
        # was just appended, nor a worker's moves that happen to have landed meanwhile.
        p, stored = written.projection, written.stored
    else:
        p = led.load(table_id)
        # Up to the version loaded: an event written meanwhile (a hand dealt by another
        # process) would be redacted against the wrong hand.
        stored = led.events(table_id, after_version=written.first_version - 1,
                            up_to_version=p.version)
    live = live_hand(p)
    return {"version": p.version, "events": [redact(s, viewer, live) for s in stored],
            "table": table_view(table_id, p, viewer)}
