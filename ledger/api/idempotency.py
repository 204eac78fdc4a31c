"""Idempotency-Key: a repeated write returns the first answer and appends nothing."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from flask import request

from ledger.api.context import current_request
from ledger.app.views import Viewer
from ledger.core.errors import BadRequest


def key() -> str | None:
    raw = current_request().headers.get("Idempotency-Key")
    if raw is None:
        return None
    raw = raw.strip()
    if not 1 <= len(raw) <= 200:
        raise BadRequest("invalid_idempotency_key", "Idempotency-Key must be 1 to 200 characters")
    return raw


def caller() -> str:
    """Whose key it is. With a bearer token: a digest of it (checked or not, it is a secret
    of whoever sends it; not the stored token_hash, which events carry: nobody can name
    another caller's keys without the token itself). Without one: a digest of the client's
    address, as the rate limits see it (request.remote_addr, the one the trusted proxies
    name with LOO_TRUSTED_PROXIES), kept as a digest rather than the address itself."""
    req = current_request()
    scheme, _, token = req.headers.get("Authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() == "bearer" and token:
        return "by:" + _digest(b"loo-idempotency-caller\0" + token.encode())
    address = req.remote_addr or "unknown"
    return "from:" + _digest(b"loo-idempotency-address\0" + address.encode())


def _digest(blob: bytes) -> str:
    return hashlib.sha256(blob).hexdigest()[:32]


def scoped(scope: str | None = None) -> str | None:
    """The request's key within its tenant (`scope`: a club) and its caller: keys of two
    clubs, of two tokens, or of two clients without a token, never meet. A creation's
    first answer holds tokens shown once, so a key is never a way into someone else's:
    sent with another token, or without one from another address, the same key is another
    key (its own table, its own secrets). Without a token the key and the client's address
    are all that tell callers apart: a retry from the same address replays the first
    answer (another body there is a 409: the fingerprint is method, path, body); a client
    whose address changes between tries sends a bearer token of its own (any secret string:
    POST /v1/tables and an open POST /v1/clubs take one) to keep its key."""
    raw = key()
    if raw is None:
        return None
    return "|".join([p for p in (scope, caller()) if p] + [raw])


def fingerprint(viewer: Viewer | None, body: Any) -> str:
    """Same caller, same route, same body, same query -> same fingerprint. The query counts
    where a write takes one (a DELETE's or an import's ?expected_version=, the body's field
    elsewhere): the same key with another one is another request, a 409 as in a body."""
    who = "anon" if viewer is None else ("admin" if viewer.admin else f"seat:{viewer.seat}")
    parts = [request.method, request.path, who, body]
    if request.args:  # (absent: the fingerprint of every write that takes no query, as before)
        parts.append(sorted(request.args.items(multi=True)))
    blob = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()
