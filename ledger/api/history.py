"""Hand histories (API.md "Hand history (loo-hh 1.0)"): one file per hand, NDJSON per table."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from flask import Response, stream_with_context
from flask.views import MethodView

from ledger.api import lists
from ledger.api.auth import ledger, viewer_for
from ledger.api.blueprint import Blueprint
from ledger.app.history import (
    close_part,
    hand_document,
    hand_events,
    heads,
    own_run_length,
    table_history_ndjson,
)
from ledger.app.projector import project
from ledger.core.errors import Conflict, NotFound
from schemas.responses import HandHistoryOut

NDJSON = "application/x-ndjson"

blp = Blueprint("history", __name__, url_prefix="/v1/tables",
                description="Hand histories in the open loo-hh 1.0 format (complete hands).")


@blp.route("/<table_id>/hands/<int:number>/history")
class HandHistory(MethodView):
    @blp.response(200, HandHistoryOut)
    @blp.alt_response(409, description="The hand is not complete and settled yet")
    def get(self, table_id: str, number: int) -> Any:
        """One complete hand as a loo-hh 1.0 file (409 while it is live)."""
        led = ledger()
        p = led.load(table_id)
        viewer_for(p)
        if p.table.hand is None or not 1 <= number <= p.table.hand.number:
            raise NotFound("hand_not_found", f"hand {number} has not been played at this table")
        first = p.hand_starts[number - 1]
        before = project(led.events(table_id, up_to_version=first - 1)).table
        later = led.events(table_id, after_version=first - 1, up_to_version=p.version)
        mine = hand_events(later, number)
        if not any(s.type == "hand_settled" for s in mine):
            if p.table.status == "closed":  # closed mid-hand: abandoned, never completed
                raise Conflict("hand_abandoned", f"hand {number} was abandoned when the table "
                               "closed: only complete hands have a history (its record and "
                               "replay are open)")
            raise Conflict("hand_live", f"hand {number} is still being played: its history "
                           "is published once it is complete and settled")
        settled, voided = heads(mine)
        found = {cp["version"]: cp for cp in led.checkpoints(table_id, p.version)}
        # The last complete hand of a closed table carries the close (and its checkpoint).
        close = close_part(table_id, later[own_run_length(later, number):], found) \
            if p.table.status == "closed" else None
        return hand_document(table_id, before, mine, found.get(settled),
                             found.get(voided) if voided is not None else None, close)


@blp.route("/<table_id>/history")
class TableHistory(MethodView):
    @blp.response(200, {"type": "string", "description": "NDJSON: one loo-hh 1.0 file a line"},
                  description="One loo-hh 1.0 file per line, every complete hand in order, "
                  "streamed", content_type=NDJSON)
    def get(self, table_id: str) -> Any:
        """Every complete hand of the table as NDJSON (one loo-hh file a line), streamed."""
        lists.query({}, lists.WHOLE)
        led = ledger()
        p = led.load(table_id)
        viewer_for(p)
        up_to = p.version
        checkpoints = led.checkpoints(table_id, up_to)

        return ndjson(table_history_ndjson(
            table_id, lambda a, b: led.raw_events(table_id, a, b), up_to, checkpoints,
            voided=p.table.voided))


def ndjson(lines: Iterator[bytes]) -> Response:
    """A streamed NDJSON answer whose first line is read before the status goes out: a store
    that fails at the start is a 503 problem, not a 200 with an empty or cut body. (A
    failure after that ends the stream early; the status is sent by then.)"""
    first = next(lines, None)

    def body() -> Iterator[bytes]:
        if first is not None:
            yield first
        yield from lines

    return Response(stream_with_context(body()), mimetype=NDJSON)
