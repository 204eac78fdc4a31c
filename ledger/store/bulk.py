"""Reading many events at once: fast JSON decoding, the garbage collector paused."""

from __future__ import annotations

import gc
import json
import json.scanner
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# The C scanner called directly: json.loads adds regex and type checks that cost more
# than the decoding itself on small objects (measured 2-3x on replay). Kept over orjson:
# `loo bench parts` json_decode, per stored event: this 0.96 µs, json.loads 2.27, orjson
# 0.35 but it reads integers beyond 64 bits as floats (hashed data changed silently), and
# guarding against that (a digit-run search) made it 2.09 µs. replay_decode, 20,000 events
# from PostgreSQL: this 1.07-1.34x json.loads, and orjson (as psycopg's loader) 0.48-0.90x this.
_scan = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]  # typeshed


def load_json(text: str | bytes | memoryview) -> Any:
    """json.loads for stored event data, faster; anything unusual goes to json.loads."""
    if not isinstance(text, str):
        text = bytes(text).decode()
    try:
        obj, end = _scan(text, 0)
    except StopIteration:
        return json.loads(text)  # raises the proper JSONDecodeError
    return obj if end == len(text) else json.loads(text)


@contextmanager
def gc_paused() -> Iterator[None]:
    """Hold off cyclic garbage collection while a large acyclic result is built.

    A 100,000-event replay spent about a third of its time in collections triggered by
    its own allocations, none of which can be garbage. Nested or concurrent use is
    harmless: at worst the collector comes back a little early.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
