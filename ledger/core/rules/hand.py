"""The hand as a state machine (RULES §3-§7): frozen state, decide -> events, evolve -> state.

Evolving works on a mutable draft (a copy of the frozen state's fields): a batch of events
is applied to one draft and frozen once, which keeps the fold cheap (it runs on every read).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, NamedTuple

from ledger.core import events as ev
from ledger.core.errors import RuleViolation
from ledger.core.rules.frozen import build
from ledger.core.rules.options import Options
from ledger.core.rules.tiles import TRUMPS, Tile, trick_winner, trump_of

TRICKS = 5


class Trick(NamedTuple):
    """One trick: who led, the declared suit, the plays in order, and the winner once won.

    A named tuple: one is made at every play, and a tuple is the cheapest frozen value.
    """

    leader: int
    suit: int
    plays: tuple[tuple[int, Tile], ...]
    winner: int | None = None


def next_active(decisions: Sequence[str | None], seat: int) -> int:
    """The next seat to the left of `seat` that has not dropped (itself if none has)."""
    n = len(decisions)
    for k in range(1, n + 1):
        s = (seat + k) % n
        if decisions[s] != "drop":
            return s
    return seat


class _Seats:
    """Seat helpers shared by the frozen Hand and its mutable draft."""

    opts: Options
    dealer: int
    decisions: tuple[str | None, ...]
    hands: tuple[tuple[Tile, ...], ...]
    trump: int | None

    @property
    def players(self) -> int:
        return self.opts.players

    @property
    def active(self) -> list[int]:
        """§1: seats still in the hand (not dropped)."""
        return [s for s, d in enumerate(self.decisions) if d != "drop"]

    @property
    def eldest(self) -> int:
        """§1: the first active player to the dealer's left."""
        return self.next_active(self.dealer)

    def next_active(self, seat: int) -> int:
        """The next seat to the left that has not dropped."""
        return next_active(self.decisions, seat)

    def trumps_held(self, seat: int) -> int:
        trump = self.trump
        assert trump is not None
        bears = TRUMPS[trump]
        return sum(1 for t in self.hands[seat] if t in bears)


@dataclass(frozen=True)
class Hand(_Seats):
    """Full-information state of one hand; viewers only ever see a view of it."""

    number: int
    dealer: int
    opts: Options
    mode: str = "shuffled"
    phase: str = "dealing"  # dealing | deciding | discarding | playing | complete
    commitment: str | None = None
    pool_at_start: int = 0
    hands: tuple[tuple[Tile, ...], ...] = ()
    boneyard: tuple[Tile, ...] = ()
    ordered: bool = True
    turn_up: Tile | None = None
    trump: int | None = None
    decisions: tuple[str | None, ...] = ()
    turn: int | None = None
    misses: int = 0
    turn_up_taken: bool = False
    for_pool: bool = False
    drawn: tuple[tuple[Tile, ...], ...] = ()
    put_out: tuple[tuple[Tile, ...], ...] = ()
    discards: tuple[tuple[Tile, ...], ...] = ()
    tricks: tuple[Trick, ...] = ()
    current: Trick | None = None
    tricks_won: tuple[int, ...] = ()
    won_without_play: int | None = None
    looed: tuple[int, ...] = ()
    # Turn timers (API.md): how many turns timed out, the seat the timer is acting for (until
    # its action's first event), and the seats that acted themselves (a bot, a person, an admin).
    timeouts: int = 0
    timed: int | None = None
    acted: tuple[int, ...] = ()


class Draft(_Seats):
    """A mutable copy of a Hand's fields, for applying events; frozen again by `freeze`."""

    number: int
    mode: str
    phase: str
    pool_at_start: int
    boneyard: tuple[Tile, ...]
    ordered: bool
    turn_up: Tile | None
    turn: int | None
    misses: int
    turn_up_taken: bool
    for_pool: bool
    drawn: tuple[tuple[Tile, ...], ...]
    put_out: tuple[tuple[Tile, ...], ...]
    discards: tuple[tuple[Tile, ...], ...]
    tricks: tuple[Trick, ...]
    current: Trick | None
    tricks_won: tuple[int, ...]
    won_without_play: int | None
    looed: tuple[int, ...]
    timeouts: int
    timed: int | None
    acted: tuple[int, ...]


_DEFAULTS = {f.name: f.default for f in fields(Hand)}
_new = object.__new__
_tuple = tuple.__new__  # Trick(...) without its Python-level __new__


def draft(h: Hand) -> Draft:
    d = _new(Draft)
    d.__dict__ = h.__dict__.copy()
    return d


def freeze(d: Draft) -> Hand:
    """The frozen Hand of a draft (the draft must not be used afterwards)."""
    return build(Hand, d.__dict__)


def new_hand(number: int, dealer: int, opts: Options, mode: str, pool_at_start: int,
             commitment: str | None = None) -> Hand:
    """A hand just started: stakes posted, no tile dealt yet."""
    n = opts.players
    empty: tuple[tuple[Tile, ...], ...] = ((),) * n
    return build(Hand, _DEFAULTS | {
        "number": number, "dealer": dealer, "opts": opts, "mode": mode,
        "commitment": commitment, "pool_at_start": pool_at_start, "hands": empty,
        "decisions": (None,) * n, "drawn": empty, "put_out": empty, "discards": empty,
        "tricks_won": (0,) * n})


def _set(seq: tuple, i: int, value: object) -> tuple:
    return seq[:i] + (value,) + seq[i + 1 :]


def _without(tiles: tuple[Tile, ...], gone: tuple[Tile, ...] | list[Tile]) -> tuple[Tile, ...]:
    return tuple(t for t in tiles if t not in gone)


def violation(code: str, rule: str, detail: str) -> RuleViolation:
    return RuleViolation(code, rule, detail)


# ---- evolve: apply one event to a draft ----------------------------------------------------

def _dealt(h: Draft, e: ev.TilesDealt) -> None:
    h.hands, h.boneyard, h.ordered = e.hands, e.boneyard, e.ordered


def _turned(h: Draft, e: ev.TrumpTurned) -> None:
    h.turn_up, h.trump, h.phase = e.tile, e.trump, "deciding"
    h.turn = (h.dealer + 1) % h.opts.players


def _advance(h: Draft, seat: int) -> None:
    """After a seat's decision is complete: the next seat decides, or play begins."""
    decisions, dealer = h.decisions, h.dealer
    if seat != dealer:
        nxt = (seat + 1) % len(decisions)
        in_ = len(decisions) - decisions.count("drop")
        others_in = in_ - (decisions[dealer] != "drop") > 0
        h.phase = "deciding"
        # §4: with every other player out the dealer wins without play (nobody acts).
        h.turn = None if nxt == dealer and not others_in else nxt
    elif len(decisions) - decisions.count("drop") >= 2:
        h.phase, h.turn = "playing", h.next_active(dealer)
    else:
        h.phase, h.turn = "deciding", None  # §4: one player left


def _timed_out(h: Draft, e: ev.TurnTimedOut) -> None:
    h.timeouts += 1
    h.timed = e.seat


def _acted(h: Draft, seat: int) -> None:
    """The first event of a seat's action: the timer's (turn_timed_out came first) or its own."""
    if h.timed == seat:
        h.timed = None
    elif seat not in h.acted:
        h.acted += (seat,)


def _decided(h: Draft, e: ev.PlayerDecided) -> None:
    _acted(h, e.seat)
    h.decisions = _set(h.decisions, e.seat, e.choice)
    h.for_pool = h.for_pool or e.for_pool
    if e.choice == "miss":
        h.misses += 1
    else:
        _advance(h, e.seat)


def _miss_drawn(h: Draft, e: ev.MissDrawn) -> None:
    h.hands = _set(h.hands, e.seat, e.tiles)
    h.drawn = _set(h.drawn, e.seat, e.tiles)
    h.put_out = _set(h.put_out, e.seat, e.put_out)
    h.boneyard = _without(h.boneyard, e.tiles)
    h.phase, h.turn = "discarding", e.seat


def _discarded(h: Draft, e: ev.TilesDiscarded) -> None:
    if h.phase == "discarding":  # its own action (after a turn-up taken: the decision's)
        _acted(h, e.seat)
    h.hands = _set(h.hands, e.seat, _without(h.hands[e.seat], e.tiles))
    h.discards = _set(h.discards, e.seat, h.discards[e.seat] + e.tiles)
    if h.phase == "discarding":
        _advance(h, e.seat)


def _turn_up_taken(h: Draft, e: ev.TurnUpTaken) -> None:
    h.hands = _set(h.hands, e.seat, h.hands[e.seat] + (e.tile,))
    h.turn_up_taken = True


def _played(h: Draft, e: ev.TilePlayed) -> None:
    seat, tile, cur = e.seat, e.tile, h.current
    if h.timed is not None or seat not in h.acted:
        _acted(h, seat)
    if cur is None:
        plays: tuple[tuple[int, Tile], ...] = ((seat, tile),)
        h.current = _tuple(Trick, (seat, e.suit if e.suit is not None else -1, plays, None))
    else:
        plays = cur.plays + ((seat, tile),)
        h.current = _tuple(Trick, (cur.leader, cur.suit, plays, cur.winner))
    hands, decisions = h.hands, h.decisions
    held = hands[seat]
    if tile in held:
        i = held.index(tile)
        held = held[:i] + held[i + 1 :]
        if tile in held:  # never in a valid hand; kept exact for audits of odd records
            held = tuple(t for t in held if t != tile)
    new = list(hands)
    new[seat] = held
    h.hands = tuple(new)
    n = len(decisions)
    if len(plays) == n - decisions.count("drop"):
        h.turn = None
    else:
        nxt = (seat + 1) % n
        h.turn = nxt if decisions[nxt] != "drop" else h.next_active(seat)


def _trick_won(h: Draft, e: ev.TrickWon) -> None:
    h.tricks = tricks = h.tricks + (_tuple(Trick, (e.plays[0][0], e.suit, e.plays, e.seat)),)
    h.current = None
    h.tricks_won = _set(h.tricks_won, e.seat, h.tricks_won[e.seat] + 1)
    h.turn = e.seat if len(tricks) < TRICKS else None


def _won_without_play(h: Draft, e: ev.HandWonWithoutPlay) -> None:
    h.tricks_won = _set((0,) * h.opts.players, e.seat, TRICKS)
    h.won_without_play, h.turn = e.seat, None


def _completed(h: Draft, e: ev.HandCompleted) -> None:
    h.phase, h.turn, h.tricks_won, h.looed = "complete", None, e.tricks_won, e.looed
    h.for_pool = e.for_pool or h.for_pool


EVOLVE: dict[type, Any] = {
    ev.TilesDealt: _dealt,
    ev.TrumpTurned: _turned,
    ev.PlayerDecided: _decided,
    ev.MissDrawn: _miss_drawn,
    ev.TilesDiscarded: _discarded,
    ev.TurnUpTaken: _turn_up_taken,
    ev.TilePlayed: _played,
    ev.TrickWon: _trick_won,
    ev.HandWonWithoutPlay: _won_without_play,
    ev.HandCompleted: _completed,
    ev.TurnTimedOut: _timed_out,
}


def apply(h: Draft, e: ev.Event) -> None:
    """Apply one hand-level event to a draft (others leave it unchanged)."""
    fn = EVOLVE.get(type(e))
    if fn is not None:
        fn(h, e)


def evolve(h: Hand, e: ev.Event) -> Hand:
    """Apply one hand-level event (others leave the hand unchanged)."""
    fn = EVOLVE.get(type(e))
    if fn is None:
        return h
    d = draft(h)
    fn(d, e)
    return freeze(d)


def deal_events(h: Hand, hands: tuple[tuple[Tile, ...], ...], turn_up: Tile,
                boneyard: tuple[Tile, ...], ordered: bool,
                seed: str | None = None) -> list[ev.Event]:
    """§3: the deal and the turn-up (Rounce: exposed by the trump-holder's right, §9)."""
    exposer = (h.dealer - 1) % h.players if h.opts.is_rounce else h.dealer
    return [ev.TilesDealt(hands=hands, boneyard=boneyard, ordered=ordered, seed=seed),
            ev.TrumpTurned(tile=turn_up, trump=trump_of(turn_up), exposed_by=exposer)]


def looed_seats(h: _Seats, tricks_won: tuple[int, ...]) -> tuple[int, ...]:
    """§7: stayed in and won no trick; a dealer playing for the pool is never looed."""
    pool_dealer = h.dealer if h.for_pool else -1  # type: ignore[attr-defined]
    return tuple(s for s, d in enumerate(h.decisions)
                 if d != "drop" and tricks_won[s] == 0 and s != pool_dealer)


def completion(h: _Seats) -> ev.HandCompleted:
    dropped = tuple(s for s, d in enumerate(h.decisions) if d == "drop")
    won: tuple[int, ...] = h.tricks_won  # type: ignore[attr-defined]
    return ev.HandCompleted(tricks_won=won, looed=looed_seats(h, won), dropped=dropped,
                            for_pool=h.for_pool)  # type: ignore[attr-defined]


def consequences(h: Hand) -> list[ev.Event]:
    """Events that follow by rule from the state alone: a trick won, the end of the hand."""
    return follow_up(draft(h))


def follow_up(h: Draft) -> list[ev.Event]:
    """`consequences` on a draft, which it advances past the events it returns."""
    e: ev.Event
    if h.phase == "deciding" and h.turn is None:
        (winner,) = h.active
        reason = "all_dropped" if winner == h.dealer and h.decisions[winner] is None else "one_left"
        e = ev.HandWonWithoutPlay(seat=winner, reason=reason)
    elif h.phase == "playing" and h.current is not None and h.turn is None:
        assert h.trump is not None
        cur = h.current
        e = ev.TrickWon(trick=len(h.tricks) + 1, seat=trick_winner(cur.plays, cur.suit, h.trump),
                        suit=cur.suit, plays=cur.plays)
    else:
        return []
    EVOLVE[type(e)](h, e)
    if h.won_without_play is not None or len(h.tricks) == TRICKS:
        done = completion(h)
        _completed(h, done)
        return [e, done]
    return [e]


def trick_end(h: Hand, plays: tuple[tuple[int, Tile], ...], led: int) -> list[ev.Event]:
    """`follow_up` after the play that completes a trick, computed from the state before it."""
    assert h.trump is not None
    winner = trick_winner(plays, led, h.trump)
    tricks = len(h.tricks) + 1
    won = ev.TrickWon(tricks, winner, led, plays)
    if tricks < TRICKS:
        return [won]
    tricks_won = _set(h.tricks_won, winner, h.tricks_won[winner] + 1)
    dropped = tuple(s for s, d in enumerate(h.decisions) if d == "drop")
    return [won, ev.HandCompleted(tricks_won, looed_seats(h, tricks_won), dropped, h.for_pool)]
