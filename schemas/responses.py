"""Response shapes for the OpenAPI spec (extra fields are allowed by the contract)."""

from __future__ import annotations

from marshmallow import Schema, fields


class SeatOut(Schema):
    seat = fields.Integer()
    name = fields.String()
    bot = fields.String(allow_none=True)
    score = fields.Integer()
    balance = fields.Integer()
    tricks = fields.Integer()


class TrickOut(Schema):
    leader = fields.Integer()
    suit = fields.Integer()
    plays = fields.List(fields.Dict())
    winner = fields.Integer(allow_none=True)


class HandOut(Schema):
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


class TableOut(Schema):
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


class SeatTokenOut(Schema):
    seat = fields.Integer()
    name = fields.String()
    bot = fields.String(allow_none=True)
    token = fields.String()


class CreatedOut(Schema):
    id = fields.String()
    admin_token = fields.String()
    seats = fields.List(fields.Nested(SeatTokenOut))
    version = fields.Integer()
    table = fields.Nested(TableOut)


class EventOut(Schema):
    version = fields.Integer()
    position = fields.Integer()
    type = fields.String()
    hand = fields.Integer(allow_none=True)
    data = fields.Dict()
    recorded_at = fields.String()
    causation = fields.String(allow_none=True)
    hash = fields.String()
    prev_hash = fields.String()


class ActionOut(Schema):
    version = fields.Integer()
    seat = fields.Integer()
    events = fields.List(fields.Nested(EventOut))
    table = fields.Nested(TableOut)


class EventsOut(Schema):
    events = fields.List(fields.Nested(EventOut))
    next = fields.Integer()


class HandRecordOut(Schema):
    number = fields.Integer()
    complete = fields.Boolean()
    hand = fields.Nested(HandOut)
    events = fields.List(fields.Nested(EventOut))


class ReplayOut(Schema):
    step = fields.Integer()
    steps = fields.Integer()
    event = fields.Nested(EventOut, allow_none=True)
    state = fields.Dict()


class LedgerOut(Schema):
    transfers = fields.List(fields.Dict())
    balances = fields.Dict(keys=fields.String(), values=fields.Integer())
    scores = fields.List(fields.Dict())
    totals = fields.Dict(keys=fields.String(), values=fields.Integer())


class AuditOut(Schema):
    ok = fields.Boolean()
    events = fields.Integer()
    checks = fields.Dict(keys=fields.String(), values=fields.Raw())


class ClosedOut(Schema):
    version = fields.Integer()
    leftover = fields.Integer()
    table = fields.Nested(TableOut)


class ProblemOut(Schema):
    type = fields.String()
    title = fields.String()
    status = fields.Integer()
    detail = fields.String()
    code = fields.String()
    rule = fields.String()
