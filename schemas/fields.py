"""The tile field: "6-3" or "3-6" in, "6-3" out; a day: "2026-11-01" and nothing else."""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from marshmallow import ValidationError, fields

from ledger.core.errors import Invalid
from ledger.core.rules.tiles import NAMES, parse_tile

# API.md Conventions: a tile is its two ends joined by a hyphen, either order, nothing else.
TILE_SCHEMA = {"type": "string", "pattern": "^[0-6]-[0-6]$",
               "description": 'a tile: its two ends 0..6, either order ("6-3" or "3-6"), '
                              "nothing around them"}


class TileField(fields.Field):
    """A tile as a string; either order accepted, high end first on output."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs["metadata"] = TILE_SCHEMA | kwargs.get("metadata", {})
        super().__init__(**kwargs)

    def _serialize(self, value: Any, attr: Any, obj: Any, **kwargs: Any) -> Any:
        return None if value is None else NAMES[value]

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> int:
        try:
            return parse_tile(value)
        except Invalid as err:
            raise ValidationError(err.detail) from err


class SeatOrLots(fields.Field):
    """first_dealer: a seat number or "lots"."""

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> Any:
        if value == "lots" or (isinstance(value, int) and not isinstance(value, bool)):
            return value
        raise ValidationError('a seat number or "lots"')


_WRITTEN_INTEGER = re.compile(r"-?[0-9]+")


class QueryInteger(fields.Integer):
    """An integer in a query string written as one: ASCII digits, maybe a leading minus. int()
    alone also reads "1_0" as 10, " 7 " as 7 and "+3" as 3."""

    def _validated(self, value: Any) -> int:
        if isinstance(value, str) and _WRITTEN_INTEGER.fullmatch(value) is None:
            raise self.make_error("invalid", input=value)
        return super()._validated(value)


_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def parse_day(raw: str) -> date:
    """A calendar date as the spec's `format: date` (RFC 3339 full-date) writes it,
    YYYY-MM-DD. date.fromisoformat alone also reads ISO 8601's other spellings: "20261101",
    and week dates such as "2026-W01-1" (2025-12-29), which nobody means by a date."""
    if not isinstance(raw, str) or _DAY.fullmatch(raw) is None:
        raise ValueError("a date written YYYY-MM-DD")
    return date.fromisoformat(raw)


class Day(fields.Date):
    """A date field that takes only YYYY-MM-DD (`parse_day`)."""

    def _deserialize(self, value: Any, attr: Any, data: Any, **kwargs: Any) -> date:
        try:
            return parse_day(value)
        except ValueError:
            raise self.make_error("invalid") from None
