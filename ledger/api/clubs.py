"""Clubs, their tokens, members, seasons, tables and standings (API.md Phase 2)."""

from __future__ import annotations

import csv
import hashlib
import hmac
import io
import os
from collections.abc import Iterator
from typing import Any

from flask import Response, current_app, request
from flask.views import MethodView

from ledger.api import feeds, lists
from ledger.api import idempotency as idem
from ledger.api.auth import ledger
from ledger.api.blueprint import Blueprint
from ledger.api.tables import as_first_answered, created, creation_key, location, new_stream
from ledger.api.writes import BODY_PARSER, storable
from ledger.app.clubs import Clubs, Loaded
from ledger.app.contract import VersionConflict
from ledger.app.service import token_hash
from ledger.core import club as cl
from ledger.core import commands as c
from ledger.core.errors import Forbidden, Invalid, Unauthorized
from schemas.fields import parse_day
from schemas.requests import (
    ClubIn,
    ClubTableIn,
    ClubTokenIn,
    MemberIn,
    MemberPatchIn,
    SeasonIn,
    WebhookIn,
    WriteIn,
)
from schemas.responses import (
    ClubCreatedOut,
    ClubFeedOut,
    ClubOut,
    ClubTableListOut,
    ClubTokenCreatedOut,
    ClubTokenListOut,
    ClubTokenOut,
    CreatedOut,
    DeliveryListOut,
    MemberLedgerOut,
    MemberListOut,
    MemberOut,
    SeasonListOut,
    SeasonOut,
    StandingsOut,
    WebhookCreatedOut,
    WebhookListOut,
    WebhookOut,
)

blp = Blueprint("clubs", __name__, url_prefix="/v1/clubs",
                description="Clubs: tokens with roles, members, seasons, tables, standings.")
blp.ARGUMENTS_PARSER = BODY_PARSER
WRITERS = ("owner", "scorer")
READERS = ("owner", "scorer", "viewer")


def clubs() -> Clubs:
    found = current_app.extensions.get("loo_clubs")
    if found is None:
        found = current_app.extensions["loo_clubs"] = Clubs(ledger())
    return found


def bearer() -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def caller(club_id: str, roles: tuple[str, ...]) -> tuple[Loaded, str]:
    """404 for an unknown club; 401 without a token or with one that does not open this club
    (never issued, revoked, or another club's or table's: a bad token, as at a table); 403
    for a token of this club whose role may not do this."""
    loaded = clubs().load(club_id)
    token = bearer()
    if token is None:
        raise Unauthorized("missing_token", "send Authorization: Bearer <a club token>")
    role = clubs().role_of(loaded.club, token)
    if role is None:
        raise Unauthorized("invalid_token", "this token does not open this club (never issued "
                           "here, or revoked)")
    if role not in roles:
        raise Forbidden("role_not_allowed", f"a {role} token may not do this (needs "
                        f"{' or '.join(roles)})")
    return loaded, role


def operator_only() -> None:
    """With LOO_OPERATOR_TOKEN set, creating a club needs that bearer token (401 without it
    or with another, whatever the body)."""
    operator = os.environ.get("LOO_OPERATOR_TOKEN", "")
    if not operator:
        return
    token = bearer()
    if token is None:
        raise Unauthorized("missing_token", "creating a club needs the operator token")
    if not hmac.compare_digest(token.encode(), operator.encode()):
        raise Unauthorized("invalid_token", "creating a club needs the operator token; "
                           "this is not it")


@blp.before_request
def who_calls() -> None:
    """The club and the caller's role come before anything about the body."""
    club_id = (request.view_args or {}).get("club_id")
    if club_id is None:
        if request.method == "POST" and request.url_rule is not None:
            operator_only()  # POST /v1/clubs
        return
    owner_only = request.path.rstrip("/").split("/")[4:5] in (["tokens"], ["webhooks"])
    writes = request.method in ("POST", "PATCH", "DELETE", "PUT")
    caller(club_id, ("owner",) if owner_only else WRITERS if writes else READERS)


def _write(club_id: str, body: dict[str, Any], decide: Any) -> Loaded:
    key = idem.scoped()
    request_hash = idem.fingerprint(None, [bearer() and token_hash(bearer() or ""),
                                           request.get_json(silent=True)]) if key else None
    return clubs().execute(club_id, decide, expected_version=body.get("expected_version"),
                           key=key, request_hash=request_hash)


def query_version() -> dict[str, Any]:
    """The `expected_version` of a write without a JSON body (DELETE, an import), sent as a
    query parameter; the only one these take."""
    f, _, _ = lists.query({"expected_version": lists.whole}, lists.WHOLE)
    return f


def check_version(loaded: Loaded, expected: int | None, repeat: bool) -> None:
    """A stale expected_version is a 409, unless the request repeats one (same
    Idempotency-Key) that already moved the club on."""
    if expected is not None and expected != loaded.version and not repeat:
        raise VersionConflict(loaded.id, expected, loaded.version)


def named(club: cl.Club, f: dict[str, Any]) -> cl.Club:
    """A list's ?season= or ?member= names one of the club's (API.md Lists: a bad value is a
    422, never ignored): unknown_season or unknown_member, as a write naming it answers."""
    if "season" in f:
        cl.known_season(club, f["season"])
    if "member" in f:
        cl.known_member(club, f["member"], field="member")
    return club


def club_out(loaded: Loaded) -> dict[str, Any]:
    """`members` counts the active members (an archived one plays at no new table);
    `archived_members` the others."""
    archived = sum(m.archived for m in loaded.club.members)
    return {"id": loaded.id, "name": loaded.club.name, "version": loaded.version,
            "members": len(loaded.club.members) - archived, "archived_members": archived,
            "tables": len(loaded.club.tables)}


def member_out(m: cl.Member) -> dict[str, Any]:
    return {"id": m.id, "name": m.name, "external_id": m.external_id, "archived": m.archived}


def season_out(s: cl.Season) -> dict[str, Any]:
    return {"id": s.id, "name": s.name, "starts_on": s.starts_on, "ends_on": s.ends_on,
            "closed": s.closed}


@blp.route("")
class ClubsResource(MethodView):
    @blp.arguments(ClubIn)
    @blp.response(201, ClubCreatedOut)
    def post(self, body: dict[str, Any]) -> Any:
        """Create a club; the answer holds its first owner token (shown once). With
        LOO_OPERATOR_TOKEN set, only that bearer token may create clubs."""
        new_stream(body, "club_ (new)")
        key = idem.scoped()
        request_hash = idem.fingerprint(None, request.get_json(silent=True)) if key else None
        loaded, token = clubs().create(body["name"], key, request_hash)
        return ({"id": loaded.id, "name": loaded.club.name, "version": loaded.version,
                 "token": token}, 201, location(f"/v1/clubs/{loaded.id}"))


@blp.route("/<club_id>")
class ClubResource(MethodView):
    @blp.response(200, ClubOut)
    def get(self, club_id: str) -> Any:
        """The club: name, version, how many active members (`members`; `archived_members`
        the archived ones) and tables, and the caller's `role`
        (owner, scorer or viewer: what a page may offer this token)."""
        loaded = clubs().load(club_id)
        return club_out(loaded) | {"role": clubs().role_of(loaded.club, bearer() or "")}


@blp.route("/<club_id>/tokens")
class TokensResource(MethodView):
    @blp.arguments(ClubTokenIn)
    @blp.response(201, ClubTokenCreatedOut)
    def post(self, body: dict[str, Any], club_id: str) -> Any:
        """Issue a token (owner): owner, scorer (tables, hands, members) or viewer (reads)."""
        key = idem.scoped()
        tid = clubs().new_id("tok_", f"token|{club_id}", key)
        token = clubs().new_token(f"token|{club_id}", key)
        _write(club_id, body, lambda club: cl.issue_token(club, tid, body["role"],
                                                          body["label"], token_hash(token)))
        return ({"id": tid, "role": body["role"], "label": body["label"], "token": token}, 201,
                location(f"/v1/clubs/{club_id}/tokens/{tid}"))

    @blp.doc(parameters=lists.params())
    @blp.response(200, ClubTokenListOut)
    def get(self, club_id: str) -> Any:
        """The club's live tokens, without their secrets (owner)."""
        _, limit, offset = lists.query({})
        return lists.page_of(clubs().load(club_id).club.tokens,
                             lambda t: None if t.revoked else token_out(t), limit, offset)


def token_out(t: cl.Token) -> dict[str, Any]:
    return {"id": t.id, "role": t.role, "label": t.label}


@blp.route("/<club_id>/tokens/<token_id>")
class TokenResource(MethodView):
    @blp.response(200, ClubTokenOut)
    def get(self, club_id: str, token_id: str) -> Any:
        """A live token of the club, without its secret (owner); a revoked one is 404, as it
        is gone from the list."""
        return token_out(clubs().load(club_id).club.token(token_id))

    @blp.doc(parameters=lists.params({"expected_version": lists.VERSION}, lists.WHOLE))
    @blp.response(204)
    @blp.alt_response(409, description="last_owner_token: the token is the club's last live "
                                       "owner token (issue another owner token first); or "
                                       "version_conflict, idempotency_conflict")
    def delete(self, club_id: str, token_id: str) -> Any:
        """Revoke a token at once (owner); ?expected_version= and Idempotency-Key as every
        write (a repeat with the key answers 204 again). The club's last live owner token
        is never revoked (409 last_owner_token): only an owner issues tokens."""
        _write(club_id, query_version(), lambda club: cl.revoke_token(club, token_id))
        return ""


def webhook_out(w: cl.Webhook) -> dict[str, Any]:
    off = w.disabled
    return {"id": w.id, "url": w.url, "events": list(w.events), "created_at": w.created_at,
            "status": "disabled" if off else "active", "disabled": off is not None,
            "disabled_reason": off.reason if off else None,
            "disabled_at": off.at if off else None,
            "disabled_position": off.position if off else None}


@blp.route("/<club_id>/webhooks")
class WebhooksResource(MethodView):
    @blp.arguments(WebhookIn)
    @blp.response(201, WebhookCreatedOut)
    def post(self, body: dict[str, Any], club_id: str) -> Any:
        """Add a webhook endpoint (owner): the club's matching events are POSTed to it,
        signed (Standard Webhooks), in position order, at least once. The answer holds its
        signing secret, shown once."""
        from datetime import UTC, datetime

        from ledger.app.webhooks import WebhookConfig, check_url
        from ledger.core import events as ev

        check_url(body["url"], WebhookConfig.from_env().allow_private)
        key = idem.scoped()
        wid = clubs().new_id("wh_", f"webhook|{club_id}", key)
        salt = clubs().new_salt(f"webhook-salt|{club_id}", key)
        hook = ev.WebhookAdded(id=wid, url=body["url"], events=tuple(body["events"]),
                               salt=salt, created_at=datetime.now(UTC).isoformat())
        loaded = _write(club_id, body, lambda club: cl.add_webhook(club, hook))
        secret = clubs().webhook_secret(club_id, wid, loaded.club.webhook(wid).salt)
        return (webhook_out(loaded.club.webhook(wid)) | {"secret": secret}, 201,
                location(f"/v1/clubs/{club_id}/webhooks/{wid}"))

    @blp.doc(parameters=lists.params())
    @blp.response(200, WebhookListOut)
    def get(self, club_id: str) -> Any:
        """The club's webhook endpoints not removed (disabled ones too, with `status`
        "disabled"), without their secrets (owner)."""
        _, limit, offset = lists.query({})
        return lists.page_of(clubs().load(club_id).club.webhooks,
                             lambda w: None if w.removed else webhook_out(w), limit, offset)


@blp.route("/<club_id>/webhooks/<webhook_id>")
class WebhookResource(MethodView):
    @blp.response(200, WebhookOut)
    def get(self, club_id: str, webhook_id: str) -> Any:
        return webhook_out(clubs().load(club_id).club.webhook(webhook_id))

    @blp.doc(parameters=lists.params({"expected_version": lists.VERSION}, lists.WHOLE))
    @blp.response(204)
    def delete(self, club_id: str, webhook_id: str) -> Any:
        """Remove an endpoint (owner): nothing more is delivered to it. ?expected_version=
        and Idempotency-Key as every write (a repeat with the key answers 204 again)."""
        _write(club_id, query_version(), lambda club: cl.remove_webhook(club, webhook_id))
        return ""


@blp.route("/<club_id>/webhooks/<webhook_id>/enable")
class WebhookEnableResource(MethodView):
    @blp.arguments(WriteIn)
    @blp.response(200, WebhookOut)
    def post(self, body: dict[str, Any], club_id: str, webhook_id: str) -> Any:
        """Enable a disabled endpoint again (owner): one whose receiver answered 410 Gone is
        disabled by the delivery worker (`status` "disabled", `disabled_reason`); this
        appends `webhook_enabled` and delivery resumes with the message answered 410,
        nothing skipped. An endpoint that is not disabled is answered as it is (nothing
        appended). expected_version and Idempotency-Key as every write."""
        loaded = _write(club_id, body, lambda club: cl.enable_webhook(club, webhook_id))
        return webhook_out(loaded.club.webhook(webhook_id))


@blp.route("/<club_id>/webhooks/<webhook_id>/deliveries")
class DeliveriesResource(MethodView):
    @blp.doc(parameters=lists.params())
    @blp.response(200, DeliveryListOut)
    def get(self, club_id: str, webhook_id: str) -> Any:
        """The endpoint's delivery attempts, oldest first: `event`, `position`,
        `message_id` (the webhook-id header), `status` (the HTTP status, or timeout /
        refused / blocked / error), `attempt` (of that message), `duration_ms`, `at`."""
        _, limit, offset = lists.query({})
        found = [w for w in clubs().load(club_id).club.webhooks if w.id == webhook_id]
        if not found:
            from ledger.core.errors import NotFound

            raise NotFound("webhook_not_found", f"this club has no webhook {webhook_id}")
        rows = clubs().webhook_deliveries(webhook_id, offset, limit + 1)
        if offset and not rows:  # (a cursor is given out only while attempts follow it)
            lists.within(offset, 0)
        return {"items": rows[:limit],
                "next": lists.cursor(offset + limit) if len(rows) > limit else None}


EXTERNAL_ID = lists.TEXT | {"description": "a membership number, matched whatever its case"}


@blp.route("/<club_id>/members")
class MembersResource(MethodView):
    @blp.arguments(MemberIn)
    @blp.response(201, MemberOut)
    def post(self, body: dict[str, Any], club_id: str) -> Any:
        """Add a member (owner or scorer); external_id is unique in the club whatever its case
        (409 duplicate_external_id: "abc-7" when "ABC-7" is taken); it keeps its spelling."""
        mid = clubs().new_id("mem_", f"member|{club_id}", idem.scoped())
        loaded = _write(club_id, body, lambda club: cl.join(club, mid, body["name"],
                                                             body["external_id"]))
        return (member_out(loaded.club.member(mid)), 201,
                location(f"/v1/clubs/{club_id}/members/{mid}"))

    @blp.doc(parameters=lists.params({"q": lists.TEXT, "archived": lists.BOOLEAN,
                                      "external_id": EXTERNAL_ID}))
    @blp.response(200, MemberListOut)
    def get(self, club_id: str) -> Any:
        """Members, oldest first; ?q= searches names, ?archived=true|false, ?external_id=
        finds the member with that membership number (in any case: "abc-7" finds "ABC-7")."""
        f, limit, offset = lists.query({"q": lists.text, "archived": lists.boolean,
                                        "external_id": lists.text})
        q = f.get("q", "").casefold()
        return lists.page_of(
            clubs().load(club_id).club.members,
            lambda m: member_out(m) if q in m.name.casefold()
            and ("archived" not in f or m.archived == f["archived"])
            and ("external_id" not in f or cl.same_external_id(m.external_id,
                                                                f["external_id"]))
            else None, limit, offset)


@blp.route("/<club_id>/members/<member_id>")
class MemberResource(MethodView):
    @blp.response(200, MemberOut)
    def get(self, club_id: str, member_id: str) -> Any:
        return member_out(clubs().load(club_id).club.member(member_id))

    @blp.arguments(MemberPatchIn)
    @blp.response(200, MemberOut)
    def patch(self, body: dict[str, Any], club_id: str, member_id: str) -> Any:
        """Rename a member (owner or scorer)."""
        loaded = _write(club_id, body, lambda club: cl.rename(club, member_id, body["name"]))
        return member_out(loaded.club.member(member_id))


@blp.route("/<club_id>/members/<member_id>/archive")
class ArchiveResource(MethodView):
    @blp.arguments(WriteIn)
    @blp.response(200, MemberOut)
    def post(self, body: dict[str, Any], club_id: str, member_id: str) -> Any:
        """Archive a member (never deleted): no new tables, history kept."""
        loaded = _write(club_id, body, lambda club: cl.archive(club, member_id))
        return member_out(loaded.club.member(member_id))


@blp.route("/<club_id>/seasons")
class SeasonsResource(MethodView):
    @blp.arguments(SeasonIn)
    @blp.response(201, SeasonOut)
    def post(self, body: dict[str, Any], club_id: str) -> Any:
        """Start a season (owner or scorer)."""
        sid = clubs().new_id("sea_", f"season|{club_id}", idem.scoped())
        ends = body["ends_on"].isoformat() if body["ends_on"] else None
        loaded = _write(club_id, body, lambda club: cl.start_season(
            club, sid, body["name"], body["starts_on"].isoformat(), ends))
        return (season_out(loaded.club.season(sid)), 201,
                location(f"/v1/clubs/{club_id}/seasons/{sid}"))

    @blp.doc(parameters=lists.params({"closed": lists.BOOLEAN}))
    @blp.response(200, SeasonListOut)
    def get(self, club_id: str) -> Any:
        """Seasons, oldest first; ?closed=true|false."""
        f, limit, offset = lists.query({"closed": lists.boolean})
        return lists.page_of(
            clubs().load(club_id).club.seasons,
            lambda s: season_out(s) if "closed" not in f or s.closed == f["closed"] else None,
            limit, offset)


@blp.route("/<club_id>/seasons/<season_id>")
class SeasonResource(MethodView):
    @blp.response(200, SeasonOut)
    def get(self, club_id: str, season_id: str) -> Any:
        """A season of the club (closed ones too)."""
        return season_out(clubs().load(club_id).club.season(season_id))


@blp.route("/<club_id>/seasons/<season_id>/close")
class SeasonCloseResource(MethodView):
    @blp.arguments(WriteIn)
    @blp.response(200, SeasonOut)
    def post(self, body: dict[str, Any], club_id: str, season_id: str) -> Any:
        """End a season: no new tables in it. A season closed already is answered as it is
        (200, nothing appended): a retried close is harmless."""
        loaded = _write(club_id, body, lambda club: cl.close_season(club, season_id))
        return season_out(loaded.club.season(season_id))


def _seat_name(club: Any, i: int, seat: dict[str, Any]) -> str:
    """A member's seat takes the member's name (API.md Club tables); a seat that names a
    member and another name is refused rather than seated under a name the scorer did not
    write. The member's own name beside it (a seat copied from a table's listing) is fine."""
    if not seat.get("member"):
        return str(seat["name"])
    name = club.member(seat["member"]).name
    if seat.get("name") is not None and seat["name"] != name:
        raise Invalid("seat_name_not_members", f"seat {i} names member {seat['member']} "
                      f"({name!r}) and the name {seat['name']!r}: a member's seat takes the "
                      'member\'s name; leave "name" out, or give that one',
                      field=f"seats.{i}.name")
    return str(name)


@blp.route("/<club_id>/tables")
class ClubTablesResource(MethodView):
    @blp.arguments(ClubTableIn)
    @blp.response(201, CreatedOut)
    def post(self, body: dict[str, Any], club_id: str) -> Any:
        """A club table (owner or scorer): the body of POST /v1/tables plus "season", and
        seats that may name {"member": mid}. Club owner and scorer tokens act as its admin."""
        loaded = clubs().load(club_id)
        key, request_hash = creation_key(club_id)
        # Checked here first for the seats' names (a stale version answered before a seat);
        # create_table checks again on the club version its listing is appended at.
        check_version(loaded, body["expected_version"], key is not None and ledger(
            ).idempotent_result(ledger().keyed_table_id(key), key) is not None)
        members = tuple(s.get("member") for s in body["seats"])
        cl.check_table(loaded.club, body["season"], members)
        seats = tuple((_seat_name(loaded.club, i, s), s.get("bot"))
                      for i, s in enumerate(body["seats"]))
        cmd = c.CreateTable(variant=body["variant"], scoring=body["scoring"], seats=seats,
                            first_dealer=body["first_dealer"], deal=body["deal"],
                            options=body["options"], club=club_id, season=body["season"],
                            members=members)
        # The table and its listing in the club's stream commit together, at the club's
        # version the checks were made on (expected_version holds for both).
        table_id, tokens, p = clubs().create_table(
            club_id, cmd, expected_version=body["expected_version"], key=key,
            request_hash=request_hash)
        p = as_first_answered(table_id, p, key)
        return created(table_id, tokens, p, seats, members), 201, location(
            f"/v1/tables/{table_id}")

    @blp.doc(parameters=lists.params({
        "status": lists.enum("playing", "finished", "closed"), "season": lists.TEXT,
        "member": lists.TEXT, "variant": lists.enum("loo", "rounce"),
        "scoring": lists.enum("pool", "points")}))
    @blp.response(200, ClubTableListOut)
    def get(self, club_id: str) -> Any:
        """The club's tables, oldest first; ?status= &season= &member= &variant= &scoring=."""
        f, limit, offset = lists.query({
            "status": lists.one_of("playing", "finished", "closed"), "season": lists.text,
            "member": lists.text, "variant": lists.one_of("loo", "rounce"),
            "scoring": lists.one_of("pool", "points")})
        club = named(clubs().load(club_id).club, f)
        led = ledger()

        def listed(link: Any) -> dict[str, Any] | None:  # (a ClubTableAdded)
            if f.get("season", link.season) != link.season \
                    or f.get("variant", link.variant) != link.variant \
                    or f.get("scoring", link.scoring) != link.scoring \
                    or ("member" in f and f["member"] not in link.members):
                return None
            t = led.load(link.table_id).table
            if f.get("status", t.status) != t.status:
                return None
            return {"id": link.table_id, "variant": link.variant, "scoring": link.scoring,
                    "status": t.status, "season": link.season,
                    "created_at": link.created_at, "hands": settled_hands(t),
                    "seats": [{"seat": s, "name": t.names[s], "member": link.members[s]}
                              for s in range(t.players)]}

        return lists.page_of(club.tables, listed, limit, offset)


IMPORT_BODY = {"required": True, "content": {
    "application/json": {"schema": {
        "type": "object", "description": "One loo-hh 1.0 file (the JSON Schema is served at "
                                         "GET /v1/schemas/loo-hh-1.0.json)"}},
    "application/x-ndjson": {"schema": {
        "type": "string", "description": "One table's loo-hh hands, one JSON document a "
                                         "line, from hand 1"}}}}


@blp.route("/<club_id>/tables/import")
class ImportResource(MethodView):
    @blp.doc(parameters=lists.params({"expected_version": lists.VERSION}, lists.WHOLE))
    @blp.doc(requestBody=IMPORT_BODY)
    @blp.response(201, CreatedOut)
    @blp.alt_response(422, description="import_refused: the file is not loo-hh, or a hand in "
                                       "it breaks a rule (named with its action); or a seat "
                                       "names a member that is not this club's "
                                       "(unknown_member), archived (member_archived) or at "
                                       "two seats (duplicate_member); nothing was created")
    def post(self, club_id: str) -> Any:
        """Import loo-hh files (one JSON file, or NDJSON of one table's hands from hand 1) as
        a new recorded (or results) club table (owner or scorer): every hand is checked by the
        rules as if entered live; an illegal file is refused whole (422 naming the hand and
        action) and nothing is created. A seat naming a `member` (table.seats[].member of the
        first hand's file) keeps it, so the table counts in the standings, as a club table
        created with that member would; one that is not a live member of this club is
        refused as at a table's creation (422 unknown_member or member_archived): remove
        the seat's `member` from the file to import that seat unlinked."""
        from dataclasses import replace

        from ledger.app.imports import ImportRefused, plan
        from ledger.app.verify import NotJson, VerifyError, documents
        from ledger.core.errors import BadRequest

        expected = query_version().get("expected_version")
        try:
            the_plan = plan(storable(doc, f"line {n}") or (n, doc)
                            for n, doc in documents(io.BytesIO(request.get_data())))
        except NotJson as err:  # API.md Conventions: 400 malformed JSON, naming the line
            raise BadRequest("malformed_json", str(err)) from None
        except VerifyError as err:
            raise ImportRefused("import_refused", str(err)) from None
        the_plan = replace(the_plan, create=replace(the_plan.create, club=club_id,
                                                    members=the_plan.members))
        key = idem.scoped(club_id)
        request_hash = None if key is None else idem.fingerprint(
            None, [bearer() and token_hash(bearer() or ""),
                   hashlib.sha256(request.get_data()).hexdigest()])
        # The table and its listing in the club's stream commit together (create_table).
        table_id, tokens, p = clubs().import_table(club_id, the_plan, expected_version=expected,
                                                   key=key, request_hash=request_hash)
        members = p.table.members or (None,) * p.table.players
        names = tuple((n, None) for n in p.table.names)
        return created(table_id, tokens, p, names, members,
                       hands=len(the_plan.hands)), 201, location(f"/v1/tables/{table_id}")


def settled_hands(t: Any) -> int:
    """Hands settled at the table and not voided (the live hand not yet)."""
    if t.hand is None:
        return 0
    return t.hand.number - (0 if t.settled else 1) - len(t.voided)


CSV_FIELDS = ("rank", "member", "name", "tables", "hands", "chips", "points", "games_won",
              "tricks", "loos", "looed_chips")


def inert(value: Any) -> Any:
    """A spreadsheet must not run a cell: text starting = + - @ (or tab, CR) gets a quote."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def document(paths: dict[str, Any]) -> None:
    """The standings' 200 is JSON or, asked for, CSV: say both."""
    ok = paths["/v1/clubs/{club_id}/standings"]["get"]["responses"]["200"]
    ok.setdefault("content", {})["text/csv"] = {"schema": {
        "type": "string", "description": "the same rows as CSV, with a header line"}}


def asks_for_csv(accept: str) -> bool:
    """Whether an Accept header asks for CSV over JSON: text/csv named (a wildcard is no
    request for CSV) and weighed above application/json. A media type's name is
    case-insensitive and may carry parameters (RFC 9110 §12.5.1; text/csv's are charset and
    header, RFC 4180): `TEXT/CSV` and `text/csv; charset=utf-8` ask for CSV as `text/csv`
    does, so each range is weighed by its type and q only."""
    from werkzeug.datastructures import MIMEAccept
    from werkzeug.http import parse_accept_header

    ranges = []
    for part in accept.split(","):
        media, *params = (p.strip() for p in part.split(";"))
        q = next((p for p in params if p[:2].lower() == "q="), None)
        if media:
            ranges.append(media.lower() + (f";{q.lower()}" if q else ""))
    asked = parse_accept_header(", ".join(ranges), MIMEAccept)
    return any(r.split(";")[0] == "text/csv" for r in ranges) and asked.best_match(
        ["application/json", "text/csv"]) == "text/csv"


@blp.route("/<club_id>/standings")
class StandingsResource(MethodView):
    @blp.doc(parameters=lists.params({
        "season": lists.TEXT, "variant": lists.enum("loo", "rounce"),
        "scoring": lists.enum("pool", "points"), "format": lists.enum("json", "csv")},
        lists.WHOLE))
    @blp.response(200, StandingsOut)
    def get(self, club_id: str) -> Any:
        """The league table: one row per active member (zeros for one who has not played
        in the view; an archived member where they played), from the events of the club's
        tables; Accept: text/csv (or ?format=csv) gives the same rows as CSV.

        Loo for points counts up from 0 (the highest wins), Rounce down from its target
        (the lowest wins). A view holding points tables of both (`mixed_points`)
        counts each Rounce table's points as its target minus its score, the points made
        toward winning (+1 a trick, -5 rounced), so `points` is higher-is-better across the
        row and ranks most first; a view of Rounce tables only keeps Rounce's scores, the
        fewest first. The member ledger in the same view counts alike."""
        f, _, _ = lists.query({"season": lists.text, "variant": lists.one_of("loo", "rounce"),
                               "scoring": lists.one_of("pool", "points"),
                               "format": lists.one_of("json", "csv")},
                               lists.WHOLE)
        out = clubs().standings(clubs().load(club_id), f.get("season"), f.get("variant"),
                                f.get("scoring"))
        wants_csv = f.get("format") == "csv" or (
            "format" not in f and asks_for_csv(request.headers.get("Accept", "")))
        if not wants_csv:
            return out
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(CSV_FIELDS)
        for row in out["rows"]:
            w.writerow([inert(row[k]) for k in CSV_FIELDS])
        return Response(buf.getvalue(), mimetype="text/csv",
                        headers={"Content-Disposition": "attachment; filename=standings.csv"})


@blp.route("/<club_id>/history")
class ClubHistoryResource(MethodView):
    @blp.doc(parameters=lists.params(
        {"season": lists.TEXT, "since": lists.DATE, "until": lists.DATE}, lists.WHOLE))
    @blp.response(200, {"type": "string", "description": "NDJSON: one loo-hh 1.0 file a line"},
                  description="One loo-hh 1.0 file per line, streamed",
                  content_type="application/x-ndjson")
    def get(self, club_id: str) -> Any:
        """Every complete hand of the club's tables as NDJSON (one loo-hh file a line), table
        by table in the order they were created; ?season= picks a season's tables, ?since= and
        ?until= (dates, inclusive) the tables created in that range."""
        from ledger.api.history import ndjson
        from ledger.app.history import table_history_ndjson

        def day(raw: str) -> str:
            return parse_day(raw).isoformat()

        f, _, _ = lists.query({"season": lists.text, "since": day, "until": day}, lists.WHOLE)
        if f.get("since", "") > f.get("until", "9999-12-31"):  # a range nothing can be in
            raise Invalid("invalid_filter", f"until {f['until']} is before since {f['since']}: "
                          "the range is inclusive, since first", field="until")
        links = [t for t in named(clubs().load(club_id).club, f).tables
                 if f.get("season", t.season) == t.season
                 and f.get("since", "") <= t.created_at[:10]
                 and t.created_at[:10] <= f.get("until", "9999-12-31")]
        led = ledger()

        def lines() -> Iterator[bytes]:
            for link in links:
                up_to = led.version(link.table_id)
                checkpoints = led.checkpoints(link.table_id, up_to)
                yield from table_history_ndjson(
                    link.table_id, lambda a, b, t=link.table_id: led.raw_events(t, a, b),
                    up_to, checkpoints)

        return ndjson(lines())


@blp.route("/<club_id>/events")
class ClubFeedResource(MethodView):
    @blp.doc(parameters=lists.params({
        "after": lists.POSITION,
        "latest": {"type": "integer", "minimum": 1, "maximum": lists.MAX_LIMIT,
                   "description": "the club's n most recent events (oldest of them first), "
                                  "however long ago they happened; `next` follows on from "
                                  "them, `earlier` reads back. Without ?after=, ?before= "
                                  "or ?limit= (it is the page's size); JSON only (read it, "
                                  "then stream with ?after=<next>)"},
        "before": lists.POSITION | {
            "minimum": 1,
            "description": "the club's last ?limit= events before this position (oldest of "
                           "them first): a page's `earlier`, to read back. Not with ?after=; "
                           "JSON only (a stream goes forward)"}}, lists.BY_LIMIT))
    @blp.response(200, ClubFeedOut)
    def get(self, club_id: str) -> Any:
        """The club's feed (any club token): its own stream and all its tables' events in
        global position order, as a spectator sees them (no tile of a live hand), each with
        `stream` ("club" or the table id). Follow it with ?after=<the answer's next>, or
        with Accept: text/event-stream as Server-Sent Events (see /docs/http, Feeds).

        The page is both a feed page (`events`, as the table's feed) and a list page
        (`items`, the same events: /docs/http, Lists). A feed has no last page, so `next` is
        never null: it is the position to ask ?after= next, that of the page's last event,
        and equals ?after= when nothing new has come (ask again later). The store picks
        the club's events however many other clubs' events lie between them, so a page
        is short or empty only when the feed has nothing more yet.

        ?latest=n reads from the other end: the club's n most recent events, however long
        ago they happened, in the same order (oldest first), with `next` the position read
        up to (the head: ?after= it follows on, missing nothing) and `earlier` the position
        to ask ?before= for the events before them (null: they begin with the club's
        first). ?before=<position>&limit=n is the page before, answered the same way."""
        f, limit, _ = lists.query({"after": _position, "latest": _latest,
                                   "before": _position}, lists.BY_LIMIT)
        _one_way(f)
        loaded = clubs().load(club_id)
        tables = {t.table_id for t in loaded.club.tables}
        from ledger.app.feed import club_feed, club_page, club_page_before

        if feeds.wants_sse():
            from ledger.app.feed import ClubSource

            feeds.forward_only(f)
            led = ledger()
            source = ClubSource(led, club_id, tables)
            token, the_clubs = bearer() or "", clubs()
            source.still_allowed = lambda: the_clubs.role_of(  # type: ignore[attr-defined]
                the_clubs.load(club_id).club, token) is not None
            return feeds.stream(led, source, feeds.start_position(f.get("after", 0)),
                                feeds.sent_limit(limit))
        if "latest" in f or "before" in f:
            back = club_page_before(ledger(), club_id, tables, f.get("before"),
                                    f.get("latest", limit))
            events = club_feed(ledger(), club_id, back.events)
            return {"items": events, "events": events, "next": back.up_to,
                    "earlier": back.earlier}
        after = f.get("after", 0)
        found = club_page(ledger(), club_id, tables, after, limit)
        position = found[-1].position if found else after

        events = club_feed(ledger(), club_id, found)
        return {"items": events, "events": events, "next": position}


def _latest(raw: str) -> int:
    if not lists.digits(raw) or len(raw) > 3 or not 1 <= int(raw) <= lists.MAX_LIMIT:
        raise ValueError(f"a whole number from 1 to {lists.MAX_LIMIT}: how many of the "
                         "club's latest events")
    return int(raw)


def _one_way(f: dict[str, Any]) -> None:
    """?after= reads forward, ?before= back, ?latest= back from the head: one at a time."""
    feeds.one_way(request.args)
    if f.get("before") == 0:
        raise Invalid("invalid_filter", "before must be a position from 1: no event lies "
                      "before position 0", field="before")


def _position(raw: str) -> int:
    if not raw.isdigit() or not raw.isascii() or int(raw) > 2**63 - 1:
        raise ValueError("a position: a whole number >= 0")
    return int(raw)


@blp.route("/<club_id>/members/<member_id>/ledger")
class MemberLedgerResource(MethodView):
    @blp.doc(parameters=lists.params({
        "season": lists.TEXT, "variant": lists.enum("loo", "rounce"),
        "scoring": lists.enum("pool", "points")}))
    @blp.response(200, MemberLedgerOut)
    def get(self, club_id: str, member_id: str) -> Any:
        """The transfers and scores behind a member's row, each with table, hand, version:
        ?season=, ?variant= and ?scoring= pick the tables as the standings' filters do, so
        the `counted` of its starts and scores add up to the row's `points` in that view.
        `transfers`, `scores` and `starts` are whole; `items` is the same entries as one list
        paged like every list (/docs/http, Lists: ?limit=, ?cursor=, `next`), in the order they
        came into the member's ledger."""
        f, limit, offset = lists.query({
            "season": lists.text, "variant": lists.one_of("loo", "rounce"),
            "scoring": lists.one_of("pool", "points")})
        book = clubs().member_ledger(clubs().load(club_id), member_id, f.get("season"),
                                     f.get("variant"), f.get("scoring"))
        return book | lists.page(book["items"], limit, offset)
