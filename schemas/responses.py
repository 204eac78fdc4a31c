"""Response shapes for the OpenAPI spec (extra fields are allowed by the contract)."""

from __future__ import annotations

from typing import Any

from marshmallow import INCLUDE, Schema, fields, post_dump


class Open(Schema):
    """Documents the contract's fields and keeps the extra ones ("extra fields are fine")."""

    class Meta:
        unknown = INCLUDE  # so the spec says additionalProperties: true

    @post_dump(pass_original=True)
    def keep_extra(self, data: dict[str, Any], original: Any, **_kw: Any) -> dict[str, Any]:
        if isinstance(original, dict):
            for key, value in original.items():
                data.setdefault(key, value)
        return data


class SeatOut(Open):
    seat = fields.Integer()
    name = fields.String()
    bot = fields.String(allow_none=True)
    score = fields.Integer()
    balance = fields.Integer()
    tricks = fields.Integer()


class TrickOut(Open):
    leader = fields.Integer()
    suit = fields.Integer()
    plays = fields.List(fields.Dict())
    winner = fields.Integer(allow_none=True)


class HandOut(Open):
    number = fields.Integer()
    phase = fields.String()
    dealer = fields.Integer()
    turn = fields.Integer(allow_none=True)
    turn_up = fields.String(allow_none=True)
    trump = fields.Integer(allow_none=True)
    decisions = fields.Dict(keys=fields.String(), values=fields.String())
    for_pool = fields.Boolean()
    pool_at_start = fields.Integer()
    hands = fields.Dict(keys=fields.String(), values=fields.Raw())
    tricks = fields.List(fields.Nested(TrickOut))
    tricks_won = fields.Dict(keys=fields.String(), values=fields.Integer())
    turn_up_taken = fields.Boolean()


class TableOut(Open):
    id = fields.String()
    variant = fields.String()
    scoring = fields.String()
    deal = fields.String()
    options = fields.Dict()
    version = fields.Integer()
    status = fields.String()
    dealer = fields.Integer(allow_none=True)
    pool = fields.Integer()
    seats = fields.List(fields.Nested(SeatOut))
    winner = fields.Integer(allow_none=True)
    hand = fields.Nested(HandOut, allow_none=True)
    legal_actions = fields.List(fields.Dict())


class SeatTokenOut(Open):
    seat = fields.Integer()
    name = fields.String()
    bot = fields.String(allow_none=True)
    token = fields.String()


class CreatedOut(Open):
    id = fields.String()
    admin_token = fields.String()
    seats = fields.List(fields.Nested(SeatTokenOut))
    version = fields.Integer()
    table = fields.Nested(TableOut)


class EventOut(Open):
    version = fields.Integer()
    position = fields.Integer()
    type = fields.String()
    hand = fields.Integer(allow_none=True)
    data = fields.Dict()
    recorded_at = fields.String()
    causation = fields.String(allow_none=True)
    hash = fields.String()
    prev_hash = fields.String()


class ActionOut(Open):
    version = fields.Integer()
    seat = fields.Integer()
    events = fields.List(fields.Nested(EventOut))
    table = fields.Nested(TableOut)


class EventsOut(Open):
    events = fields.List(fields.Nested(EventOut))
    next = fields.Integer()


class HandRecordOut(Open):
    number = fields.Integer()
    complete = fields.Boolean()
    hand = fields.Nested(HandOut)
    events = fields.List(fields.Nested(EventOut))


class ReplayOut(Open):
    step = fields.Integer()
    steps = fields.Integer()
    event = fields.Nested(EventOut, allow_none=True)
    state = fields.Dict()


class LedgerOut(Open):
    transfers = fields.List(fields.Dict())
    balances = fields.Dict(keys=fields.String(), values=fields.Integer())
    scores = fields.List(fields.Dict())
    totals = fields.Dict(keys=fields.String(), values=fields.Integer())


class AuditOut(Open):
    ok = fields.Boolean()
    events = fields.Integer()
    checks = fields.Dict(keys=fields.String(), values=fields.Raw())


class ClosedOut(Open):
    version = fields.Integer()
    leftover = fields.Integer()
    table = fields.Nested(TableOut)


class ProblemOut(Open):
    type = fields.String()
    title = fields.String()
    status = fields.Integer()
    detail = fields.String()
    code = fields.String()
    rule = fields.String()
