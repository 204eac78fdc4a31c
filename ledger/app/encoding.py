"""JSON bytes for the streams (histories, feeds, webhooks), by orjson, exact for any integer.

orjson refuses integers beyond 64 bits when writing and reads them as floats, but RULES §8.5
lets a pool (and a penalty, a balance) grow without limit: an uncapped loo penalty is the
whole pool, and three players looed in a hand triple it. Such numbers are rare, so the fast
path stays orjson and only a value that needs it takes the slow one.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

# orjson writes int64 and uint64; anything outside goes out as its digits (a Fragment).
_LOW, _HIGH = -(2**63), 2**64 - 1
# A number of 19 or more digits (2**63 has 19): outside a string it is not preceded by a
# letter, a digit, a dot or a quote. A match inside a string only costs the slow path.
_LONG_NUMBER = re.compile(rb'(?<![\w."])-?\d{19}')


def dumps(obj: Any, option: int = 0) -> bytes:
    """orjson.dumps(obj, option=option), integers beyond 64 bits included."""
    try:
        return orjson.dumps(obj, option=option)
    except TypeError:
        return orjson.dumps(_exact(obj), option=option)


def _exact(obj: Any) -> Any:
    """A copy of `obj` whose integers beyond orjson's range are written as their digits."""
    if isinstance(obj, int) and not isinstance(obj, bool) and not _LOW <= obj <= _HIGH:
        return orjson.Fragment(str(obj).encode())
    if isinstance(obj, dict):
        return {k: _exact(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_exact(v) for v in obj]
    return obj


def loads(data: bytes | str) -> Any:
    """orjson.loads(data), but integers of 19 digits or more read exactly (json module)."""
    raw = data.encode() if isinstance(data, str) else data
    if _LONG_NUMBER.search(raw):
        try:
            return json.loads(raw, parse_constant=_no_constant)
        except ValueError:
            pass  # orjson says what is wrong, with its own error (a JSONDecodeError)
    return orjson.loads(raw)


def _no_constant(name: str) -> Any:
    """NaN and Infinity are not JSON: refused on both paths alike."""
    raise ValueError(name)
