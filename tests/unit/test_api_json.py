"""The API's JSON encoder writes what Flask's own would, only faster (ledger/api/jsonio.py)."""

from __future__ import annotations

import dataclasses
import datetime
import json
import uuid

from flask import Flask
from flask.json.provider import DefaultJSONProvider
from hypothesis import given
from hypothesis import strategies as st

from ledger.api.jsonio import OrjsonProvider

APPS = {False: Flask("plain"), True: Flask("debug")}  # providers hold their app weakly
APPS[True].debug = True


def _providers(debug: bool = False) -> tuple[OrjsonProvider, DefaultJSONProvider]:
    return OrjsonProvider(APPS[debug]), DefaultJSONProvider(APPS[debug])


def _flask_bytes(default: DefaultJSONProvider, obj: object) -> bytes:
    """Flask's compact answer, with its non-ASCII escapes written out as UTF-8."""
    return json.dumps(json.loads(default.response(obj).get_data()), sort_keys=True,
                      separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1) | st.text(),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20)


@given(json_values)
def test_the_answer_has_flasks_bytes_sorted_keys_and_all(value):
    ours, default = _providers()
    assert ours.response(value).get_data() == _flask_bytes(default, value)


def test_a_table_view_answer_is_byte_for_byte_flasks():
    ours, default = _providers()
    view = {"table": {"seats": [{"name": "Zoë", "seat": 0}], "hand": {"hands": {"1": ["6-6"]}},
                      "id": "t1", "pool": 25, "legal_actions": []}, "version": 7, "events": []}
    assert ours.response(view).get_data() == _flask_bytes(default, view)
    assert ours.response(view).mimetype == "application/json"


def test_integer_keys_are_written_as_strings():
    ours, default = _providers()
    value = {3: "c", 0: "a", 1: {2: "b"}}  # the views key seats by str(seat) anyway
    assert ours.response(value).get_data() == _flask_bytes(default, value)


def test_what_orjson_will_not_take_goes_through_flasks_encoder():
    ours, default = _providers()

    @dataclasses.dataclass
    class Row:
        at: datetime.datetime
        id: uuid.UUID

    value = {"big": 2**70, "when": datetime.datetime(2026, 11, 23, 6, 26, 18,
                                                       tzinfo=datetime.UTC),
             "row": Row(datetime.datetime(2026, 1, 2, tzinfo=datetime.UTC), uuid.UUID(int=5)),
             "tuple": (1, 2)}
    assert json.loads(ours.response(value).get_data()) == json.loads(
        default.response(value).get_data())
    assert json.loads(ours.dumps(value))["when"] == "Mon, 23 Nov 2026 06:26:18 GMT"


def test_debug_mode_and_explicit_options_pretty_print_as_flask_does():
    ours, default = _providers(debug=True)
    value = {"b": 1, "a": [1, 2]}
    assert ours.response(value).get_data() == default.response(value).get_data()
    assert ours.dumps(value, indent=2) == default.dumps(value, indent=2)
