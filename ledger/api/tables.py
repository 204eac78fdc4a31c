"""Tables: create, read, close (API.md "Tables")."""

from __future__ import annotations

from typing import Any

from flask import request
from flask.views import MethodView

from ledger.api import idempotency as idem
from ledger.api import lists
from ledger.api.auth import authenticate, ledger, viewer_for
from ledger.api.blueprint import Blueprint
from ledger.api.writes import BODY_PARSER, write, write_response
from ledger.app.contract import IdempotentResult, VersionConflict
from ledger.app.projector import Projection
from ledger.app.service import token_hash
from ledger.app.views import Viewer, table_view
from ledger.core import commands as c
from ledger.core.errors import Forbidden, NotFound
from schemas.requests import CreateTableIn, SpectatorIn, WriteIn
from schemas.responses import (
    ClosedOut,
    CreatedOut,
    SpectatorListOut,
    SpectatorOut,
    SpectatorTokenOut,
    TableOut,
)

blp = Blueprint("tables", __name__, url_prefix="/v1/tables",
                description="Create a table, read it as your token may see it, close it.")
blp.ARGUMENTS_PARSER = BODY_PARSER  # before the routes below: their decorators use it


@blp.before_request
def who_calls() -> None:
    """Closing is the admin's: 404 / 401 / 403 come before anything about the body."""
    table_id = (request.view_args or {}).get("table_id")
    if request.method in ("POST", "DELETE") and table_id is not None:
        authenticate(table_id, admin_only=True)


@blp.route("")
class Tables(MethodView):
    @blp.arguments(CreateTableIn)
    @blp.response(201, CreatedOut)
    def post(self, body: dict[str, Any]) -> Any:
        """Create a table; the answer holds the admin token and one token per seat (shown once).

        Besides each field's own bounds: Domino Rounce is always scored in points; bots sit
        only at shuffled tables; ante and dealer_ante are not both 0; a loo_penalty
        multiplier only in capped mode. Each refusal is a 422 naming the field and the rule.
        """
        new_stream(body)
        seats = tuple((s["name"], s.get("bot")) for s in body["seats"])
        cmd = c.CreateTable(variant=body["variant"], scoring=body["scoring"], seats=seats,
                            first_dealer=body["first_dealer"], deal=body["deal"],
                            options=body["options"])
        table_id, tokens, p = create(cmd)
        return created(table_id, tokens, p, seats), 201, location(f"/v1/tables/{table_id}")


def location(path: str) -> dict[str, str]:
    """The Location of what a 201 created (RFC 9110 15.3.2): where to read it."""
    return {"Location": path}


def new_stream(body: dict[str, Any], stream: str = "new table") -> None:
    """A creation's expected_version: the new stream is at version 0 (API.md Phase 2: every
    write takes expected_version), so another value is a version conflict."""
    expected = body.get("expected_version")
    if expected not in (None, 0):
        raise VersionConflict(stream, expected, 0)


def create(cmd: c.CreateTable, scope: str | None = None,
           ) -> tuple[str, dict[str, Any], Projection]:
    """Create the table under the request's Idempotency-Key: a repeat finds the same table
    and tokens, and the table as the first request was answered. A club's keys are its own
    (`scope`: the club id), and a caller's too (idem.scoped): another club, or another
    token, sending the same key creates its own table."""
    key, request_hash = creation_key(scope)
    table_id, tokens, p = ledger().create_table(cmd, idempotency_key=key,
                                                request_hash=request_hash)
    return table_id, tokens, as_first_answered(table_id, p, key)


def creation_key(scope: str | None = None) -> tuple[str | None, str | None]:
    """A creation's Idempotency-Key (scoped: `create`) and the fingerprint of its body."""
    key = idem.scoped(scope)
    return key, idem.fingerprint(None, request.get_json(silent=True)) if key else None


def as_first_answered(table_id: str, p: Projection, key: str | None) -> Projection:
    """A table created under a key, as the first request with the key was answered."""
    led = ledger()
    found = led.idempotent_result(table_id, key)
    if found is not None:  # a repeat answers as the first request was answered
        p, _ = led.first_answer(table_id, found)
    return p


def created(table_id: str, tokens: dict[str, Any], p: Projection,
            seats: tuple[tuple[str, str | None], ...],
            members: tuple[str | None, ...] | None = None, **extra: Any) -> dict[str, Any]:
    """The answer to a table's creation, plain or club (API.md Tables): its tokens shown once;
    a club table's seats name their members."""
    return {
        "id": table_id, "admin_token": tokens["admin"], "version": p.version,
        "seats": [{"seat": i, "name": n, "bot": b, "token": tokens["seats"][i]}
                  | ({} if members is None else {"member": members[i]})
                  for i, (n, b) in enumerate(seats)],
        "table": table_view(table_id, p, Viewer(admin=True)),
    } | extra


@blp.route("/<table_id>")
class TableResource(MethodView):
    @blp.response(200, TableOut)
    def get(self, table_id: str) -> Any:
        """The table as the caller may see it, with the caller's legal actions."""
        p = ledger().load(table_id)
        return table_view(table_id, p, viewer_for(p))


@blp.route("/<table_id>/close")
class CloseResource(MethodView):
    @blp.arguments(WriteIn)
    @blp.response(200, ClosedOut)
    def post(self, body: dict[str, Any], table_id: str) -> Any:
        """End the game (admin); a non-empty pool is reported as left over (rule 8.8)."""
        viewer, written = write(table_id, body, lambda v, p: c.CloseTable(), admin_only=True)
        out = write_response(table_id, viewer, written)
        closed = [e for e in out["events"] if e["type"] == "table_closed"]
        out["leftover"] = closed[-1]["data"]["leftover"] if closed else out["table"]["pool"]
        return out


@blp.route("/<table_id>/spectators")
class Spectators(MethodView):
    @blp.arguments(SpectatorIn)
    @blp.response(201, SpectatorOut)
    def post(self, body: dict[str, Any], table_id: str) -> Any:
        """A read-only token (admin) for a public link or a club screen: it sees every tile
        of a complete hand and none of a live one, and may write nothing. Shown once."""
        sid, token = ledger().spectator_token(table_id, idem.scoped())
        _, written = write(table_id, body, lambda v, p: c.AddSpectator(
            sid, token_hash(token), body.get("label")), admin_only=True)
        version = (written.last_version if isinstance(written, IdempotentResult)
                   else written.projection.version)
        return ({"id": sid, "token": token, "label": body.get("label"), "version": version},
                201, location(f"/v1/tables/{table_id}/spectators/{sid}"))

    @blp.doc(parameters=lists.params())
    @blp.response(200, SpectatorListOut)
    def get(self, table_id: str) -> Any:
        """The table's live spectator tokens (admin), without their secrets, oldest first."""
        _, limit, offset = lists.query({})
        live = {s["id"]: s for s in live_spectators(table_id)}
        # Paged over every spectator the table was given, revoked ones too (lists.page_of).
        return lists.page_of([e.id for e in ledger().spectators(table_id)], live.get, limit,
                             offset)


def live_spectators(table_id: str) -> list[dict[str, Any]]:
    """The table's live spectator tokens, id and label, oldest first (the admin's: 403)."""
    p = ledger().load(table_id)
    if not viewer_for(p).admin:
        raise Forbidden("admin_only", "only the table's admin token may do this")
    labels = {e.id: e.label for e in ledger().spectators(table_id)}
    return [{"id": sid, "label": labels.get(sid)} for sid, _ in p.table.spectators]


@blp.route("/<table_id>/spectators/<spectator_id>")
class SpectatorResource(MethodView):
    @blp.response(200, SpectatorTokenOut)
    def get(self, table_id: str, spectator_id: str) -> Any:
        """A live spectator token of the table (admin), without its secret; a revoked one
        is 404, as it is gone from the list."""
        for s in live_spectators(table_id):
            if s["id"] == spectator_id:
                return s
        raise NotFound("spectator_not_found",
                       f"this table has no spectator token {spectator_id}")

    @blp.doc(parameters=lists.params({"expected_version": lists.TABLE_VERSION}, lists.WHOLE))
    @blp.response(204)
    def delete(self, table_id: str, spectator_id: str) -> Any:
        """Revoke a spectator token (admin): it opens nothing from now on. ?expected_version=
        and Idempotency-Key as every write (a repeat with the key answers 204 again)."""
        f, _, _ = lists.query({"expected_version": lists.whole}, lists.WHOLE)
        write(table_id, {"expected_version": f.get("expected_version")},
              lambda v, p: c.RevokeSpectator(spectator_id), admin_only=True)
        return ""
