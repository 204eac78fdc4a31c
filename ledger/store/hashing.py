"""The hash chain: hash = sha256(prev_hash + canonical JSON of the event)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

GENESIS = "0" * 64


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def event_hash(prev_hash: str, table_id: str, version: int, type_: str, hand: int | None,
               data: dict[str, Any], causation: str | None, recorded_at: str) -> str:
    body = canonical_json({"table_id": table_id, "version": version, "type": type_,
                           "hand": hand, "data": data, "causation": causation,
                           "recorded_at": recorded_at})
    return hashlib.sha256((prev_hash + body).encode()).hexdigest()


def verify_chain(events: Sequence[Any]) -> str | None:
    """None when the chain holds, else a sentence naming the first broken version."""
    prev = GENESIS
    for i, e in enumerate(events, start=1):
        if e.version != i:
            return f"version {i} is missing (found {e.version})"
        if e.prev_hash != prev:
            return f"version {e.version}: prev_hash does not match the hash of version {i - 1}"
        want = event_hash(prev, e.table_id, e.version, e.type, e.hand, e.data, e.causation,
                          e.recorded_at)
        if want != e.hash:
            return f"version {e.version}: hash does not match its content (tampered)"
        prev = e.hash
    return None
