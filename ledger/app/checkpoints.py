"""Signed checkpoints (API.md "Checkpoints"): heads of a table's chain, signed with Ed25519.

A checkpoint is signed after every settled hand (the last event of its settlement), after
every void (its `hand_voided`, which carries the compensating transfers or scores and a game
un-won) and after `table_closed`: each in the transaction of the append that writes the
event it names, so no event that moves chips, points or the table's state is the last of a
log without a signed head naming it.

A checkpoint is `{"table", "version", "hash", "at", "signature"}` (plus `alg` and `key_id`);
`signature` is Ed25519 over the canonical JSON (keys sorted, separators `,` `:`, UTF-8) of
`{"table", "version", "hash", "at"}`, base64. The private key never enters the database
(LOO_CHECKPOINT_KEY, or a key file), so whoever can rewrite the database can still not sign a
head it made up; anyone holding the public key (`GET /v1/checkpoints/key`) can check one.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

ALG = "ed25519"
SIGNED_FIELDS = ("table", "version", "hash", "at")
# The events after which a hand is settled: the checkpoint names the last of them.
SETTLEMENT_ENDS = ("hand_settled", "game_won")
# The other events a checkpoint names: a void's correction (one event: hand_voided holds its
# compensating transfers or scores, and `unwon` for a game the hand had won) and the table's
# close. Signed since this release only: a void or close written before has none, and no
# reader signs one afterwards (ledger/app/feed.py attach_checkpoints).
CORRECTION_ENDS = ("hand_voided", "table_closed")
# Every event type a checkpoint may name.
HEAD_TYPES = SETTLEMENT_ENDS + CORRECTION_ENDS


def message(cp: dict[str, Any]) -> bytes:
    """The bytes a checkpoint's signature covers."""
    body = {k: cp[k] for k in SIGNED_FIELDS}
    return json.dumps(body, sort_keys=True, separators=(",", ":"),
                      ensure_ascii=False).encode()


def key_id(public: bytes) -> str:
    return hashlib.sha256(public).hexdigest()[:16]


def parse_key(text: str) -> bytes:
    """32 raw bytes from hex (64 digits) or base64; ValueError otherwise."""
    text = text.strip()
    try:
        raw = bytes.fromhex(text) if len(text) == 64 else base64.b64decode(text, validate=True)
    except ValueError:
        raw = b""
    if len(raw) != 32:
        raise ValueError("must be 32 bytes, as 64 hex digits or base64")
    return raw


@dataclass(frozen=True)
class Signer:
    """The service's checkpoint key."""

    private: Ed25519PrivateKey

    @classmethod
    def from_seed(cls, seed: bytes) -> Signer:
        return cls(Ed25519PrivateKey.from_private_bytes(seed))

    @classmethod
    def generate(cls) -> Signer:
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_file(cls, path: str | Path, create: bool = True) -> Signer:
        """The key in `path` (hex); created (mode 0600) on first start when `create`."""
        p = Path(path)
        if create and not p.exists():
            seed = os.urandom(32)
            try:
                fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:  # another process created it first: use theirs
                pass
            else:
                with os.fdopen(fd, "w") as f:
                    f.write(seed.hex() + "\n")
        return cls.from_seed(parse_key(p.read_text()))

    @property
    def public_bytes(self) -> bytes:
        return self.private.public_key().public_bytes(serialization.Encoding.Raw,
                                                      serialization.PublicFormat.Raw)

    def public(self) -> dict[str, str]:
        pub = self.public_bytes
        return {"alg": ALG, "public_key": base64.b64encode(pub).decode(), "key_id": key_id(pub)}

    def sign(self, table: str, version: int, hash_: str, at: str | None = None) -> dict[str, Any]:
        cp: dict[str, Any] = {"table": table, "version": version, "hash": hash_,
                              "at": at or datetime.now(UTC).isoformat(timespec="microseconds")}
        cp["signature"] = base64.b64encode(self.private.sign(message(cp))).decode()
        cp["alg"], cp["key_id"] = ALG, key_id(self.public_bytes)
        return cp


def public_key(text: str) -> Ed25519PublicKey:
    """A public key from base64 or hex (32 bytes); ValueError otherwise."""
    return Ed25519PublicKey.from_public_bytes(parse_key(text))


def verify(cp: dict[str, Any], key: Ed25519PublicKey) -> str | None:
    """None when the checkpoint's signature holds under `key`, else why not."""
    try:
        sig = base64.b64decode(str(cp["signature"]), validate=True)
        key.verify(sig, message(cp))
    except (KeyError, TypeError, ValueError):
        return "the checkpoint is malformed (table, version, hash, at and signature needed)"
    except InvalidSignature:
        return "the signature does not match (forged, or signed with another key)"
    return None


def signed_heads(events: Sequence[Any]) -> tuple[int, ...]:
    """Where in `events` (new or stored) the heads a checkpoint names are: the last event of
    each hand's settlement, each hand_voided and each table_closed."""
    out = []
    for i, s in enumerate(events):
        if s.type in SETTLEMENT_ENDS:
            nxt = events[i + 1] if i + 1 < len(events) else None
            if nxt is None or nxt.type != "game_won":
                out.append(i)
        elif s.type in CORRECTION_ENDS:
            out.append(i)
    return tuple(out)


def describe(cp: dict[str, Any]) -> str:
    return f"checkpoint at version {cp.get('version')} (hash {str(cp.get('hash'))[:12]}…, " \
           f"signed {cp.get('at')})"


def reaches(stored: Sequence[Any], checkpoints: Sequence[dict[str, Any]],
            key: Ed25519PublicKey) -> str | None:
    """None when every checkpoint is validly signed and the log reaches the latest one with
    the hash it names; else a sentence naming the first checkpoint that fails."""
    by_version = {s.version: s for s in stored}
    table = stored[0].table_id if stored else None
    for cp in sorted(checkpoints, key=lambda c: c.get("version", 0), reverse=True):
        bad = verify(cp, key)
        if bad:
            return f"{describe(cp)}: {bad}"
        if table is not None and cp["table"] != table:
            return f"{describe(cp)}: it is a checkpoint of table {cp['table']}, not {table}"
        s = by_version.get(cp["version"])
        if s is None:
            last = stored[-1].version if stored else 0
            return (f"the log no longer reaches the {describe(cp)}: it ends at version "
                    f"{last} (events deleted)")
        if s.hash != cp["hash"]:
            return (f"the log no longer reaches the {describe(cp)}: version {cp['version']} "
                    f"has hash {s.hash[:12]}… (the chain was rewritten)")
    return None
