"""Idempotency-Key: a repeated write returns the first answer and appends nothing."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from flask import request

from ledger.app.views import Viewer
from ledger.core.errors import BadRequest


def key() -> str | None:
    raw = request.headers.get("Idempotency-Key")
    if raw is None:
        return None
    raw = raw.strip()
    if not 1 <= len(raw) <= 200:
        raise BadRequest("invalid_idempotency_key", "Idempotency-Key must be 1 to 200 characters")
    return raw


def scoped(scope: str | None) -> str | None:
    """The request's key within a tenant (a club): keys of two clubs never meet."""
    raw = key()
    return raw if raw is None or scope is None else f"{scope}|{raw}"


def fingerprint(viewer: Viewer | None, body: Any) -> str:
    """Same caller, same route, same body -> same fingerprint."""
    who = "anon" if viewer is None else ("admin" if viewer.admin else f"seat:{viewer.seat}")
    blob = json.dumps([request.method, request.path, who, body], sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()
