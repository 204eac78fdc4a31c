"""The shared write path of the API: auth -> idempotency -> command -> answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import request

from ledger import commands as c
from ledger.api import idempotency as idem
from ledger.api.auth import ledger, require_admin, viewer_for
from ledger.errors import LedgerError
from ledger.projector import Projection
from ledger.service import Outcome
from ledger.store.base import AlreadyApplied, VersionConflict
from ledger.views import Viewer, live_hand, redact, table_view


def write(table_id: str, body: dict[str, Any],
          make: Callable[[Viewer, Projection], c.Command],
          admin_only: bool = False) -> tuple[Viewer, int, Outcome | None]:
    """Run a write for the caller: the viewer, the first version it appended, and the outcome
    (None when this is a repeat of an earlier request with the same Idempotency-Key).

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
    viewer = viewer_for(p)  # tokens never change, so any version of the table will do
    if admin_only:
        require_admin(viewer)
    key = idem.key()
    request_hash = None
    if key is not None:
        request_hash = idem.fingerprint(viewer, request.get_json(silent=True))
        found = idem.check(led.store.idempotent_result(table_id, key), request_hash)
        if found is not None:
            return viewer, found.first_version, None

    def attempt(p: Projection) -> tuple[Viewer, int, Outcome | None]:
        try:
            out = led.execute(table_id, make(viewer, p), expected_version=expected,
                              idempotency_key=key, request_hash=request_hash, loaded=p)
        except AlreadyApplied as err:  # a concurrent repeat of the same request won the race
            assert request_hash is not None
            found = idem.check(err.result, request_hash)
            assert found is not None
            return viewer, found.first_version, None
        return viewer, out.first_version, out

    if optimistic:
        try:
            return attempt(p)
        except (LedgerError, VersionConflict):
            pass  # decide again on the latest state
    return attempt(led.load(table_id))


def write_response(table_id: str, viewer: Viewer, first_version: int,
                   out: Outcome | None = None) -> dict[str, Any]:
    """`version`, the events from the write on (bots' moves included), and the table."""
    led = ledger()
    if out is not None and led.cached(table_id) is out.projection:
        # Nothing followed in this process (no in-process bot moves): answer from the
        # write itself, without reading back what was just appended.
        p, stored = out.projection, out.stored
    else:
        p = led.load(table_id)
        stored = led.store.load(table_id, after_version=first_version - 1)
    live = live_hand(p.table)
    return {"version": p.version, "events": [redact(s, viewer, live) for s in stored],
            "table": table_view(table_id, p, viewer)}
