"""Response shapes for the OpenAPI spec (extra fields are allowed by the contract)."""

from __future__ import annotations

from typing import Any

from marshmallow import INCLUDE, Schema, fields, post_dump, validate

from ledger.core.events import REGISTRY

# A list page's `next` (API.md Lists).
NEXT_CURSOR = ("the next page's cursor, null on the last page: opaque (sealed by the service), "
               "sent back as ?cursor= as it is")


class Open(Schema):
    """Documents the contract's fields and keeps the extra ones ("extra fields are fine")."""

    class Meta:
        unknown = INCLUDE  # so the spec says additionalProperties: true

    @post_dump(pass_original=True)
    def keep_extra(self, data: dict[str, Any], original: Any, **_kw: Any) -> dict[str, Any]:
        if isinstance(original, dict):
            for key, value in original.items():
                data.setdefault(key, value)
        return data


class SeatOut(Open):
    seat = fields.Integer(required=True)
    name = fields.String(required=True)
    bot = fields.String(allow_none=True, required=True)
    score = fields.Integer(required=True)
    balance = fields.Integer(required=True)
    tricks = fields.Integer()


class TrickOut(Open):
    leader = fields.Integer(required=True)
    suit = fields.Integer(required=True)
    plays = fields.List(fields.Dict(), required=True)
    winner = fields.Integer(allow_none=True, required=True)


class HandOut(Open):
    number = fields.Integer(required=True)
    phase = fields.String(required=True)
    dealer = fields.Integer(required=True)
    turn = fields.Integer(allow_none=True, required=True)
    turn_up = fields.String(allow_none=True, required=True)
    trump = fields.Integer(allow_none=True, required=True)
    decisions = fields.Dict(keys=fields.String(), values=fields.String(), required=True)
    for_pool = fields.Boolean(required=True)
    pool_at_start = fields.Integer(required=True)
    hands = fields.Dict(keys=fields.String(), values=fields.Raw(), required=True)
    tricks = fields.List(fields.Nested(TrickOut), required=True)
    tricks_won = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True)
    turn_up_taken = fields.Boolean(required=True)
    voided = fields.Boolean(metadata={
        "description": "the hand has been voided (/docs/http, Corrections): it stays in the "
                       "record, replay and exports, marked so"})


class TableOut(Open):
    id = fields.String(required=True)
    variant = fields.String(required=True)
    scoring = fields.String(required=True)
    deal = fields.String()
    options = fields.Dict(required=True)
    version = fields.Integer(required=True)
    status = fields.String(required=True)
    dealer = fields.Integer(allow_none=True, required=True)
    pool = fields.Integer(required=True)
    seats = fields.List(fields.Nested(SeatOut), required=True)
    winner = fields.Integer(allow_none=True, required=True)
    hand = fields.Nested(HandOut, allow_none=True, required=True)
    legal_actions = fields.List(fields.Dict(), required=True, metadata={
        "description": "For the caller's seat when it is that seat's turn (the admin: the "
                       "seat to act, with \"seat\"): every action body that would be "
                       "accepted now, each ready to POST to /actions."})
    to_complete = fields.List(fields.Dict(), required=True, metadata={
        "description": "Action bodies open to the same caller that no list can give ready to "
                       "send: on a recorded table whose miss draws part of the boneyard "
                       "(2-3 players, rule 4), the miss as {\"type\": \"decide\", "
                       "\"choice\": \"miss\", \"drawn\": {\"count\": n}}: send it with "
                       "\"drawn\" the n tiles really drawn. Otherwise []."})
    timers_idle = fields.Boolean(required=True, metadata={
        "description": "Turn timers (options.turn_seconds) are resting: in the last complete "
                       "hand every person's turn timed out, so no timer acts until a person "
                       "(or the admin for a seat) acts or the admin starts a hand; the table "
                       "waits for its players. Always false without turn timers."})


class SeatTokenOut(Open):
    seat = fields.Integer(required=True)
    name = fields.String(required=True)
    bot = fields.String(allow_none=True, required=True)
    token = fields.String(required=True, metadata={"description": "the seat's token, shown "
                                                                 "once (only here)"})
    member = fields.String(allow_none=True, metadata={
        "description": "a club table's: the member at the seat, or null"})


class CreatedOut(Open):
    id = fields.String(required=True)
    admin_token = fields.String(required=True, metadata={"description": "shown once (only "
                                                                        "here)"})
    seats = fields.List(fields.Nested(SeatTokenOut), required=True)
    version = fields.Integer(required=True)
    table = fields.Nested(TableOut, required=True)


class EventOut(Open):
    version = fields.Integer(required=True)
    position = fields.Integer(required=True)
    type = fields.String(required=True, metadata={
        "description": "the event catalogue (/docs/http): " + ", ".join(sorted(REGISTRY)) + ". "
                       "turn_timed_out {seat, seconds}: the seat to act let options."
                       "turn_seconds pass; the events of the action the service took for it "
                       "follow (drop where allowed, else its lowest legal play; a discard "
                       "puts out its lowest tiles). timers_woken {}: the table's turn timers "
                       "rested (timers_idle) and its admin started the hand auto_deal had "
                       "dealt: the seat to act is on the clock again, from this event"})
    hand = fields.Integer(allow_none=True, required=True)
    data = fields.Dict(required=True)
    recorded_at = fields.String(required=True)
    causation = fields.String(allow_none=True, required=True)
    hash = fields.String(required=True, allow_none=True, metadata={
        "description": "sha256 of prev_hash + the event; null for a seat token while the "
                       "event's hand is live, from its deal on (it would give hidden tiles "
                       "away)"})
    prev_hash = fields.String(allow_none=True, required=True)
    checkpoint = fields.Nested(lambda: CheckpointOut(), metadata={
        "description": "on the event that ends a settled hand (hand_settled, or game_won "
                       "when the hand won the game), a hand_voided and a table_closed: the "
                       "signed checkpoint naming it (/docs/http, Checkpoints)"})


class ActionOut(Open):
    version = fields.Integer(required=True)
    seat = fields.Integer(metadata={"description": "the admin's: the seat acted for"})
    events = fields.List(fields.Nested(EventOut), required=True)
    table = fields.Nested(TableOut, required=True)


class EventsOut(Open):
    events = fields.List(fields.Nested(EventOut), required=True)
    next = fields.Integer(required=True, metadata={
        "description": "the version to ask ?after= next: the page's last event's, and "
                       "?after= itself when there is nothing after it. With ?latest= or "
                       "?before=, the version the page reads up to (the table's last as read, "
                       "or before - 1): ?after= it follows on from the page's events, missing "
                       "none"})
    earlier = fields.Integer(allow_none=True, metadata={
        "description": "with ?latest= or ?before= only: the version to ask ?before= for the "
                       "table's events before this page's (that of its first event); null "
                       "when the page begins with the table's first event"})


class HandRecordOut(Open):
    number = fields.Integer(required=True)
    complete = fields.Boolean(required=True)
    settled = fields.Boolean()
    hand = fields.Nested(HandOut, required=True)
    events = fields.List(fields.Nested(EventOut), required=True)


class ReplayStateOut(Open):
    pool = fields.Integer(required=True)
    balances = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True)
    scores = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True,
                         metadata={"description": "each seat's score as the table view's "
                                   "seats[].score shows it: points, or at a pool table the "
                                   "chip balance"})
    dealer = fields.Integer(allow_none=True, required=True)
    status = fields.String(required=True)
    hand = fields.Nested(HandOut, allow_none=True, required=True, metadata={
        "description": "hand n with every tile; null at step 0 (before its first event)"})


class ReplayOut(Open):
    step = fields.Integer(required=True)
    steps = fields.Integer(required=True)
    voided = fields.Boolean(metadata={
        "description": "the hand has been voided (see /docs/http, Corrections), at every step"})
    event = fields.Nested(EventOut, allow_none=True, required=True)
    state = fields.Nested(ReplayStateOut, required=True)


class TransferOut(Open):
    hand = fields.Integer(allow_none=True, required=True)
    version = fields.Integer(required=True)
    from_ = fields.String(attribute="from", data_key="from", required=True)
    to = fields.String(required=True)
    amount = fields.Integer(validate=validate.Range(min=1), required=True)
    reason = fields.String(required=True, validate=validate.OneOf(
        ["ante", "dealer_ante", "trick", "loo", "pool_award", "void"]), metadata={
            "description": "void: a transfer that gives back one of a voided hand's "
                           "(see /docs/http, Corrections)"})
    uncapped = fields.Integer(metadata={"description": "loo: the penalty before any cap"})
    cap = fields.Integer(allow_none=True, metadata={"description": "loo: the cap applied"})


class ScoreOut(Open):
    hand = fields.Integer(allow_none=True, required=True)
    version = fields.Integer(required=True)
    seat = fields.Integer(required=True)
    delta = fields.Integer(required=True)
    reason = fields.String(required=True, validate=validate.OneOf(
        ["trick", "loo", "rounce", "won_without_play", "void"]), metadata={
            "description": "void: a voided hand's score given back (see /docs/http, "
                           "Corrections)"})


class LedgerItemOut(Open):
    """One entry of a page of a table's ledger: a transfer (pool games) or a score (points
    games), as in `transfers` or `scores`."""

    hand = fields.Integer(allow_none=True, required=True)
    version = fields.Integer(required=True)
    reason = fields.String(required=True)
    from_ = fields.String(attribute="from", data_key="from",
                          metadata={"description": "transfer: `seat:N` or `pool`"})
    to = fields.String(metadata={"description": "transfer: `seat:N` or `pool`"})
    amount = fields.Integer(metadata={"description": "transfer: chips, at least 1"})
    seat = fields.Integer(metadata={"description": "score: whose"})
    delta = fields.Integer(metadata={"description": "score: the points it adds"})


class LedgerOut(Open):
    """API.md Audit's ledger, whole; with ?limit= or ?cursor= a page of it (a list as every
    list is: `items` and `next`), `transfers` (points games: `scores`) that page too."""

    transfers = fields.List(fields.Nested(TransferOut), required=True)
    balances = fields.Dict(keys=fields.String(), values=fields.Integer(), required=True)
    scores = fields.List(fields.Nested(ScoreOut))
    totals = fields.Dict(keys=fields.String(), values=fields.Integer())
    items = fields.List(fields.Nested(LedgerItemOut), metadata={
        "description": "only in a page (?limit= or ?cursor=): its transfers (points games: "
                       "scores), the same as `transfers` (`scores`)"})
    next = fields.String(allow_none=True, metadata={
        "description": "only in a page (?limit= or ?cursor=): the cursor of the next page, "
                       "null on the last"})

    def get_attribute(self, obj: Any, attr: str, default: Any) -> Any:
        """A key of the answer, never a method of the dict (`items` is only in a page)."""
        if isinstance(obj, dict):
            return obj.get(attr, default)
        return super().get_attribute(obj, attr, default)


CHECK = {"description": "true, or a sentence naming the first failure found"}


class ChecksOut(Open):
    hash_chain = fields.Raw(metadata=CHECK, required=True)
    replay_matches = fields.Raw(metadata=CHECK, required=True)
    chips_conserved = fields.Raw(metadata=CHECK, required=True)
    plays_legal = fields.Raw(metadata=CHECK, required=True)
    deals_match_commitments = fields.Raw(metadata=CHECK, required=True)
    checkpoints = fields.Raw(metadata=CHECK, required=True)


class CheckpointOut(Open):
    """A signed head of the table's hash chain (API.md Checkpoints): one after every settled
    hand (its hand_settled, or game_won when the hand won the game), every void (its
    hand_voided) and the table's close (table_closed); `version` and `hash` name that event."""

    table = fields.String(required=True)
    version = fields.Integer(required=True)
    hash = fields.String(required=True)
    at = fields.String(required=True)
    signature = fields.String(required=True, metadata={
        "description": "base64 Ed25519 signature over the canonical JSON (keys sorted, "
                       "separators , and :, UTF-8) of {table, version, hash, at}"})
    alg = fields.String()
    key_id = fields.String(metadata={
        "description": "the id of the key that signed it (not signed itself): one of the keys "
                       "GET /v1/checkpoints/key lists"})
    position = fields.Integer(metadata={"description": "global position of the event it names "
                                                       "(not signed)"})


class CheckpointsOut(Open):
    items = fields.List(fields.Nested(CheckpointOut), required=True)
    next = fields.String(allow_none=True, required=True)


class TrustedKeyOut(Open):
    alg = fields.String(required=True)
    public_key = fields.String(required=True, metadata={"description": "base64, 32 bytes"})
    key_id = fields.String(required=True, metadata={
        "description": "the first 16 hex digits of SHA-256 of the raw public key: a "
                       "checkpoint's key_id names the key it was signed with"})
    current = fields.Boolean(required=True, metadata={
        "description": "true for the key signing now; false for a key retired by a rotation "
                       "(LOO_CHECKPOINT_RETIRED_KEYS), whose checkpoints still verify"})


class RevokedKeyOut(Open):
    alg = fields.String(required=True)
    public_key = fields.String(required=True, metadata={"description": "base64, 32 bytes"})
    key_id = fields.String(required=True)


class CheckpointKeyOut(Open):
    alg = fields.String(required=True)
    public_key = fields.String(required=True, metadata={
        "description": "the current key: base64, 32 bytes"})
    key_id = fields.String(required=True, metadata={"description": "the current key's id"})
    keys = fields.List(fields.Nested(TrustedKeyOut), required=True, metadata={
        "description": "every key a checkpoint of this service may be signed with, the "
                       "current one first: check a checkpoint with the key its key_id names"})
    revoked = fields.List(fields.Nested(RevokedKeyOut), metadata={
        "description": "keys revoked because they leaked (LOO_CHECKPOINT_REVOKED_KEYS): "
                       "whoever holds one can sign any head, so a checkpoint signed with one "
                       "proves nothing and is refused (the audit, loo verify --keys)"})


class AuditOut(Open):
    ok = fields.Boolean(required=True)
    events = fields.Integer(required=True)
    checks = fields.Nested(ChecksOut, required=True)


class ClosedOut(Open):
    version = fields.Integer(required=True)
    events = fields.List(fields.Nested(EventOut), required=True)
    leftover = fields.Integer(required=True, metadata={
        "description": "the chips left in the pool (rule 8.8); 0 at a points table"})
    table = fields.Nested(TableOut, required=True)


class SpectatorTokenOut(Open):
    """A live spectator token as its table's admin reads it: never its secret."""

    id = fields.String(required=True, metadata={
        "description": "revoke with DELETE .../spectators/{id}"})
    label = fields.String(allow_none=True, required=True)


class SpectatorOut(SpectatorTokenOut):
    token = fields.String(required=True, metadata={
        "description": "read-only bearer token, shown once"})
    version = fields.Integer(required=True)


class SpectatorListOut(Open):
    items = fields.List(fields.Nested(SpectatorTokenOut), required=True)
    next = fields.String(allow_none=True, required=True,
                         metadata={"description": NEXT_CURSOR})


class HandHistoryOut(Open):
    """A loo-hh 1.0 file; its JSON Schema is served at /v1/schemas/loo-hh-1.0.json."""

    format = fields.String(required=True)
    spec_version = fields.String(required=True)
    table = fields.Dict(required=True)
    hand = fields.Dict(required=True)
    events = fields.List(fields.Dict(), required=True)
    checkpoint = fields.Dict(metadata={"description": "the signed checkpoint naming the end of "
                                                      "the hand's settlement"})
    void_checkpoint = fields.Dict(metadata={
        "description": "a voided hand's: the signed checkpoint naming its hand_voided (none "
                       "for a void made before voids were signed)"})
    close = fields.Dict(metadata={
        "description": "the last complete hand of a closed table: {\"events\": the table's "
                       "events after this hand's up to its table_closed, \"checkpoint\": the "
                       "signed checkpoint naming the table_closed (none for a close made "
                       "before closes were signed)}"})


# ---- clubs (API.md Phase 2) ---------------------------------------------------------------
class ClubOut(Open):
    id = fields.String(required=True)
    name = fields.String(required=True)
    version = fields.Integer(required=True)
    members = fields.Integer(required=True, metadata={
        "description": "how many active members the club has (archived ones are not "
                       "counted)"})
    archived_members = fields.Integer(required=True, metadata={
        "description": "how many archived members the club has"})
    tables = fields.Integer(required=True)
    role = fields.String(required=True, validate=validate.OneOf(("owner", "scorer", "viewer")),
                         metadata={"description": "the calling token's role: owner, scorer "
                                                  "or viewer"})


class ClubCreatedOut(Open):
    id = fields.String(required=True)
    name = fields.String(required=True)
    version = fields.Integer(required=True)
    token = fields.String(required=True, metadata={
        "description": "the first owner token, shown once"})


class ClubTokenOut(Open):
    """A live club token as an owner reads it: never its secret."""

    id = fields.String(required=True)
    role = fields.String(required=True, validate=validate.OneOf(("owner", "scorer", "viewer")))
    label = fields.String(allow_none=True, required=True)


class ClubTokenCreatedOut(ClubTokenOut):
    token = fields.String(required=True, metadata={"description": "shown once (only here)"})


class WebhookOut(Open):
    id = fields.String(required=True)
    url = fields.String(required=True)
    events = fields.List(fields.String(), required=True)
    created_at = fields.String(required=True)
    status = fields.String(
        required=True, validate=validate.OneOf(("active", "disabled")), metadata={
            "description": "disabled: its receiver answered 410 Gone, nothing is delivered "
                           "until POST .../enable"})
    disabled = fields.Boolean(required=True)
    disabled_reason = fields.String(allow_none=True, required=True, metadata={
        "description": "why delivery stopped (the receiver's answer), while disabled"})
    disabled_at = fields.String(allow_none=True, required=True, metadata={
        "description": "when delivery stopped (UTC), while disabled"})
    disabled_position = fields.Integer(allow_none=True, required=True, metadata={
        "description": "the position of the event whose message was answered 410: "
                       "delivery resumes with it"})


class WebhookCreatedOut(WebhookOut):
    secret = fields.String(required=True, metadata={
        "description": "whsec_ + base64: the Standard Webhooks signing secret, shown once "
                       "(only here)"})


class MemberOut(Open):
    id = fields.String(required=True)
    name = fields.String(required=True)
    external_id = fields.String(allow_none=True, required=True)
    archived = fields.Boolean(required=True)


class SeasonOut(Open):
    id = fields.String(required=True)
    name = fields.String(required=True)
    starts_on = fields.String(required=True, metadata={"format": "date"})
    ends_on = fields.String(allow_none=True, required=True, metadata={"format": "date"})
    closed = fields.Boolean(required=True)


def list_of(item: type[Schema], name: str) -> type[Schema]:
    """A page of a list (API.md Lists) whose items are `item`s, as the spec names it."""
    return type(name, (Open,), {
        "__doc__": f"A page of {item.__name__} items; `next` is the next page's cursor "
                   "(null on the last page).",
        "items": fields.List(fields.Nested(item), required=True),
        "next": fields.String(allow_none=True, required=True,
                              metadata={"description": NEXT_CURSOR})})


class DeliveryOut(Open):
    """One attempt to deliver one message to a webhook endpoint."""

    event = fields.String(required=True, metadata={"description": "the event's type"})
    position = fields.Integer(required=True)
    message_id = fields.String(metadata={"description": "the webhook-id header"})
    stream = fields.String(metadata={"description": "\"club\" or the table's id"})
    status = fields.Raw(required=True, metadata={
        "description": "the receiver's HTTP status (an integer), or timeout, refused, "
                       "blocked or error"})
    attempt = fields.Integer(required=True, metadata={"description": "of that message, from 1"})
    duration_ms = fields.Integer(required=True)
    at = fields.String(required=True, metadata={"description": "UTC, ISO 8601"})


class ClubTableSeatOut(Open):
    seat = fields.Integer(required=True)
    name = fields.String(required=True)
    member = fields.String(allow_none=True, required=True)


class ClubTableOut(Open):
    """A club's table as its list shows it."""

    id = fields.String(required=True)
    variant = fields.String(required=True, validate=validate.OneOf(("loo", "rounce")))
    scoring = fields.String(required=True, validate=validate.OneOf(("pool", "points")))
    status = fields.String(required=True,
                           validate=validate.OneOf(("playing", "finished", "closed")))
    season = fields.String(allow_none=True, required=True)
    created_at = fields.String(required=True)
    hands = fields.Integer(required=True, metadata={"description": "hands settled"})
    seats = fields.List(fields.Nested(ClubTableSeatOut), required=True)


class StandingsRowOut(Open):
    """A member's row of the league table: every figure derived from the events of the
    view's tables (the member ledger lists the transfers and scores behind it)."""

    rank = fields.Integer(required=True, metadata={
        "description": "standard competition ranking (1, 1, 3)"})
    member = fields.String(required=True)
    name = fields.String(required=True)
    tables = fields.Integer(required=True, metadata={"description": "tables sat at"})
    hands = fields.Integer(required=True, metadata={"description": "hands settled there, "
                                                                  "voided ones not counted"})
    chips = fields.Integer(required=True, metadata={"description": "the chip balance (pool "
                                                                  "tables)"})
    points = fields.Integer(required=True, metadata={"description": "points (points tables)"})
    games_won = fields.Integer(required=True)
    tricks = fields.Integer(required=True)
    loos = fields.Integer(required=True, metadata={"description": "hands the member was "
                                                                 "looed in"})
    looed_chips = fields.Integer(required=True, metadata={"description": "chips paid as loo "
                                                                        "penalties"})


class StandingsOut(Open):
    as_of = fields.Integer(required=True, metadata={
        "description": "the global position the rows reflect"})
    mixed_points = fields.Boolean(required=True, metadata={
        "description": "the view's tables include Loo for points (counting up from 0) and "
                       "Rounce (counting down from its target): each Rounce table's points "
                       "then count as its target minus its score (the points made toward "
                       "winning: +1 a trick, -5 rounced), so `points` is higher-is-better "
                       "across a row. False: every table's points are its score"})
    rows = fields.List(fields.Nested(StandingsRowOut), required=True, metadata={
        "description": "one per member, best first: by chips (pool), or by games_won then "
                       "points (points: ?scoring=points, or a view whose tables all count "
                       "points; the most points first, the fewest when the view's "
                       "points tables are all Rounce; with `mixed_points` Rounce counts up). "
                       "`rank` is standard competition ranking: rows equal on those keys "
                       "share the better rank and the next counts every row above (1, 1, "
                       "3); within a tie, by name then member id"})


class MemberLedgerItemOut(Open):
    """One entry of a member's ledger: a transfer, a score or a start, with `kind` and the
    fields it has in its own list (`transfers`, `scores`, `starts`)."""

    kind = fields.String(required=True, validate=validate.OneOf(
        ["transfer", "score", "start"]), metadata={
            "description": "the list the entry is also in: transfer (`transfers`), score "
                           "(`scores`), start (`starts`)"})
    table = fields.String(required=True)
    seat = fields.Integer(required=True, metadata={"description": "the member's seat there"})
    hand = fields.Integer(allow_none=True, metadata={"description": "transfer, score"})
    version = fields.Integer(metadata={
        "description": "transfer, score: the table version of the event that caused it"})
    from_ = fields.String(attribute="from", data_key="from",
                          metadata={"description": "transfer: `seat:N` or `pool`"})
    to = fields.String(metadata={"description": "transfer: `seat:N` or `pool`"})
    amount = fields.Integer(metadata={"description": "transfer: chips, at least 1"})
    reason = fields.String(metadata={"description": "transfer, score: as in its own list"})
    delta = fields.Integer(metadata={"description": "score: the points it adds"})
    points = fields.Integer(metadata={"description": "start: the score the seat starts from"})
    counted = fields.Integer(metadata={
        "description": "score, start: what it adds to the standings' points in this view"})


class MemberTransferOut(TransferOut):
    """A transfer behind a member's row: the table's transfer, with where it is."""

    table = fields.String(required=True)
    seat = fields.Integer(required=True, metadata={"description": "the member's seat there"})


class MemberScoreOut(ScoreOut):
    """A score behind a member's row: the table's score, with where it is."""

    table = fields.String(required=True)
    counted = fields.Integer(required=True, metadata={
        "description": "what it adds to the standings' points in this view"})


class MemberStartOut(Open):
    """The score a member's seat at a points table starts from."""

    table = fields.String(required=True)
    seat = fields.Integer(required=True)
    points = fields.Integer(required=True, metadata={"description": "Rounce: the target (15); "
                                                                   "Loo: 0"})
    counted = fields.Integer(required=True, metadata={
        "description": "what it adds to the standings' points in this view"})


class MemberLedgerOut(Open):
    member = fields.String(required=True)
    mixed_points = fields.Boolean(required=True, metadata={
        "description": "as the standings' in the same view (the same filters): Rounce "
                       "tables count their points up, as target minus score"})
    transfers = fields.List(fields.Nested(MemberTransferOut), required=True, metadata={
        "description": "per chip transfer of the member's pool tables: as the table's ledger "
                       "lists it, with `table` and the member's `seat`"})
    scores = fields.List(fields.Nested(MemberScoreOut), required=True, metadata={
        "description": "per points hand (and void) of the member: `table`, `hand`, "
                       "`version`, `seat`, `delta`, `reason`, and `counted`, what it adds to "
                       "the standings' points in this view: the delta, or its opposite for "
                       "a Rounce table with `mixed_points`"})
    starts = fields.List(fields.Nested(MemberStartOut), required=True, metadata={
        "description": "per points table of the member: `table`, `seat` and `points`, the "
                       "score the seat starts from (Rounce: the target, 15; Loo: 0), and "
                       "`counted` (that start, or 0 for a Rounce table with "
                       "`mixed_points`). The standings' `points` in the same view are the "
                       "`counted` of these plus those of the `scores`"})
    items = fields.List(fields.Nested(MemberLedgerItemOut), required=True, metadata={
        "description": "the same `starts`, `transfers` and `scores` as one list paged as every "
                       "list is (?limit=, ?cursor=; `transfers`, `scores` and `starts` stay "
                       "whole), in the order they came into the member's ledger, which only "
                       "appends: by the global position of the event that caused each (for a "
                       "table the club listed after its events, an import: of that listing), "
                       "then the table version (a start first), a transfer before a score of "
                       "the same event"})
    next = fields.String(allow_none=True, required=True,
                         metadata={"description": NEXT_CURSOR})


class BotOut(Open):
    name = fields.String(required=True)
    version = fields.String(required=True)
    description = fields.String(required=True)


class HintOut(Open):
    seat = fields.Integer(required=True)
    action = fields.Dict(required=True, metadata={
        "description": "an action body as POST /actions takes it"})
    why = fields.String(required=True, metadata={
        "description": "a short reason: the expected chips or points, and the next best "
                       "action"})
    version = fields.Integer(required=True, metadata={
        "description": "the table version the hint is for"})


class BotsOut(Open):
    items = fields.List(fields.Nested(BotOut), required=True)
    next = fields.String(allow_none=True, required=True)


class ClubEventOut(EventOut):
    """An event of the club's feed: the club's own or a table's, as a spectator sees it."""

    stream = fields.String(required=True, metadata={
        "description": "\"club\" (the club's own stream) or the table's id"})


class ClubFeedOut(Open):
    items = fields.List(fields.Nested(ClubEventOut), required=True, metadata={
        "description": "the page's events, each with `stream` (/docs/http, Lists: the same list "
                       "as `events`)"})
    events = fields.List(fields.Nested(ClubEventOut), required=True, metadata={
        "description": "the same events as `items` (the table feed's name for them)"})
    next = fields.Integer(required=True, metadata={
        "description": "the position to ask ?after= next: never null (a feed has no last "
                       "page; new events keep coming), the position of the page's last event, "
                       "and ?after= itself when nothing new has come. With ?latest= or "
                       "?before=, the position the page reads up to (the head as it was "
                       "read, or before - 1): ?after= it follows on from the page's events, "
                       "missing none"})
    earlier = fields.Integer(allow_none=True, metadata={
        "description": "with ?latest= or ?before= only: the position to ask ?before= for "
                       "the club's events before this page's (that of its first event); "
                       "null when the page begins with the club's first event"})


ClubTokenListOut = list_of(ClubTokenOut, "ClubTokenListOut")
WebhookListOut = list_of(WebhookOut, "WebhookListOut")
DeliveryListOut = list_of(DeliveryOut, "DeliveryListOut")
MemberListOut = list_of(MemberOut, "MemberListOut")
SeasonListOut = list_of(SeasonOut, "SeasonListOut")
ClubTableListOut = list_of(ClubTableOut, "ClubTableListOut")
