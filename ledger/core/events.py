"""The event vocabulary (API.md "Event catalogue"): frozen dataclasses, one registry, one codec.

Inside the program tiles are ints (ledger.core.rules.tiles); on the wire and in the store they
are names ("6-3"), per-seat values are objects keyed by the seat number as a string.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import MISSING, dataclass, fields
from typing import Any, ClassVar

from ledger.core.rules.tiles import NAMES, Tile, parse_tile

REGISTRY: dict[str, type[Event]] = {}

TILE_FIELDS = frozenset({"tile"})
TILE_LIST_FIELDS = frozenset({"tiles", "put_out", "boneyard", "order", "draws"})
PER_SEAT_FIELDS = frozenset({"tricks_won", "balances", "scores", "payments", "totals"})


@dataclass(frozen=True, slots=True)
class Event:
    """Base of every event; `type` is the past-tense name used on the wire."""

    type: ClassVar[str] = ""


def _event(name: str):  # noqa: ANN202 - a class decorator
    def wrap(cls: type) -> type:
        cls.type = name
        made = dataclass(frozen=True, slots=True)(cls)
        REGISTRY[name] = made
        return made

    return wrap


@_event("table_created")
class TableCreated(Event):
    variant: str
    scoring: str
    deal: str
    players: int
    options: dict
    first_dealer: Any  # a seat number or "lots"
    tokens: dict  # {"admin": sha256, "seats": [sha256, ...]}: hashes only, never the tokens
    club: str | None = None  # a club table: the club's owner and scorer tokens act as admin
    season: str | None = None


@_event("seat_filled")
class SeatFilled(Event):
    seat: int
    name: str
    bot: str | None = None
    member: str | None = None  # a club table: the club member on this seat


@_event("spectator_added")
class SpectatorAdded(Event):
    """A read-only token for the table: it sees what no seat hides (API.md Spectators)."""

    id: str
    token_hash: str
    label: str | None = None


@_event("spectator_revoked")
class SpectatorRevoked(Event):
    id: str


# ---- a club's own stream (API.md Phase 2: clubs, tokens, members, seasons) ----------------
@_event("club_created")
class ClubCreated(Event):
    name: str


@_event("token_issued")
class TokenIssued(Event):
    id: str
    role: str  # owner | scorer | viewer
    label: str | None
    token_hash: str


@_event("token_revoked")
class TokenRevoked(Event):
    id: str


@_event("member_joined")
class MemberJoined(Event):
    id: str
    name: str
    external_id: str | None = None


@_event("member_renamed")
class MemberRenamed(Event):
    id: str
    name: str


@_event("member_archived")
class MemberArchived(Event):
    id: str


@_event("season_started")
class SeasonStarted(Event):
    id: str
    name: str
    starts_on: str
    ends_on: str | None = None


@_event("season_closed")
class SeasonClosed(Event):
    id: str


@_event("club_table_added")
class ClubTableAdded(Event):
    table_id: str
    season: str | None
    members: tuple  # per seat: a member id or None
    variant: str
    scoring: str
    created_at: str


@_event("webhook_added")
class WebhookAdded(Event):
    """An endpoint the club's events are POSTed to (API.md Webhooks). Its signing secret is
    not here: the service derives it from `salt` under the deployment's secret."""

    id: str
    url: str
    events: tuple  # event types, or ("*",)
    salt: str
    created_at: str


@_event("webhook_removed")
class WebhookRemoved(Event):
    id: str


@_event("webhook_disabled")
class WebhookDisabled(Event):
    """The delivery worker stopped delivering to an endpoint: its receiver answered `status`
    (410 Gone: the endpoint is no more, as Standard Webhooks has it) to the message of the
    event at `position`, which is where delivery resumes once the owner enables it again."""

    id: str
    reason: str
    status: int
    position: int
    at: str


@_event("webhook_enabled")
class WebhookEnabled(Event):
    """The owner enabled a disabled endpoint again: delivery resumes where it stopped."""

    id: str


# Table-level events that may fall between a hand's events without being part of its play:
# a hand's record keeps them (its hash chain links through them); its rules ignore them.
ASIDE = frozenset({"spectator_added", "spectator_revoked"})
# Events of a hand that record why an action came, or that the turn timers run again, not an
# action: the rules of the hand ignore them (a replay from the actions alone leaves them out).
NOTICES = frozenset({"turn_timed_out", "timers_woken"})


@_event("dealer_chosen")
class DealerChosen(Event):
    seat: int
    method: str  # "named" | "lots"
    draws: tuple[Tile, ...] = ()
    seed: str | None = None


@_event("hand_started")
class HandStarted(Event):
    number: int
    dealer: int
    mode: str
    commitment: str | None = None
    # The seats' names, by seat, as the table has them: in the hash chain with every hand, so
    # a hand-history file whose table.seats names were edited fails `loo verify`. None in
    # hands started before this field was (their files' names are not in the chain).
    seat_names: tuple[str, ...] | None = None


@_event("stake_posted")
class StakePosted(Event):
    seat: int
    amount: int
    reason: str  # "ante" | "dealer_ante"


@_event("tiles_dealt")
class TilesDealt(Event):
    hands: tuple[tuple[Tile, ...], ...]
    boneyard: tuple[Tile, ...]
    ordered: bool = True  # False on recorded tables: the unseen tiles, order unknown
    seed: str | None = None  # secret until seed_revealed; never shown while the hand is live


@_event("trump_turned")
class TrumpTurned(Event):
    tile: Tile
    trump: int
    exposed_by: int


@_event("player_decided")
class PlayerDecided(Event):
    seat: int
    choice: str  # "play" | "miss" | "drop"
    take_turn_up: bool = False
    for_pool: bool = False


@_event("miss_drawn")
class MissDrawn(Event):
    seat: int
    tiles: tuple[Tile, ...]
    put_out: tuple[Tile, ...]


@_event("tiles_discarded")
class TilesDiscarded(Event):
    seat: int
    tiles: tuple[Tile, ...]


@_event("turn_up_taken")
class TurnUpTaken(Event):
    seat: int
    tile: Tile


@_event("tile_played")
class TilePlayed(Event):
    seat: int
    tile: Tile
    trick: int
    suit: int | None = None  # the declared suit when this play leads the trick


@_event("trick_won")
class TrickWon(Event):
    trick: int
    seat: int
    suit: int
    plays: tuple[tuple[int, Tile], ...]


@_event("hand_won_without_play")
class HandWonWithoutPlay(Event):
    seat: int
    reason: str  # "all_dropped" (the dealer) | "one_left"


@_event("hand_completed")
class HandCompleted(Event):
    tricks_won: tuple[int, ...]
    looed: tuple[int, ...]
    dropped: tuple[int, ...]
    for_pool: bool = False


@_event("seed_revealed")
class SeedRevealed(Event):
    seed: str
    order: tuple[Tile, ...]


@_event("tricks_paid")
class TricksPaid(Event):
    trick_value: int
    payments: tuple[int, ...]  # chips from the pool to each seat
    reason: str = "trick"  # "trick" | "pool_award"


@_event("player_looed")
class PlayerLooed(Event):
    seat: int


@_event("penalty_assessed")
class PenaltyAssessed(Event):
    seat: int
    uncapped: int
    cap: int | None
    amount: int
    mode: str


@_event("points_scored")
class PointsScored(Event):
    deltas: tuple[tuple[int, int, str], ...]  # (seat, delta, reason)
    totals: tuple[int, ...]


@_event("hand_settled")
class HandSettled(Event):
    pool: int
    balances: tuple[int, ...]
    scores: tuple[int, ...]


@_event("turn_timed_out")
class TurnTimedOut(Event):
    """API.md "turn timers": the seat to act let `seconds` pass; the service acts for it
    (the action's own events follow: drop where allowed, else its lowest legal play)."""

    seat: int
    seconds: int


@_event("timers_woken")
class TimersWoken(Event):
    """API.md "turn timers": the table's timers rested (timers_idle) and its admin started
    the hand auto_deal had dealt: the seat to act is on the clock again, its turn_seconds
    counted from this event (ledger.core.rules.timers.wake)."""


@_event("hand_voided")
class HandVoided(Event):
    """A correction: the hand's chips and points go back (API.md Corrections)."""

    number: int
    reason: str
    transfers: tuple[tuple[str, str, int], ...]  # (from, to, amount), each original reversed
    score_changes: tuple[tuple[int, int], ...]  # (seat, delta), each original delta negated
    totals: tuple[int, ...]  # the scores after the void
    unwon: bool = False  # the hand had won the game: the game goes on
    reopened: bool = False  # the table had closed after the hand: the close is undone too


@_event("game_won")
class GameWon(Event):
    seat: int | None
    scores: tuple[int, ...]
    tied: tuple[int, ...] = ()


@_event("table_closed")
class TableClosed(Event):
    leftover: int
    abandoned_hand: int | None = None
    reason: str | None = None  # "max_hands" when the table closed itself; None: by its admin


def _encode(field: str, value: Any) -> Any:
    if value is None:
        return None
    if field in TILE_FIELDS:
        return NAMES[value]
    if field in TILE_LIST_FIELDS:
        return [NAMES[t] for t in value]
    if field == "hands":
        return {str(s): [NAMES[t] for t in h] for s, h in enumerate(value)}
    if field == "plays":
        return [{"seat": s, "tile": NAMES[t]} for s, t in value]
    if field in PER_SEAT_FIELDS:
        return {str(s): v for s, v in enumerate(value)}
    if field == "deltas":
        return [{"seat": s, "delta": d, "reason": r} for s, d, r in value]
    if field == "transfers":
        return [{"from": a, "to": b, "amount": n} for a, b, n in value]
    if field == "score_changes":
        return [{"seat": s, "delta": d} for s, d in value]
    if field == "tied" or field == "looed" or field == "dropped" or field == "members" \
            or field == "seat_names":
        return list(value)
    return value


def _per_seat(value: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(value[str(s)] for s in range(len(value)))


def _tiles(value: Any) -> tuple[Tile, ...]:
    return tuple(map(parse_tile, value))


# One decoder per field name that needs one (every other field is kept as stored); built
# once, so decoding an event is a dict lookup per field (it runs on every read).
_DECODERS: dict[str, Any] = {
    **dict.fromkeys(TILE_FIELDS, parse_tile),
    **dict.fromkeys(TILE_LIST_FIELDS, _tiles),
    **dict.fromkeys(PER_SEAT_FIELDS, lambda v: _per_seat(v)),
    **dict.fromkeys(("tied", "looed", "dropped"), tuple),
    "hands": lambda v: tuple(_tiles(h) for h in _per_seat(v)),
    "plays": lambda v: tuple((p["seat"], parse_tile(p["tile"])) for p in v),
    "deltas": lambda v: tuple((d["seat"], d["delta"], d["reason"]) for d in v),
    "members": tuple,
    "seat_names": tuple,
    "events": tuple,  # webhook_added: the event types an endpoint wants
    "transfers": lambda v: tuple((d["from"], d["to"], d["amount"]) for d in v),
    "score_changes": lambda v: tuple((d["seat"], d["delta"]) for d in v),
}


def _decode(field: str, value: Any) -> Any:
    if value is None:
        return None
    fn = _DECODERS.get(field)
    return value if fn is None else fn(value)


def to_data(event: Event) -> dict[str, Any]:
    """The JSON object stored for an event (its `data`)."""
    names = _FIELD_NAMES.get(type(event))
    if names is None:  # once per class: dataclasses.fields builds its tuple on every call
        names = _FIELD_NAMES[type(event)] = tuple(f.name for f in fields(event))
    return {name: _encode(name, getattr(event, name)) for name in names}


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


_FROM_DATA: dict[str, Callable[[dict[str, Any]], Event]] = {}  # by type: its decoder


def from_data(type_: str, data: dict[str, Any]) -> Event:
    """Rebuild an event from its stored type and data."""
    decode = _FROM_DATA.get(type_)
    if decode is None:
        decode = _FROM_DATA[type_] = _decoder(REGISTRY[type_])
    return decode(data)


def _decoder(cls: type) -> Callable[[dict[str, Any]], Event]:
    """A function that rebuilds `cls` from its data, written out as one call once per event
    type (the generic loop over the fields, building keyword arguments, was a third of
    reading a table's history): a field missing from the data takes its default (a
    required one raises KeyError); None stays None; a field with a decoder (_DECODERS)
    goes through it."""
    env: dict[str, Any] = {"cls": cls, "MISSING": MISSING}
    args = []
    for i, f in enumerate(fields(cls)):
        if not f.init or f.default_factory is not MISSING:
            return _generic(cls)
        fn = _DECODERS.get(f.name)
        env[f"fn{i}"], env[f"d{i}"] = fn, f.default
        if f.default is MISSING:
            get = f"data[{f.name!r}]"
            value = get if fn is None else f"(None if (v{i} := {get}) is None else fn{i}(v{i}))"
        elif fn is None:
            value = f"data.get({f.name!r}, d{i})"
        else:
            value = (f"(d{i} if (v{i} := data.get({f.name!r}, MISSING)) is MISSING"
                     f" else None if v{i} is None else fn{i}(v{i}))")
        args.append(f"{f.name}={value}")
    exec(f"def decode(data):\n    return cls({', '.join(args)})", env)  # noqa: S102
    return env["decode"]  # type: ignore[no-any-return]


def _generic(cls: type) -> Callable[[dict[str, Any]], Event]:
    plan = tuple((f.name, _DECODERS.get(f.name)) for f in fields(cls))

    def decode(data: dict[str, Any]) -> Event:
        kwargs = {}
        for n, fn in plan:
            if n in data:
                v = data[n]
                kwargs[n] = v if fn is None or v is None else fn(v)
        return cls(**kwargs)  # type: ignore[no-any-return]

    return decode
