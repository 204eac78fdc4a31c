"""The shared write path of the API: auth -> idempotency -> command -> answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import request

from ledger import commands as c
from ledger.api import idempotency as idem
from ledger.api.auth import ledger, require_admin, viewer_for
from ledger.projector import Projection
from ledger.store.base import AlreadyApplied
from ledger.views import Viewer, live_hand, redact, table_view


def write(table_id: str, body: dict[str, Any],
          make: Callable[[Viewer, Projection], c.Command],
          admin_only: bool = False) -> tuple[Viewer, int]:
    """Run a write for the caller; returns the viewer and the first version it appended."""
    led = ledger()
    p = led.load(table_id)
    viewer = viewer_for(p)
    if admin_only:
        require_admin(viewer)
    key = idem.key()
    request_hash = None
    if key is not None:
        request_hash = idem.fingerprint(viewer, request.get_json(silent=True))
        found = idem.check(led.store.idempotent_result(table_id, key), request_hash)
        if found is not None:
            return viewer, found.first_version
    cmd = make(viewer, p)
    try:
        out = led.execute(table_id, cmd, expected_version=body.get("expected_version"),
                          idempotency_key=key, request_hash=request_hash)
    except AlreadyApplied as err:  # a concurrent repeat of the same request won the race
        assert request_hash is not None
        found = idem.check(err.result, request_hash)
        assert found is not None
        return viewer, found.first_version
    return viewer, out.first_version


def write_response(table_id: str, viewer: Viewer, first_version: int) -> dict[str, Any]:
    """`version`, the events from the write on (bots' moves included), and the table."""
    led = ledger()
    p = led.load(table_id)
    stored = led.store.load(table_id, after_version=first_version - 1)
    live = live_hand(p.table)
    return {"version": p.version, "events": [redact(s, viewer, live) for s in stored],
            "table": table_view(table_id, p, viewer)}
