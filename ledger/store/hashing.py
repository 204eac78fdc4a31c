"""The hash chain: hash = sha256(prev_hash + canonical JSON of the event)."""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, NamedTuple

from ledger.store.base import NewEvent, StoredEvent
from ledger.store.bulk import load_json

GENESIS = "0" * 64


def _encoder() -> Callable[[Any], str]:
    """canonical_json's encoder, built once (json.dumps with options builds one per call).

    JSONEncoder.encode still builds its C encoder (and a closure) on every call, about a
    third of encoding an event's data: this keeps that encoder, with the same options, but
    without the markers that find a circular reference (so it keeps no state between calls
    and threads share it). A circular object exhausts the recursion limit instead, and the
    checked encoder then raises what it always did."""
    checked = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if c_make_encoder is None:  # no C accelerator: the pure-Python encoder, as before
        return checked.encode
    fast = c_make_encoder(None, checked.default, encode_basestring, None, ":", ",", True,
                          False, True)

    def encode(obj: Any) -> str:
        try:
            return "".join(fast(obj, 0))
        except RecursionError:
            return checked.encode(obj)  # ValueError: Circular reference detected

    return encode


_encode = _encoder()


def canonical_json(obj: Any) -> str:
    return _encode(obj)


def json_scalar(x: Any) -> str:
    """canonical_json for the envelope's scalars, skipping the encoder's slow path."""
    if x is None:
        return "null"
    if type(x) is str:
        return encode_basestring(x)  # what the encoder uses when ensure_ascii=False
    if type(x) is int:
        return int.__repr__(x)
    return _encode(x)


def event_hash(prev_hash: str, table_id: str, version: int, type_: str, hand: int | None,
               data: dict[str, Any], causation: str | None, recorded_at: str) -> str:
    body = canonical_json({"table_id": table_id, "version": version, "type": type_,
                           "hand": hand, "data": data, "causation": causation,
                           "recorded_at": recorded_at})
    return hashlib.sha256((prev_hash + body).encode()).hexdigest()


def _body(table_id: str, version: int, type_: str, hand: int | None, data_json: str,
          causation: str | None, recorded_at: str) -> str:
    """canonical_json of the hashed fields (keys in sorted order) around encoded data."""
    enc = json_scalar
    return (f'{{"causation":{enc(causation)},"data":{data_json},"hand":{enc(hand)},'
            f'"recorded_at":{enc(recorded_at)},"table_id":{enc(table_id)},'
            f'"type":{enc(type_)},"version":{enc(version)}}}')


_second = (0, "1970-01-01T00:00:00")  # the last whole second formatted, swapped whole


def utc_now() -> str:
    """Now as datetime.now(UTC).isoformat(timespec="microseconds") gives it, at a third of
    its cost (a datetime and its isoformat for every appended event)."""
    global _second
    sec, micro = divmod(time.time_ns() // 1000, 1_000_000)
    last = _second
    if last[0] != sec:
        last = _second = (sec, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)))
    return f"{last[1]}.{micro:06d}+00:00"


class Sealed(NamedTuple):
    """A new event chained and hashed, waiting for the store to give it a position."""

    version: int
    type: str
    hand: int | None
    data: dict[str, Any]
    data_json: str  # canonical JSON of data, for stores that keep it as text
    recorded_at: str
    causation: str | None
    prev_hash: str
    hash: str


def seal(table_id: str, expected_version: int, prev_hash: str,
         events: Sequence[NewEvent]) -> list[Sealed]:
    """Chain new events onto `prev_hash` (the hash of version `expected_version`).

    The data goes through JSON once, so what the caller gets back is exactly what a later
    load returns (tuples become lists) and non-JSON data fails before any I/O.
    """
    now = utc_now()
    out = []
    for version, e in enumerate(events, start=expected_version + 1):
        at = e.recorded_at or now
        data_json = _encode(e.data)
        body = _body(table_id, version, e.type, e.hand, data_json, e.causation, at)
        h = hashlib.sha256((prev_hash + body).encode()).hexdigest()
        out.append(Sealed(version, e.type, e.hand, load_json(data_json), data_json, at,
                          e.causation, prev_hash, h))
        prev_hash = h
    return out


def positioned(table_id: str, sealed: Sequence[Sealed], first_position: int) -> list[StoredEvent]:
    """The stored events, numbered from `first_position` in batch order."""
    return [StoredEvent(table_id, s.version, first_position + i, s.type, s.hand, s.data,
                        s.recorded_at, s.causation, s.prev_hash, s.hash)
            for i, s in enumerate(sealed)]


def verify_chain(events: Sequence[Any]) -> str | None:
    """None when the chain holds, else a sentence naming the first broken version."""
    prev = GENESIS
    sha256 = hashlib.sha256
    for i, e in enumerate(events, start=1):
        if e.version != i:
            return f"version {i} is missing (found {e.version})"
        if e.prev_hash != prev:
            return f"version {e.version}: prev_hash does not match the hash of version {i - 1}"
        # event_hash's body, built as seal builds it (the same text: tests/integration/
        # test_store_hashing.py), at two thirds of the cost of encoding a dict around the data
        body = _body(e.table_id, e.version, e.type, e.hand, _encode(e.data), e.causation,
                     e.recorded_at)
        if sha256((prev + body).encode()).hexdigest() != e.hash:
            return f"version {e.version}: hash does not match its content (tampered)"
        prev = e.hash
    return None
