"""Hands and actions (API.md "Hands", "Actions")."""

from __future__ import annotations

from typing import Any

from flask.views import MethodView

from ledger.api.auth import acting_seat, authenticate, ledger, viewer_for
from ledger.api.blueprint import Blueprint
from ledger.api.context import current_request
from ledger.api.writes import BODY_PARSER, write, write_response
from ledger.app.hints import hint
from ledger.app.projector import Projection
from ledger.app.views import Viewer
from ledger.core import commands as c
from ledger.core.errors import Forbidden, Invalid
from ledger.core.rules.actions import Action, Decide, Discard, Play
from schemas.requests import ActionIn, StartHandIn, VoidIn
from schemas.responses import ActionOut, HintOut

blp = Blueprint("play", __name__, url_prefix="/v1/tables",
                description="Start hands and act: decide, discard, play.")
blp.ARGUMENTS_PARSER = BODY_PARSER  # before the routes below: their decorators use it


@blp.before_request
def who_calls() -> None:
    """404 / 401 / 403 come before anything about the body; starting a hand is the admin's."""
    req = current_request()  # one proxy lookup (ledger/api/context.py)
    table_id = (req.view_args or {}).get("table_id")
    if req.method == "POST" and table_id is not None:
        path = req.path.rstrip("/")
        authenticate(table_id, admin_only=path.endswith(("/hands", "/void")))

FIELDS = {
    "decide": {"choice", "take_turn_up", "discard", "for_pool", "drawn"},
    "discard": {"tiles"},
    "play": {"tile", "suit"},
}
COMMON = {"type", "seat", "expected_version"}


def to_action(body: dict[str, Any], seat: int) -> Action:
    """The action a request body names; fields of another action type are refused."""
    kind = body["type"]
    given = {k for k, v in body.items() if v not in (None, False, [])} - COMMON
    stray = sorted(given - FIELDS[kind])
    if stray:
        raise Invalid("invalid_action", f"{', '.join(stray)} do not belong to a {kind} action",
                      field=stray[0])
    if kind == "decide":
        if "choice" not in body:
            raise Invalid("invalid_action", 'a decision needs "choice": play, miss or drop',
                          field="choice")
        # "drawn": [] names no tile, as "discard": [] does: the same as leaving it out (§4).
        drawn = body.get("drawn")
        return Decide(seat, body["choice"], body["take_turn_up"], tuple(body["discard"]),
                      body["for_pool"], tuple(drawn) if drawn else None)
    if kind == "discard":
        if "tiles" not in body:
            raise Invalid("invalid_action", 'a discard needs "tiles"', field="tiles")
        return Discard(seat, tuple(body["tiles"]))
    if "tile" not in body:
        raise Invalid("invalid_action", 'a play needs "tile"', field="tile")
    return Play(seat, body["tile"], body.get("suit"))


def _start(body: dict[str, Any], p: Projection) -> c.StartHand:
    hands = body.get("hands")
    parsed = None
    if hands is not None:
        n = p.table.players
        if sorted(hands) != [str(s) for s in range(n)]:
            raise Invalid("invalid_deal", f"hands must name every seat 0..{n - 1}",
                          field="hands", rule="3.2")
        parsed = tuple(tuple(hands[str(s)]) for s in range(n))
    return c.StartHand(hands=parsed, turn_up=body.get("turn_up"), result=body.get("result"))


@blp.route("/<table_id>/hands")
class Hands(MethodView):
    @blp.arguments(StartHandIn)
    @blp.response(200, ActionOut)
    def post(self, body: dict[str, Any], table_id: str) -> Any:
        """Start the next hand (admin): empty body, the recorded deal, or the result. With
        `auto_deal` the service deals each hand itself, the first at the table's creation:
        a start that finds the hand dealt and nobody acted in it yet answers 200 with that
        hand, appending nothing (`events` is empty)."""
        viewer, written = write(table_id, body, lambda v, p: _start(body, p), admin_only=True)
        return write_response(table_id, viewer, written)


@blp.route("/<table_id>/actions")
class Actions(MethodView):
    @blp.arguments(ActionIn)
    @blp.response(200, ActionOut)
    def post(self, body: dict[str, Any], table_id: str) -> Any:
        """Act for your seat (admin: for "seat": n); illegal moves get 422 with the rule."""
        seat_box: list[int] = []

        def make(v: Viewer, p: Projection) -> c.Command:
            seat = acting_seat(v, body.get("seat"))
            if seat >= p.table.players:
                raise Invalid("invalid_seat", f"there is no seat {seat} at this table",
                              field="seat")
            seat_box.append(seat)
            return c.Act(to_action(body, seat))

        viewer, written = write(table_id, body, make)
        out = write_response(table_id, viewer, written)
        if viewer.admin:
            out["seat"] = seat_box[0] if seat_box else body.get("seat")
        return out


@blp.route("/<table_id>/hint")
class Hint(MethodView):
    @blp.response(200, HintOut)
    @blp.alt_response(403, description="hints_off: the table was created without "
                      "options.hints; read_only_token: a spectator token; "
                      "seat_token_required: hints are for a seat (the admin token sees "
                      "every hand)")
    @blp.alt_response(422, description="not_your_turn: the seat is not to act now")
    def get(self, table_id: str) -> Any:
        """The expert's action for your seat now (seat tokens, options.hints: true): an
        action body as POST /actions takes it, and a short `why`. The expert plays from the
        seat's view only: the hint names no tile the seat cannot see."""
        p = ledger().load(table_id)
        viewer = viewer_for(p)
        if viewer.spectator:
            raise Forbidden("read_only_token", "a spectator token only reads this table")
        if viewer.admin or viewer.seat is None:  # a token not allowed to do that: 403
            raise Forbidden("seat_token_required", "hints are for a seat: ask with that seat's "
                          "token (the admin token sees every hand)")
        return hint(p, viewer.seat, table_id)


@blp.route("/<table_id>/hands/<int:number>/void")
class VoidHandResource(MethodView):
    @blp.arguments(VoidIn)
    @blp.response(200, ActionOut)
    def post(self, body: dict[str, Any], table_id: str, number: int) -> Any:
        """Void the latest settled hand (admin): hand_voided and one compensating transfer
        (reason void) or score per original one, so balances, pool and scores are as before
        the hand; a game that hand won is un-won. The hand stays in the record, marked
        voided. Only the latest settled hand of a table that has not started another (422
        naming the one that may be voided); to correct an older hand, void back to it. The
        next hand is dealt by the voided hand's dealer; a results hand may be entered again.
        At a table closed after that hand (by its admin or max_hands) the void undoes the
        close too (`reopened`): the table plays on, as before the hand."""
        viewer, written = write(table_id, body, lambda v, p: c.VoidHand(number, body["reason"]),
                                admin_only=True)
        return write_response(table_id, viewer, written)
