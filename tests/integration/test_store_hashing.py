"""The hash chain helpers: the fast paths agree with the reference definitions."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.store import hashing
from ledger.store.base import NewEvent
from ledger.store.bulk import load_json
from ledger.store.hashing import (
    GENESIS,
    canonical_json,
    event_hash,
    positioned,
    seal,
    utc_now,
    verify_chain,
)

scalars = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=8)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=5), inner, max_size=3),
                           max_leaves=8)
new_events = st.builds(NewEvent, type=st.text(min_size=1, max_size=12),
                       hand=st.none() | st.integers(0, 2**31 - 1),
                       data=st.dictionaries(st.text(max_size=5), json_values, max_size=4),
                       causation=st.none() | st.text(max_size=12),
                       recorded_at=st.none() | st.just("2024-05-01T12:00:00.000000+00:00"))


@given(st.text(max_size=10), st.integers(0, 10**6), st.lists(new_events, min_size=1, max_size=4))
def test_sealed_hashes_follow_the_reference_definition(table_id: str, start: int,
                                                        events: list[NewEvent]) -> None:
    sealed = seal(table_id, start, GENESIS, events)
    prev = GENESIS
    for s in sealed:
        assert s.hash == event_hash(prev, table_id, s.version, s.type, s.hand, s.data,
                                    s.causation, s.recorded_at)
        assert s.data_json == canonical_json(s.data)
        prev = s.hash


def test_canonical_json_is_sorted_compact_and_unescaped() -> None:
    assert canonical_json({"b": [1, "é"], "a": None}) == '{"a":null,"b":[1,"é"]}'


any_json = st.recursive(
    scalars | st.floats() | st.integers(),
    lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    | st.dictionaries(st.integers(-5, 5), inner, max_size=3),
    max_leaves=10)


@given(any_json)
def test_canonical_json_is_json_dumps_sorted_compact_and_unescaped(value: Any) -> None:
    assert canonical_json(value) == json.dumps(value, sort_keys=True, separators=(",", ":"),
                                               ensure_ascii=False)


def test_canonical_json_refuses_circular_and_unknown_values_as_json_dumps_does() -> None:
    loop: dict[str, Any] = {"a": [1]}
    loop["a"].append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        canonical_json(loop)
    with pytest.raises(TypeError):
        canonical_json({"a": {1, 2}})
    deep: list[Any] = []
    for _ in range(100_000):  # deep but not circular: json.dumps exhausts the recursion too
        deep = [deep]
    with pytest.raises(RecursionError):
        canonical_json(deep)
    assert canonical_json({"ok": [1.5, "x"]}) == '{"ok":[1.5,"x"]}'  # still usable after


def test_sealing_copies_data_through_json() -> None:
    data = {"tiles": (1, 2)}
    (s,) = seal("t", 0, GENESIS, [NewEvent("x", None, data)])
    assert s.data == {"tiles": [1, 2]} and s.data is not data


def test_verify_chain_names_a_missing_version() -> None:
    events = positioned("t", seal("t", 0, GENESIS, [NewEvent("x", None, {})] * 3), 1)
    assert verify_chain(events) is None
    assert verify_chain([events[0], events[2]]) == "version 2 is missing (found 3)"


odd_rows = st.tuples(st.text(max_size=6), st.text(min_size=1, max_size=8),
                     st.none() | st.integers(-(2**40), 2**40) | st.text(max_size=3)
                     | st.booleans() | st.floats(allow_nan=False),
                     any_json, st.none() | st.text(max_size=8), st.text(max_size=8))


@given(st.lists(odd_rows, min_size=1, max_size=3))
def test_verify_chain_recomputes_event_hash_for_any_row_a_store_could_hold(rows: list[Any]):
    """verify_chain builds the hashed body as seal does, not through event_hash: for any
    row, even one an owner wrote by hand (a hand that is text, data that is no object), it
    accepts exactly the hash event_hash gives and refuses any other."""
    prev, events = GENESIS, []
    for version, (table_id, type_, hand, data, causation, at) in enumerate(rows, start=1):
        h = event_hash(prev, table_id, version, type_, hand, data, causation, at)
        events.append(SimpleNamespace(table_id=table_id, version=version, type=type_,
                                      hand=hand, data=data, causation=causation,
                                      recorded_at=at, prev_hash=prev, hash=h))
        prev = h
    assert verify_chain(events) is None
    events[-1].hash = "0" + events[-1].hash[1:] if events[-1].hash[0] != "0" else "1" + \
        events[-1].hash[1:]
    assert verify_chain(events) == f"version {len(rows)}: hash does not match its content " \
        "(tampered)"


@given(json_values)
def test_load_json_decodes_like_json_loads(value: Any) -> None:
    text = json.dumps(value)
    assert load_json(text) == json.loads(text)
    assert load_json(text.encode()) == json.loads(text)


@pytest.mark.parametrize("bad", ["", "{", '{"a": 1} trailing'])
def test_load_json_refuses_what_json_loads_refuses(bad: str) -> None:
    with pytest.raises(ValueError):
        load_json(bad)


@given(st.lists(st.integers(0, 2**63 - 1), min_size=1, max_size=5))
def test_utc_now_writes_the_time_as_datetime_isoformat_does(clock: list[int]) -> None:
    # Consecutive reads, some in the same second (the formatted second is reused).
    clock = sorted(clock[:1] + [clock[0] + n % 2_000_000_000 for n in clock[1:]])
    clock = [ns for ns in clock if ns < 253402300800 * 10**9]  # before year 10000
    real = hashing.time
    for ns in clock:
        hashing.time = SimpleNamespace(time_ns=lambda ns=ns: ns, strftime=time.strftime,
                                       gmtime=time.gmtime)  # type: ignore[assignment]
        try:
            got = utc_now()
        finally:
            hashing.time = real
        want = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=ns // 1000)
        assert got == want.isoformat(timespec="microseconds")
