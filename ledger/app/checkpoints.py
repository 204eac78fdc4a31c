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

Keys rotate (README "Rotating the checkpoint key"): `key_id` (the first 16 hex digits of
SHA-256 of the raw public key) names the key a checkpoint was signed with. It is not among the
signed fields (it was not when checkpoints began, and the signed bytes of a checkpoint never
change), so it only says which key to check with: an edited key_id makes the check fail, it
cannot make a forged signature hold. The service trusts its current key and the retired ones
(LOO_CHECKPOINT_RETIRED_KEYS): a `Keyring`. A checkpoint without a key_id is checked against
every key of the keyring. A key that leaked is revoked (LOO_CHECKPOINT_REVOKED_KEYS, or a keys
file's `revoked` for `loo verify`): whoever holds it can sign any head, so a checkpoint it
signs proves nothing and fails, named as signed by a revoked key.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
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


def raw_public(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def public_entry(public: bytes, current: bool) -> dict[str, Any]:
    """One key as GET /v1/checkpoints/key lists it."""
    return {"alg": ALG, "public_key": base64.b64encode(public).decode(),
            "key_id": key_id(public), "current": current}


# What the service says of a checkpoint signed with a key it does not trust.
SERVICE_HINT = ("if a key this service had before a rotation signed it, add that key's public "
                "key to LOO_CHECKPOINT_RETIRED_KEYS and restart (README \"Rotating the checkpoint "
                "key\"); otherwise the checkpoint is forged")


@dataclass(frozen=True)
class Keyring:
    """The public keys a checkpoint may be signed with, by key id: a service's current key
    and its retired ones, or the keys given to `loo verify`."""

    keys: tuple[tuple[str, Ed25519PublicKey], ...]
    current: str | None = None  # the key id now signing (None: keys given offline)
    hint: str = ""  # what to do about a checkpoint signed with none of them
    # Keys revoked (leaked): what they signed is refused, named so; never trusted.
    revoked: tuple[tuple[str, Ed25519PublicKey], ...] = ()
    revoked_by: str = "revoked"  # where the revocation comes from, for the message

    @classmethod
    def of(cls, key: Keyring | Ed25519PublicKey) -> Keyring:
        """`key` itself, or a keyring of that one public key."""
        if isinstance(key, Keyring):
            return key
        return cls(((key_id(raw_public(key)), key),))

    @classmethod
    def from_raw(cls, publics: Iterable[bytes], current: str | None = None,
                 hint: str = "", revoked: Iterable[bytes] = (),
                 revoked_by: str = "revoked") -> Keyring:
        """Keys from raw public bytes (each 32; ValueError otherwise), duplicates once; a key
        both trusted and `revoked` is revoked."""
        gone: dict[str, Ed25519PublicKey] = {}
        for raw in revoked:
            gone.setdefault(key_id(raw), Ed25519PublicKey.from_public_bytes(raw))
        keys: dict[str, Ed25519PublicKey] = {}
        for raw in publics:
            if key_id(raw) not in gone:
                keys.setdefault(key_id(raw), Ed25519PublicKey.from_public_bytes(raw))
        return cls(tuple(keys.items()), current, hint, tuple(gone.items()), revoked_by)

    def ids(self) -> list[str]:
        return [kid for kid, _ in self.keys]

    def _describe(self) -> str:
        if self.current is None:
            return f"none of the keys given ({', '.join(self.ids())})"
        retired = [kid for kid in self.ids() if kid != self.current]
        return (f"neither the current key ({self.current}) nor a retired one ("
                + (", ".join(retired) if retired else "LOO_CHECKPOINT_RETIRED_KEYS is empty")
                + ")")

    def verify(self, cp: dict[str, Any]) -> str | None:
        """None when the checkpoint's signature holds under the key its key_id names (any
        key of the ring when it names none), else why not."""
        try:
            sig = base64.b64decode(str(cp["signature"]), validate=True)
            body = message(cp)
        except (KeyError, TypeError, ValueError):
            return "the checkpoint is malformed (table, version, hash, at and signature needed)"
        kid = cp.get("key_id")
        if kid is not None:
            kid = str(kid)[:64]
            named = dict(self.keys).get(kid)
            if named is None and kid in dict(self.revoked):
                return self._revoked(kid)
            if named is None:
                hint = f": {self.hint}" if self.hint else ""
                return f"it is signed with key {kid}, which is {self._describe()}{hint}"
            candidates = [named]
        else:
            candidates = [k for _, k in self.keys]
        for key in candidates:
            try:
                key.verify(sig, body)
            except InvalidSignature:
                continue
            return None
        if kid is not None:
            return f"the signature does not match key {kid} (forged, or its key_id edited)"
        for gone, key in self.revoked:  # no key_id: was it one of the revoked keys?
            try:
                key.verify(sig, body)
            except InvalidSignature:
                continue
            return self._revoked(gone)
        hint = f": {self.hint}" if self.hint else ""
        return (f"the signature does not match (the checkpoint names no key_id, and it holds "
                f"under {self._describe()}){hint}")


    def _revoked(self, kid: str) -> str:
        return (f"it is signed with key {kid}, which is revoked ({self.revoked_by}): whoever "
                "held that key could sign any head, so this checkpoint proves nothing (compare "
                "it with a copy archived before the key leaked)")


@dataclass(frozen=True)
class Signer:
    """The service's checkpoint key, and the public keys of the keys it replaced."""

    private: Ed25519PrivateKey
    retired: tuple[bytes, ...] = field(default=())  # raw public keys (LOO_CHECKPOINT_RETIRED_KEYS)
    revoked: tuple[bytes, ...] = field(default=())  # raw public keys (LOO_CHECKPOINT_REVOKED_KEYS)

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

    def retiring(self, publics: Iterable[bytes]) -> Signer:
        """This key, trusting also the retired public keys `publics` (the current key among
        them, or one twice, is counted once)."""
        keep: list[bytes] = []
        for raw in publics:
            Ed25519PublicKey.from_public_bytes(raw)  # ValueError when not a key
            if raw != self.public_bytes and raw not in keep and raw not in self.revoked:
                keep.append(raw)
        return Signer(self.private, tuple(keep), self.revoked)

    def revoking(self, publics: Iterable[bytes]) -> Signer:
        """This key, refusing what the revoked public keys `publics` signed (each once; a
        retired key revoked is no longer trusted). ValueError for the current key: rotate it
        first, then revoke it."""
        gone: list[bytes] = []
        for raw in publics:
            Ed25519PublicKey.from_public_bytes(raw)  # ValueError when not a key
            if raw == self.public_bytes:
                raise ValueError("it is the current key's public key: rotate first (loo "
                                 "checkpoint-key rotate), then revoke the key it replaced")
            if raw not in gone:
                gone.append(raw)
        return Signer(self.private, tuple(r for r in self.retired if r not in gone),
                      tuple(gone))

    @property
    def public_bytes(self) -> bytes:
        return raw_public(self.private.public_key())

    @property
    def key_id(self) -> str:
        return key_id(self.public_bytes)

    def public(self) -> dict[str, Any]:
        """GET /v1/checkpoints/key: the current key (alg, public_key, key_id), `keys`, every
        key a checkpoint of this service may be signed with, the current one first, and
        `revoked`, the keys it no longer trusts (LOO_CHECKPOINT_REVOKED_KEYS): `loo verify
        --keys` refuses what they signed."""
        pub = self.public_bytes
        return {"alg": ALG, "public_key": base64.b64encode(pub).decode(), "key_id": key_id(pub),
                "keys": [public_entry(pub, True),
                         *(public_entry(raw, False) for raw in self.retired)],
                "revoked": [{"alg": ALG, "public_key": base64.b64encode(raw).decode(),
                             "key_id": key_id(raw)} for raw in self.revoked]}

    def keyring(self) -> Keyring:
        """The keys the audit trusts: the current one and the retired ones; the revoked ones
        named as such."""
        return Keyring.from_raw((self.public_bytes, *self.retired), current=self.key_id,
                                hint=SERVICE_HINT, revoked=self.revoked,
                                revoked_by="LOO_CHECKPOINT_REVOKED_KEYS")

    def sign(self, table: str, version: int, hash_: str, at: str | None = None) -> dict[str, Any]:
        cp: dict[str, Any] = {"table": table, "version": version, "hash": hash_,
                              "at": at or datetime.now(UTC).isoformat(timespec="microseconds")}
        cp["signature"] = base64.b64encode(self.private.sign(message(cp))).decode()
        cp["alg"], cp["key_id"] = ALG, key_id(self.public_bytes)
        return cp


def public_key(text: str) -> Ed25519PublicKey:
    """A public key from base64 or hex (32 bytes); ValueError otherwise."""
    return Ed25519PublicKey.from_public_bytes(parse_key(text))


def verify(cp: dict[str, Any], key: Keyring | Ed25519PublicKey) -> str | None:
    """None when the checkpoint's signature holds under `key` (a public key, or a keyring:
    the key its key_id names), else why not."""
    return Keyring.of(key).verify(cp)


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
            key: Keyring | Ed25519PublicKey) -> str | None:
    """None when every checkpoint is validly signed and the log reaches the latest one with
    the hash it names; else a sentence naming the first checkpoint that fails."""
    by_version = {s.version: s for s in stored}
    table = stored[0].table_id if stored else None
    ring = Keyring.of(key)
    for cp in sorted(checkpoints, key=lambda c: c.get("version", 0), reverse=True):
        bad = ring.verify(cp)
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
