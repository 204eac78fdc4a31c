"""ledger/app/encoding.py: the streams' JSON, exact for integers beyond 64 bits (RULES §8.5:
an uncapped pool has no limit), the same bytes and errors as orjson otherwise."""

from __future__ import annotations

import orjson
import pytest

from ledger.app import encoding


def test_integers_beyond_64_bits_round_trip_exactly():
    doc = {"pool": 3**42, "debt": -(3**42), "small": 2**63 - 1, "u64": 2**64 - 1,
           "nested": [{"amount": 10**30}], "tile": "6-3", "f": orjson.Fragment(b"[1]")}
    raw = encoding.dumps(doc)
    assert encoding.loads(raw) == doc | {"f": [1]}
    assert encoding.loads(raw.decode()) == doc | {"f": [1]}


def test_ordinary_documents_are_orjsons_own_bytes():
    doc = {"b": 1, "a": [True, None, "é"], "hash": "1234567890123456789abcdef"}
    for option in (0, orjson.OPT_APPEND_NEWLINE):
        assert encoding.dumps(doc, option) == orjson.dumps(doc, option=option)
    assert encoding.loads(orjson.dumps(doc)) == doc


@pytest.mark.parametrize("bad", [b'{"pool": 12345678901234567890', b"[12345678901234567890, NaN]",
                                 b'{"pool": 12345678901234567890} x'])
def test_bad_json_with_a_long_number_is_orjsons_error(bad: bytes):
    with pytest.raises(orjson.JSONDecodeError):
        encoding.loads(bad)
