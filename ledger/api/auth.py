"""Bearer tokens: an admin token and one per seat, kept only as SHA-256 hashes (API.md Auth)."""

from __future__ import annotations

import hmac

from ledger.api.context import current_request, flask_app, request_state
from ledger.app.projector import Projection
from ledger.app.service import Ledger, token_hash
from ledger.app.views import Viewer
from ledger.core.errors import Forbidden, Unauthorized


def ledger() -> Ledger:
    return flask_app().extensions["loo_ledger"]


def viewer_for(p: Projection) -> Viewer:
    """Who is calling: 401 without a token of this table."""
    header = current_request().headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("missing_token", "send Authorization: Bearer <token> "
                           "(the admin or a seat token of this table)")
    digest = token_digest(token.strip())
    tokens = p.table.tokens or {}
    # Constant-time comparisons against every token, so timing reveals nothing.
    admin = hmac.compare_digest(digest, tokens.get("admin", ""))
    seat = None
    for i, h in enumerate(tokens.get("seats", [])):
        if hmac.compare_digest(digest, h):
            seat = i
    spectator = False
    for _sid, h in p.table.spectators:
        spectator |= hmac.compare_digest(digest, h)
    if admin:
        return Viewer(admin=True)
    if seat is not None:
        return Viewer(admin=False, seat=seat)
    if spectator:
        return Viewer(admin=False, spectator=True)
    if p.table.club is not None:  # a club table: the club's tokens open it by their role
        from ledger.api.clubs import clubs

        role = clubs().role_of(clubs().load(p.table.club).club, token.strip())
        if role in ("owner", "scorer"):
            return Viewer(admin=True)
        if role == "viewer":
            return Viewer(admin=False, spectator=True)
    raise Unauthorized("invalid_token", "this token does not open this table")


def token_digest(token: str) -> str:
    """The token's hash as stored (SHA-256, hex), computed once a request: the rate limiter
    keys a token's budget by it too."""
    state = request_state()
    cached = state.get("loo_token_digest")
    if cached is None or cached[0] != token:
        cached = state.loo_token_digest = (token, token_hash(token))
    return cached[1]


def authenticate(table_id: str, admin_only: bool = False) -> Viewer:
    """The caller of a write, asked before its body is parsed: 404 for an unknown table, 401
    for no or a bad token, 403 for a seat token on an admin route, whatever the body says."""
    led = ledger()
    p = led.cached(table_id) or led.load(table_id)  # tokens never change: any version will do
    viewer = viewer_for(p)
    if viewer.spectator:
        raise Forbidden("read_only_token", "a spectator token only reads this table")
    if admin_only:
        require_admin(viewer)
    request_state().loo_viewer = viewer
    return viewer


def authenticated() -> Viewer | None:
    """The viewer `authenticate` found for this request, if it ran."""
    return request_state().get("loo_viewer")


def require_admin(v: Viewer) -> None:
    if not v.admin:
        raise Forbidden("admin_only", "only the table's admin token may do this")


def acting_seat(v: Viewer, requested: int | None) -> int:
    """Seat tokens act for their own seat; the admin names one with "seat"."""
    if v.admin:
        if requested is None:
            from ledger.core.errors import Invalid

            raise Invalid("seat_required", 'acting with the admin token, say for which seat: '
                          '"seat": n', field="seat")
        return requested
    if requested is not None and requested != v.seat:
        raise Forbidden("not_your_seat", f"this token acts only for seat {v.seat}")
    assert v.seat is not None
    return v.seat
