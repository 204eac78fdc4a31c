"""Reading the record: hands, replay, events, ledger, audit (API.md "Hands", "Audit")."""

from __future__ import annotations

from typing import Any

from flask import request
from flask.views import MethodView

from ledger.api import feeds, lists
from ledger.api.auth import ledger, require_admin, viewer_for
from ledger.api.blueprint import Blueprint
from ledger.app.audit import audit
from ledger.app.feed import TableSource, table_events
from ledger.app.projector import project
from ledger.app.service import token_hash
from ledger.app.views import Viewer, hand_view, live_hand, replay_state
from ledger.core.errors import Forbidden, Invalid, NotFound
from schemas.requests import EventsQuery, ReplayQuery
from schemas.responses import (
    AuditOut,
    CheckpointsOut,
    EventsOut,
    HandRecordOut,
    LedgerOut,
    ReplayOut,
)

blp = Blueprint("records", __name__, url_prefix="/v1/tables",
                description="The record: hands, step-by-step replay, events, ledger, audit.")


@blp.before_request
def who_reads() -> None:
    """404 / 401 / 403 come before anything about the query (a bad `after` is a 422)."""
    table_id = (request.view_args or {}).get("table_id")
    if table_id is not None:
        led = ledger()
        viewer = viewer_for(led.cached(table_id) or led.load(table_id))  # tokens never change
        if request.endpoint == "records.Audit":
            require_admin(viewer)


def _hand_bounds(table_id: str, number: int) -> tuple[Any, list[Any], list[Any]]:
    """(projection, events before hand n, events of hand n); 404 for a hand not played."""
    led = ledger()
    p = led.load(table_id)
    if p.table.hand is None or not 1 <= number <= p.table.hand.number:
        raise NotFound("hand_not_found", f"hand {number} has not been played at this table")
    stored = led.events(table_id, up_to_version=p.version)  # the state `p` was folded from
    first = p.hand_starts[number - 1]
    before = [s for s in stored if s.version < first]
    mine = [s for s in stored if s.version >= first and s.hand == number]
    return p, before, mine


@blp.route("/<table_id>/hands/<int:number>")
class HandRecord(MethodView):
    @blp.response(200, HandRecordOut)
    def get(self, table_id: str, number: int) -> Any:
        """That hand's record: every tile once complete, redacted for seats while live."""
        p, before, mine = _hand_bounds(table_id, number)
        viewer = viewer_for(p)
        state = project(before + mine).table
        live = live_hand(p)
        return {"number": number, "complete": state.hand is not None and not state.live,
                "settled": state.settled,
                "hand": hand_view(state, viewer, full=live is None or live.number != number),
                "events": table_events(ledger(), table_id, mine, viewer, live=live)}


@blp.route("/<table_id>/hands/<int:number>/replay")
class Replay(MethodView):
    @blp.arguments(ReplayQuery, location="query")
    @blp.response(200, ReplayOut)
    def get(self, query: dict[str, Any], table_id: str, number: int) -> Any:
        """Full-information state after the first `step` events of hand n."""
        p, before, mine = _hand_bounds(table_id, number)
        viewer = viewer_for(p)
        live = live_hand(p)
        if not viewer.admin and live is not None and live.number == number:
            raise Forbidden("hand_live", "replay opens once the hand is complete")
        step = query["step"]
        if step > len(mine):  # API.md "Hands": out of range is a 422, never clamped
            raise Invalid("step_out_of_range", f"step must be an integer from 0 to "
                          f"{len(mine)} (the events of hand {number}); got {step}",
                          field="step", steps=len(mine))
        state = project(before + mine[:step]).table
        admin = Viewer(admin=True)
        # The live hand's seed stays secret until revealed, here as in /events.
        return {"step": step, "steps": len(mine), "voided": number in p.table.voided,
                "event": table_events(ledger(), table_id, [mine[step - 1]], admin,
                                      live=live)[0] if step else None,
                "state": replay_state(state, number)}


@blp.route("/<table_id>/events")
class Events(MethodView):
    @blp.arguments(EventsQuery, location="query")
    @blp.response(200, EventsOut)
    def get(self, query: dict[str, Any], table_id: str) -> Any:
        """The table's events after version `after`, hidden tiles removed for seats. With
        Accept: text/event-stream: Server-Sent Events from position `after` (or the
        Last-Event-ID header), following the table live (see /docs/http, Feeds).

        ?latest=n reads from the other end: the table's n most recent events, in the same
        order (oldest first) and redacted the same way, with `next` the version read up to
        (the table's last: ?after= it follows on) and `earlier` the version to ask ?before=
        for the events before them (null: they begin with the table's first).
        ?before=<version>&limit=n is the page before, answered the same way."""
        feeds.one_way(request.args, unit="version")
        led = ledger()
        p = led.load(table_id)
        viewer = viewer_for(p)
        if feeds.wants_sse():
            # The stream counts positions, the page versions: it follows on from the
            # position of the page's last event.
            feeds.forward_only(query, then="?after=<the position of its last event> (or "
                               "Last-Event-ID)")
            source = TableSource(led, table_id, viewer)
            token = request.headers.get("Authorization", "").partition(" ")[2].strip()
            if not _own_token(p.table.tokens or {}, token):
                # A spectator's or a club's token (a club owner or scorer reads as the admin):
                # revocable, so the stream ends when it is revoked.
                from ledger.api.clubs import clubs

                the_clubs = clubs()  # the generator runs outside the app context
                source.still_allowed = lambda: _still_opens(  # type: ignore[attr-defined]
                    led, the_clubs, table_id, token, viewer)
            return feeds.stream(led, source, feeds.start_position(query["after"]),
                                feeds.sent_limit(query["limit"]))
        if "latest" in query or "before" in query:
            # Up to the last version of the state `p`, as forward pages read.
            up_to = min(query.get("before", p.version + 1) - 1, p.version)
            first = max(0, up_to - query.get("latest", query["limit"]))
            stored = led.events(table_id, after_version=first, up_to_version=up_to) \
                if up_to > 0 else []
            return {"events": table_events(led, table_id, stored, viewer, live=live_hand(p)),
                    "next": up_to, "earlier": first + 1 if first > 0 else None}
        after, limit = query["after"], query["limit"]
        # Only events of the state `p` (redaction follows it, and a hand dealt since must not
        # pass as one already complete); `after` past the end reads nothing (and an integer
        # beyond the database's is no reason for a 500).
        stored = led.events(table_id, after_version=after,
                            up_to_version=min(after + limit, p.version)) \
            if after < p.version else []
        return {"events": table_events(led, table_id, stored, viewer, live=live_hand(p)),
                "next": stored[-1].version if stored else after}


def _own_token(tokens: dict[str, Any], token: str) -> bool:
    """The table's admin or one of its seat tokens (never revoked)."""
    digest = token_hash(token)
    return digest == tokens.get("admin") or digest in tokens.get("seats", [])


def _still_opens(led: Any, the_clubs: Any, table_id: str, token: str, viewer: Viewer) -> bool:
    """A spectator's token, or a club's token, still opens the table as `viewer` saw it."""
    t = led.load(table_id).table
    digest = token_hash(token)
    if any(h == digest for _, h in t.spectators):
        return True
    if t.club is None:
        return False
    role = the_clubs.role_of(the_clubs.load(t.club).club, token)
    return role in ("owner", "scorer") if viewer.admin else role is not None


# GET .../ledger pages only when asked: its answer without parameters is API.md's whole
# {"transfers", "balances"} (points: "scores", "totals"), as it always was.
LEDGER_PARAMS = [
    {"in": "query", "name": "hand", "required": False,
     "schema": {"type": "integer", "minimum": 1, "maximum": 10**18 - 1},
     "description": "only this hand's transfers (points games: scores): its stakes, its "
                    "settlement and a void of it; balances and totals stay the whole "
                    "table's. A hand not played at this table is a 422"},
    {"in": "query", "name": "limit", "required": False,
     "schema": {"type": "integer", "minimum": 1, "maximum": lists.MAX_LIMIT},
     "description": "page the answer: at most this many transfers (points games: scores), "
                    "oldest first, and `next`. Without limit and cursor the answer is whole; "
                    f"with a cursor alone, pages of {lists.DEFAULT_LIMIT}"},
    {"in": "query", "name": "cursor", "required": False, "schema": {"type": "string"},
     "description": "opaque: the `next` of the page before (with the same hand)"},
]


def _hand(raw: str) -> int:
    if not lists.digits(raw) or len(raw) > 18 or int(raw) < 1:
        raise ValueError("a hand number: a whole number >= 1")
    return int(raw)


@blp.route("/<table_id>/ledger")
class LedgerResource(MethodView):
    @blp.doc(parameters=LEDGER_PARAMS)
    @blp.response(200, LedgerOut)
    def get(self, table_id: str) -> Any:
        """Every chip transfer (pool games) or every points delta (points games), with the
        balances (totals). ?hand= gives one hand's; ?limit= and ?cursor= page them as every
        list is paged (/docs/http, Lists): `items` the page's transfers (scores), which are
        also its `transfers` (`scores`), and `next` the cursor of the next page (null on the
        last); the balances (totals) are always the whole table's."""
        f, limit, offset = lists.query({"hand": _hand})
        led = ledger()
        p = led.load(table_id)
        viewer_for(p)
        book = led.book(table_id, p, f.get("hand"))  # totals are of `p`
        if "limit" not in request.args and "cursor" not in request.args:
            return book
        key = "scores" if p.table.opts.scoring == "points" else "transfers"
        page = lists.page(book[key], limit, offset)  # (entries only append: offsets hold)
        return book | {key: page["items"]} | page


@blp.route("/<table_id>/audit")
class Audit(MethodView):
    @blp.response(200, AuditOut)
    def get(self, table_id: str) -> Any:
        """Admin: verify the hash chain, replay, chips, legality and the fair deals."""
        led = ledger()
        p = led.load(table_id)
        require_admin(viewer_for(p))
        return audit(led.events(table_id, up_to_version=p.version), p,
                     led.checkpoints(table_id), led.signer.keyring())


@blp.route("/<table_id>/checkpoints")
class Checkpoints(MethodView):
    @blp.doc(parameters=lists.params())
    @blp.response(200, CheckpointsOut)
    def get(self, table_id: str) -> Any:
        """The table's signed checkpoints, oldest first: one after every settled hand, every
        void (its hand_voided) and the table's close (table_closed)."""
        _, limit, offset = lists.query({})
        led = ledger()
        viewer_for(led.cached(table_id) or led.load(table_id))
        return lists.page(led.checkpoints(table_id), limit, offset)
