"""Request bodies (API.md); unknown fields are refused so typos never pass silently."""

from __future__ import annotations

from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate, validates_schema

from ledger.core.events import REGISTRY
from ledger.core.names import NAME_MAX, name_problem
from ledger.core.rules.bots import POLICIES
from schemas.fields import Day, QueryInteger, SeatOrLots, TileField


class Strict(Schema):
    class Meta:
        unknown = RAISE


class StrictBoolean(fields.Boolean):
    """JSON true or false only: "yes", 1 or "false" are type errors, not silently truthy."""

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> bool:
        if value is True or value is False:
            return value
        raise self.make_error("invalid", input=value)


def printable(text: str) -> None:
    """A name as ledger.core.names allows it; its length is left to the Length validator
    beside this one (marshmallow's wording of it)."""
    problem = name_problem(text[:NAME_MAX])
    if problem is not None:
        raise ValidationError(problem)


# `printable` for the spec (ECMA regex): no C0/C1 control character, one visible at least.
_NO_CONTROL = r"[^\u0000-\u001f\u007f-\u009f]"
_PRINTABLE = rf"^{_NO_CONTROL}*[^\s\u0000-\u001f\u007f-\u009f]{_NO_CONTROL}*$"


class SeatIn(Strict):
    name = fields.String(required=True, validate=[validate.Length(min=1, max=60), printable],
                         metadata={"pattern": _PRINTABLE})
    bot = fields.String(load_default=None, allow_none=True,
                        metadata={"enum": [*sorted(POLICIES), None],
                                  "description": "a bot policy (shuffled tables only), or "
                                                 "null for a person"})


class PenaltyIn(Schema):
    mode = fields.String(required=True, validate=validate.OneOf(["uncapped", "fixed", "capped"]))
    multiplier = fields.Integer(strict=True)


# The table options' bounds, declared for the OpenAPI spec. ledger.core.rules.options enforces
# them (with the RULES section and a sentence for each refusal), so the spec states what the
# server checks without a second validator that could drift from it.
_STAKE = {"minimum": 0, "maximum": 10**6, "multipleOf": 5}


def _penalty_mode(mode: str, **extra: Any) -> dict[str, Any]:
    props: dict[str, Any] = {"mode": {"type": "string", "enum": [mode]}}
    props |= {name: {"type": "integer", **bounds} for name, bounds in extra.items()}
    return {"type": "object", "properties": props, "required": ["mode", *extra],
            "additionalProperties": False}


_PENALTY = {
    "description": "rule 8.5 (/docs/rules): the loo penalty; capped: min(P, multiplier x players)",
    "oneOf": [_penalty_mode("uncapped"), _penalty_mode("fixed"),
              _penalty_mode("capped", multiplier={"minimum": 5, "maximum": 10**6,
                                                  "multipleOf": 5})],
}


class OptionsIn(Strict):
    """Table options (rule book sections 8, 9). Not both antes 0: the pool never holds a chip.

    (No Meta.description: apispec then drops additionalProperties: false from the spec.)
    """

    ante = fields.Integer(strict=True, metadata=_STAKE | {"default": 5})
    dealer_ante = fields.Integer(strict=True, metadata=_STAKE | {"default": 5})
    loo_penalty = fields.Dict(metadata=_PENALTY)
    lead_trump_threshold = fields.Integer(strict=True, metadata={"minimum": 1, "maximum": 6,
                                                                 "default": 2})
    target = fields.Integer(strict=True, metadata={"minimum": 1, "maximum": 1000,
                                                   "default": 15})
    auto_deal = StrictBoolean(metadata={"default": True})
    max_hands = fields.Integer(strict=True, metadata={
        "minimum": 1, "maximum": 100000,
        "description": "the table closes itself (table_closed, reason max_hands) once this "
                       "many hands are settled; an all-bot pool table without it gets 100"})
    hints = StrictBoolean(metadata={
        "default": False,
        "description": "seat tokens may ask GET /v1/tables/{id}/hint for the expert's move "
                       "(shuffled tables only)"})
    turn_seconds = fields.Integer(strict=True, allow_none=True, metadata={
        "minimum": 5, "maximum": 3600,
        "description": "when the seat to act lets this many seconds pass, the service appends "
                       "turn_timed_out and acts for it: drop where allowed, else its lowest "
                       "legal play; a discard drops its lowest tiles (shuffled tables only). "
                       "null, as when left out: no timer"})


class NewStreamIn(Strict):
    """A write that starts a stream (a table, a club) takes expected_version as every write
    does (API.md Phase 2); the new stream is at version 0, so any other value is a 409."""

    expected_version = fields.Integer(strict=True, load_default=None, allow_none=True,
                                      validate=validate.Range(min=0), metadata={
                                          "description": "0 (or absent): the stream is new; "
                                                         "any other value is a 409"})


class CreateTableIn(NewStreamIn):
    """A new table; the rules across fields are in the create operation's description."""

    variant = fields.String(load_default="loo", validate=validate.OneOf(["loo", "rounce"]))
    scoring = fields.String(load_default=None, allow_none=True,
                            validate=validate.OneOf(["pool", "points"]))
    seats = fields.List(fields.Nested(SeatIn), required=True,
                        validate=validate.Length(min=2, max=4))
    first_dealer = SeatOrLots(load_default=None, allow_none=False, metadata={
        "description": 'the first dealer: a seat, or "lots" (rule 2: the highest tile deals);'
                       ' if omitted, seat 0 for Loo and "lots" for Rounce (rule 9)',
        "oneOf": [{"type": "integer", "minimum": 0, "maximum": 3},
                  {"type": "string", "enum": ["lots"]}]})
    deal = fields.String(load_default="shuffled",
                         validate=validate.OneOf(["shuffled", "recorded", "results"]))
    options = fields.Nested(OptionsIn, load_default=dict)


class WriteIn(Strict):
    expected_version = fields.Integer(strict=True, load_default=None, allow_none=True,
                                      validate=validate.Range(min=0))


class VoidIn(WriteIn):
    reason = fields.String(required=True, validate=validate.Length(min=1, max=500),
                           metadata={"description": "why the hand is voided (kept in the log)"})


class SpectatorIn(WriteIn):
    label = fields.String(load_default=None, allow_none=True,
                          validate=validate.Length(max=100),
                          metadata={"description": "what the link is for, e.g. a club screen"})


class ResultIn(Strict):
    decisions = fields.Dict(keys=fields.String(), values=fields.String(), required=True)
    for_pool = StrictBoolean(load_default=False)
    tricks = fields.Dict(keys=fields.String(), values=fields.Integer(strict=True),
                         load_default=None, allow_none=True)


class StartHandIn(WriteIn):
    hands = fields.Dict(keys=fields.String(), values=fields.List(TileField()))
    turn_up = TileField()
    result = fields.Nested(ResultIn)


class ActionIn(WriteIn):
    type = fields.String(required=True, validate=validate.OneOf(["decide", "discard", "play"]))
    seat = fields.Integer(strict=True, validate=validate.Range(min=0, max=3))
    choice = fields.String(validate=validate.OneOf(["play", "miss", "drop"]))
    take_turn_up = StrictBoolean(load_default=False)
    discard = fields.List(TileField(), load_default=list)
    for_pool = StrictBoolean(load_default=False)
    drawn = fields.List(TileField(), load_default=None, allow_none=True, metadata={
        "description": "recorded tables: the tiles drawn on a miss (rule 4); left out, null "
                       "or [] when the miss takes the whole boneyard (4 players, or the last "
                       "miss), which the service then knows. The table's to_complete "
                       'offers a miss that needs them as "drawn": {"count": n}: send the n '
                       "tiles drawn"},
        error_messages={"invalid": 'a list of the tiles drawn, such as ["6-3", "5-1", ...]: '
                                   'to_complete\'s "drawn": {{"count": n}} says how many'})
    tiles = fields.List(TileField())
    tile = TileField()
    suit = fields.Integer(strict=True, load_default=None, allow_none=True,
                          validate=validate.Range(min=0, max=6))


class EventsQuery(Schema):
    after = QueryInteger(load_default=0, validate=validate.Range(min=0))
    limit = QueryInteger(load_default=100, validate=validate.Range(min=1, max=1000))
    latest = QueryInteger(validate=validate.Range(min=1, max=1000), metadata={
        "description": "the table's n most recent events (oldest of them first); `next` "
                       "follows on from them, `earlier` reads back. Without ?after=, ?before= "
                       "or ?limit= (it is the page's size); JSON only (read it, then stream "
                       "from its last event's position)"})
    before = QueryInteger(validate=validate.Range(min=1), metadata={
        "description": "the table's last ?limit= events before this version (oldest of them "
                       "first): a page's `earlier`, to read back. Not with ?after=; JSON only "
                       "(a stream goes forward)"})


class ReplayQuery(Schema):
    """`step`: an integer from 0 to the hand's `steps` (checked against the hand); default 0."""

    step = QueryInteger(load_default=0, validate=validate.Range(min=0))


# ---- clubs (API.md Phase 2) ---------------------------------------------------------------
_NAME = dict(validate=[validate.Length(min=1, max=60), printable],
             metadata={"pattern": _PRINTABLE})


class ClubIn(NewStreamIn):
    name = fields.String(required=True, **_NAME)


class ClubTokenIn(WriteIn):
    role = fields.String(required=True, validate=validate.OneOf(["owner", "scorer", "viewer"]))
    label = fields.String(load_default=None, allow_none=True, validate=validate.Length(max=100))


class WebhookIn(WriteIn):
    url = fields.String(required=True, validate=validate.Length(min=1, max=2000), metadata={
        "description": "http(s) URL the events are POSTed to; one that resolves to a "
                       "loopback, private or link-local address is refused (422)"})
    events = fields.List(
        fields.String(validate=validate.Length(min=1, max=60),
                      metadata={"enum": ["*", *sorted(REGISTRY)]}),
        required=True, validate=validate.Length(min=1, max=100), metadata={
            "uniqueItems": True,
            "description": 'event types to deliver, each once, or ["*"] (alone) for all; '
                           "an unknown type, or one named twice, is a 422 `invalid_events` "
                           "(its `valid` lists the types)"})


class MemberIn(WriteIn):
    name = fields.String(required=True, **_NAME)
    external_id = fields.String(load_default=None, allow_none=True,
                                validate=validate.Length(min=1, max=100),
                                metadata={"description": "the club's own membership number; "
                                                         "unique in the club whatever its "
                                                         "case (409), kept as given"})


class MemberPatchIn(WriteIn):
    name = fields.String(required=True, **_NAME)


class SeasonIn(WriteIn):
    name = fields.String(required=True, **_NAME)
    starts_on = Day(required=True)
    ends_on = Day(load_default=None, allow_none=True)


class ClubSeatIn(Strict):
    """A seat at a club table: a member (whose name it takes) or a plain name, maybe a bot."""

    name = fields.String(load_default=None, **_NAME)
    member = fields.String(load_default=None, allow_none=True)
    bot = fields.String(load_default=None, allow_none=True,
                        metadata={"enum": [*sorted(POLICIES), None]})

    @validates_schema
    def _named(self, data: dict[str, Any], **_: Any) -> None:
        # Named at the seat's `name` (seats.N.name): the field to fill in when there is no
        # member (a path naming "seats" again, seats.N.seats, named nothing a seat has).
        if data.get("name") is None and data.get("member") is None:
            raise ValidationError('a seat needs "member" (a member id) or "name"', "name")


class ClubTableIn(CreateTableIn):
    expected_version = fields.Integer(strict=True, load_default=None, allow_none=True,
                                      validate=validate.Range(min=0),
                                      metadata={"description": "the club's version"})
    seats = fields.List(fields.Nested(ClubSeatIn), required=True,
                        validate=validate.Length(min=2, max=4))
    season = fields.String(load_default=None, allow_none=True,
                           metadata={"description": "an open season of this club"})
