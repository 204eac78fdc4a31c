"""Request bodies (API.md); unknown fields are refused so typos never pass silently."""

from __future__ import annotations

import unicodedata
from typing import Any

from marshmallow import RAISE, Schema, ValidationError, fields, validate

from schemas.fields import SeatOrLots, TileField


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
    """A name is shown to people and kept in the ledger: no control characters (a NUL cannot
    even be stored in PostgreSQL), no lone surrogates (not encodable as UTF-8), not blank."""
    if not text.strip():
        raise ValidationError("a name cannot be blank")
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in text):
        raise ValidationError("a name is printable text: no control characters or "
                              "lone surrogates")


class SeatIn(Strict):
    name = fields.String(required=True, validate=[validate.Length(min=1, max=60), printable])
    bot = fields.String(load_default=None, allow_none=True)


class PenaltyIn(Schema):
    mode = fields.String(required=True, validate=validate.OneOf(["uncapped", "fixed", "capped"]))
    multiplier = fields.Integer(strict=True)


class OptionsIn(Strict):
    ante = fields.Integer(strict=True)
    dealer_ante = fields.Integer(strict=True)
    loo_penalty = fields.Dict()
    lead_trump_threshold = fields.Integer(strict=True)
    target = fields.Integer(strict=True)
    auto_deal = StrictBoolean()


class CreateTableIn(Strict):
    variant = fields.String(load_default="loo", validate=validate.OneOf(["loo", "rounce"]))
    scoring = fields.String(load_default=None, allow_none=True,
                            validate=validate.OneOf(["pool", "points"]))
    seats = fields.List(fields.Nested(SeatIn), required=True,
                        validate=validate.Length(min=2, max=4))
    first_dealer = SeatOrLots(load_default=0, metadata={"description": 'a seat or "lots"'})
    deal = fields.String(load_default="shuffled",
                         validate=validate.OneOf(["shuffled", "recorded", "results"]))
    options = fields.Nested(OptionsIn, load_default=dict)


class WriteIn(Strict):
    expected_version = fields.Integer(strict=True, load_default=None, allow_none=True,
                                      validate=validate.Range(min=0))


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
    drawn = fields.List(TileField(), load_default=None, allow_none=True)
    tiles = fields.List(TileField())
    tile = TileField()
    suit = fields.Integer(strict=True, load_default=None, allow_none=True,
                          validate=validate.Range(min=0, max=6))


class EventsQuery(Schema):
    after = fields.Integer(load_default=0, validate=validate.Range(min=0))
    limit = fields.Integer(load_default=100, validate=validate.Range(min=1, max=1000))


class ReplayQuery(Schema):
    step = fields.Integer(load_default=0, validate=validate.Range(min=0))
