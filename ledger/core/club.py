"""A club: its tokens, members, seasons and tables, as a fold of its own stream (API.md
Phase 2). Commands return events; EVOLVE folds them; nothing here touches storage."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from ledger.core import events as ev
from ledger.core.errors import Conflict, Invalid, NotFound

ROLES = ("owner", "scorer", "viewer")


@dataclass(frozen=True, slots=True)
class Member:
    id: str
    name: str
    external_id: str | None = None
    archived: bool = False


@dataclass(frozen=True, slots=True)
class Season:
    id: str
    name: str
    starts_on: str
    ends_on: str | None = None
    closed: bool = False


@dataclass(frozen=True, slots=True)
class Token:
    id: str
    role: str
    label: str | None
    token_hash: str
    revoked: bool = False


@dataclass(frozen=True, slots=True)
class Webhook:
    id: str
    url: str
    events: tuple[str, ...]
    salt: str
    created_at: str
    removed: bool = False
    disabled: ev.WebhookDisabled | None = None  # why delivery stopped, until enabled again

    def wants(self, event_type: str) -> bool:
        return "*" in self.events or event_type in self.events


@dataclass(frozen=True, slots=True)
class Club:
    """Full state of a club: the fold of its events."""

    name: str = ""
    tokens: tuple[Token, ...] = ()
    members: tuple[Member, ...] = ()
    seasons: tuple[Season, ...] = ()
    tables: tuple[ev.ClubTableAdded, ...] = ()
    webhooks: tuple[Webhook, ...] = ()

    def webhook(self, wid: str) -> Webhook:
        for w in self.webhooks:
            if w.id == wid and not w.removed:
                return w
        raise NotFound("webhook_not_found", f"this club has no webhook {wid}")

    def member(self, mid: str) -> Member:
        for m in self.members:
            if m.id == mid:
                return m
        raise NotFound("member_not_found", f"this club has no member {mid}")

    def season(self, sid: str) -> Season:
        for s in self.seasons:
            if s.id == sid:
                return s
        raise NotFound("season_not_found", f"this club has no season {sid}")

    def token(self, tid: str) -> Token:
        for t in self.tokens:
            if t.id == tid and not t.revoked:
                return t
        raise NotFound("token_not_found", f"this club has no live token {tid}")


# ---- decisions -----------------------------------------------------------------------------
def create(name: str, owner_id: str, owner_hash: str) -> list[ev.Event]:
    return [ev.ClubCreated(name=name),
            ev.TokenIssued(id=owner_id, role="owner", label="owner", token_hash=owner_hash)]


def issue_token(c: Club, tid: str, role: str, label: str | None, token_hash: str,
                ) -> list[ev.Event]:
    if role not in ROLES:
        raise Invalid("invalid_role", f"role must be one of {', '.join(ROLES)}", field="role")
    return [ev.TokenIssued(id=tid, role=role, label=label, token_hash=token_hash)]


def revoke_token(c: Club, tid: str) -> list[ev.Event]:
    """Revoke a live token; never the club's last live owner token: only an owner issues
    tokens, so without one the club could never be managed again (nobody holds a key
    above the club's own)."""
    if c.token(tid).role == "owner" and not any(
            t.role == "owner" and not t.revoked and t.id != tid for t in c.tokens):
        raise Conflict("last_owner_token", f"{tid} is the club's last owner token: issue "
                       "another owner token first, then revoke this one")
    return [ev.TokenRevoked(id=tid)]


def same_external_id(a: str | None, b: str | None) -> bool:
    """A club's membership numbers are its own codes: "ABC-7" and "abc-7" are one (compared
    case-insensitively; a member keeps the spelling it was given)."""
    return a is not None and b is not None and a.casefold() == b.casefold()


def join(c: Club, mid: str, name: str, external_id: str | None) -> list[ev.Event]:
    taken = next((m for m in c.members if same_external_id(m.external_id, external_id)), None)
    if taken is not None:
        raise Conflict("duplicate_external_id",
                       f"external_id {external_id!r} already belongs to a member of this club"
                       + ("" if taken.external_id == external_id
                          else f" (as {taken.external_id!r}: the case does not count)"))
    return [ev.MemberJoined(id=mid, name=name, external_id=external_id)]


def rename(c: Club, mid: str, name: str) -> list[ev.Event]:
    if c.member(mid).name == name:
        return []
    return [ev.MemberRenamed(id=mid, name=name)]


def archive(c: Club, mid: str) -> list[ev.Event]:
    return [] if c.member(mid).archived else [ev.MemberArchived(id=mid)]


def start_season(c: Club, sid: str, name: str, starts_on: str, ends_on: str | None,
                 ) -> list[ev.Event]:
    if ends_on is not None and ends_on < starts_on:
        raise Invalid("invalid_season", "ends_on is before starts_on", field="ends_on")
    return [ev.SeasonStarted(id=sid, name=name, starts_on=starts_on, ends_on=ends_on)]


def close_season(c: Club, sid: str) -> list[ev.Event]:
    """End a season; one closed already stays as it is (a retried close is harmless)."""
    return [] if c.season(sid).closed else [ev.SeasonClosed(id=sid)]


def known_season(c: Club, sid: str, field: str = "season") -> Season:
    """A season a request names (a new table's, a list's filter) is one of this club's: 422
    unknown_season otherwise (API.md Lists: never an empty answer to a filter on nothing)."""
    try:
        return c.season(sid)
    except NotFound:
        raise Invalid("unknown_season", f"this club has no season {sid}", field=field) from None


def known_member(c: Club, mid: str, field: str = "seats") -> Member:
    """A member a request names (at a new table's seat, in a list's filter) is one of this
    club's: 422 unknown_member otherwise."""
    try:
        return c.member(mid)
    except NotFound:
        raise Invalid("unknown_member", f"{mid} is not a member of this club",
                      field=field) from None


def check_table(c: Club, season: str | None, members: Iterable[str | None]) -> None:
    """A club table's season must be open and its seats' members this club's, not archived."""
    if season is not None:
        s = known_season(c, season)
        if s.closed:
            raise Invalid("season_closed", f"season {season} is closed: no new tables",
                          field="season")
    seated: set[str] = set()
    for mid in members:
        if mid is None:
            continue
        if mid in seated:
            raise Invalid("duplicate_member", f"member {mid} is named at two seats: a member "
                          "sits at one seat of a table", field="seats")
        seated.add(mid)
        if known_member(c, mid).archived:
            raise Invalid("member_archived", f"member {mid} is archived", field="seats")


def add_table(c: Club, e: ev.ClubTableAdded) -> list[ev.Event]:
    check_table(c, e.season, e.members)
    return [e]


MAX_WEBHOOKS = 20  # live endpoints per club


def webhook_event_types() -> list[str]:
    """What a webhook's `events` may name (besides "*" alone): every event type of the
    club feed, that is of the catalogue."""
    return sorted(ev.REGISTRY)


def add_webhook(c: Club, e: ev.WebhookAdded) -> list[ev.Event]:
    events = set(e.events)
    valid = webhook_event_types()
    unknown = sorted(events - set(valid) - {"*"})
    if unknown:
        raise Invalid("invalid_events", f"events: unknown event type(s) {', '.join(unknown)}; "
                      f'give ["*"] or a list of these: {", ".join(valid)}', field="events",
                      unknown=unknown, valid=valid)
    twice = sorted({t for t in e.events if e.events.count(t) > 1})
    if twice:
        # A list naming a type twice asks for nothing more; kept as sent, it would show
        # so in every GET: refused, as a query parameter given twice is.
        raise Invalid("invalid_events", f"events: {', '.join(twice)} given more than once; "
                      "name each event type once", field="events", duplicates=twice)
    if not events or ("*" in events and len(events) > 1):
        raise Invalid("invalid_events", 'events: ["*"] alone, or a list of event types',
                      field="events", valid=valid)
    if sum(not w.removed for w in c.webhooks) >= MAX_WEBHOOKS:
        raise Invalid("too_many_webhooks", f"a club has at most {MAX_WEBHOOKS} webhooks")
    return [e]


def remove_webhook(c: Club, wid: str) -> list[ev.Event]:
    c.webhook(wid)
    return [ev.WebhookRemoved(id=wid)]


def disable_webhook(c: Club, e: ev.WebhookDisabled) -> list[ev.Event]:
    """The delivery worker's: a live endpoint stops; one disabled already stays as it is."""
    return [] if c.webhook(e.id).disabled is not None else [e]


def enable_webhook(c: Club, wid: str) -> list[ev.Event]:
    """The owner's way back for a disabled endpoint; an enabled one is left as it is."""
    return [ev.WebhookEnabled(id=wid)] if c.webhook(wid).disabled is not None else []


# ---- evolve --------------------------------------------------------------------------------
def _set(items: tuple[Any, ...], key: str, **changes: Any) -> tuple[Any, ...]:
    return tuple(replace(x, **changes) if x.id == key else x for x in items)


EVOLVE: dict[type, Any] = {
    ev.ClubCreated: lambda c, e: replace(c, name=e.name),
    ev.TokenIssued: lambda c, e: replace(c, tokens=(*c.tokens, Token(
        e.id, e.role, e.label, e.token_hash))),
    ev.TokenRevoked: lambda c, e: replace(c, tokens=_set(c.tokens, e.id, revoked=True)),
    ev.MemberJoined: lambda c, e: replace(c, members=(*c.members, Member(
        e.id, e.name, e.external_id))),
    ev.MemberRenamed: lambda c, e: replace(c, members=_set(c.members, e.id, name=e.name)),
    ev.MemberArchived: lambda c, e: replace(c, members=_set(c.members, e.id, archived=True)),
    ev.SeasonStarted: lambda c, e: replace(c, seasons=(*c.seasons, Season(
        e.id, e.name, e.starts_on, e.ends_on))),
    ev.SeasonClosed: lambda c, e: replace(c, seasons=_set(c.seasons, e.id, closed=True)),
    ev.ClubTableAdded: lambda c, e: replace(c, tables=(*c.tables, e)),
    ev.WebhookAdded: lambda c, e: replace(c, webhooks=(*c.webhooks, Webhook(
        e.id, e.url, tuple(e.events), e.salt, e.created_at))),
    ev.WebhookRemoved: lambda c, e: replace(c, webhooks=_set(c.webhooks, e.id, removed=True)),
    ev.WebhookDisabled: lambda c, e: replace(c, webhooks=_set(c.webhooks, e.id, disabled=e)),
    ev.WebhookEnabled: lambda c, e: replace(c, webhooks=_set(c.webhooks, e.id, disabled=None)),
}


def replay(events: Iterable[ev.Event], club: Club | None = None) -> Club:
    c = club if club is not None else Club()
    for e in events:
        fn = EVOLVE.get(type(e))
        if fn is not None:
            c = fn(c, e)
    return c
