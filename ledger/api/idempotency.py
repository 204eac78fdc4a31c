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


def caller() -> str | None:
    """Whose key it is: a digest of the request's bearer token (checked or not, it is a
    secret of whoever sends it), or None for a request without one. Not the stored
    token_hash (events carry those): nobody can name another caller's keys without the
    token itself."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return hashlib.sha256(b"loo-idempotency-caller\0" + token.encode()).hexdigest()[:32]


def scoped(scope: str | None = None) -> str | None:
    """The request's key within its tenant (`scope`: a club) and its caller (its bearer
    token): keys of two clubs, or of two tokens, never meet. Sent with another token, the
    same key is another key (its own table, its own secrets), never a replay of someone
    else's answer, which holds tokens shown once. Without a token a key is the caller's
    only secret: the same key with the same body replays the first answer, with another
    body it is a 409 (the fingerprint: method, path, body)."""
    raw = key()
    if raw is None:
        return None
    who = caller()
    return "|".join([p for p in (scope, who and f"by:{who}") if p] + [raw])


def fingerprint(viewer: Viewer | None, body: Any) -> str:
    """Same caller, same route, same body -> same fingerprint."""
    who = "anon" if viewer is None else ("admin" if viewer.admin else f"seat:{viewer.seat}")
    blob = json.dumps([request.method, request.path, who, body], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()
