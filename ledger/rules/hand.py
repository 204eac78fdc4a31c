"""The hand as a state machine (RULES §3-§7): frozen state, decide -> events, evolve -> state."""

from __future__ import annotations

from dataclasses import dataclass

from ledger import events as ev
from ledger.errors import RuleViolation
from ledger.rules.frozen import replace
from ledger.rules.options import Options
from ledger.rules.tiles import Tile, is_trump, trick_winner, trump_of

TRICKS = 5


@dataclass(frozen=True, slots=True)
class Trick:
    """One trick: who led, the declared suit, the plays in order, and the winner once won."""

    leader: int
    suit: int
    plays: tuple[tuple[int, Tile], ...]
    winner: int | None = None


@dataclass(frozen=True, slots=True)
class Hand:
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

    @property
    def players(self) -> int:
        return self.opts.players

    @property
    def active(self) -> list[int]:
        """§1: seats still in the hand (not dropped)."""
        return [s for s in range(self.players) if self.decisions[s] != "drop"]

    @property
    def eldest(self) -> int:
        """§1: the first active player to the dealer's left."""
        return self.next_active(self.dealer)

    def next_active(self, seat: int) -> int:
        """The next seat to the left that has not dropped."""
        for k in range(1, self.players + 1):
            s = (seat + k) % self.players
            if self.decisions[s] != "drop":
                return s
        return seat

    def trumps_held(self, seat: int) -> int:
        trump = self.trump
        assert trump is not None
        return sum(1 for t in self.hands[seat] if is_trump(t, trump))


def new_hand(number: int, dealer: int, opts: Options, mode: str, pool_at_start: int,
             commitment: str | None = None) -> Hand:
    """A hand just started: stakes posted, no tile dealt yet."""
    n = opts.players
    empty: tuple[tuple[Tile, ...], ...] = ((),) * n
    return Hand(number=number, dealer=dealer, opts=opts, mode=mode, commitment=commitment,
                pool_at_start=pool_at_start, hands=empty, decisions=(None,) * n,
                drawn=empty, put_out=empty, discards=empty, tricks_won=(0,) * n)


def _set(seq: tuple, i: int, value: object) -> tuple:
    return seq[:i] + (value,) + seq[i + 1 :]


def _without(tiles: tuple[Tile, ...], gone: tuple[Tile, ...] | list[Tile]) -> tuple[Tile, ...]:
    return tuple(t for t in tiles if t not in gone)


def violation(code: str, rule: str, detail: str) -> RuleViolation:
    return RuleViolation(code, rule, detail)


# ---- evolve: apply one event -------------------------------------------------------------

def _dealt(h: Hand, e: ev.TilesDealt) -> Hand:
    return replace(h, hands=e.hands, boneyard=e.boneyard, ordered=e.ordered)


def _turned(h: Hand, e: ev.TrumpTurned) -> Hand:
    return replace(h, turn_up=e.tile, trump=e.trump, phase="deciding",
                   turn=(h.dealer + 1) % h.players)


def _advance(h: Hand, seat: int) -> Hand:
    """After a seat's decision is complete: the next seat decides, or play begins."""
    if seat != h.dealer:
        nxt = (seat + 1) % h.players
        others_in = any(h.decisions[s] != "drop" for s in range(h.players) if s != h.dealer)
        if nxt == h.dealer and not others_in:
            return replace(h, phase="deciding", turn=None)  # §4: the dealer wins without play
        return replace(h, phase="deciding", turn=nxt)
    if len(h.active) >= 2:
        return replace(h, phase="playing", turn=h.eldest)
    return replace(h, phase="deciding", turn=None)  # §4: one player left


def _decided(h: Hand, e: ev.PlayerDecided) -> Hand:
    h = replace(h, decisions=_set(h.decisions, e.seat, e.choice),
                for_pool=h.for_pool or e.for_pool)
    if e.choice == "miss":
        return replace(h, misses=h.misses + 1)
    return _advance(h, e.seat)


def _miss_drawn(h: Hand, e: ev.MissDrawn) -> Hand:
    return replace(h, hands=_set(h.hands, e.seat, e.tiles),
                   drawn=_set(h.drawn, e.seat, e.tiles),
                   put_out=_set(h.put_out, e.seat, e.put_out),
                   boneyard=_without(h.boneyard, e.tiles), phase="discarding", turn=e.seat)


def _discarded(h: Hand, e: ev.TilesDiscarded) -> Hand:
    h = replace(h, hands=_set(h.hands, e.seat, _without(h.hands[e.seat], e.tiles)),
                discards=_set(h.discards, e.seat, h.discards[e.seat] + e.tiles))
    return _advance(h, e.seat) if h.phase == "discarding" else h


def _turn_up_taken(h: Hand, e: ev.TurnUpTaken) -> Hand:
    return replace(h, hands=_set(h.hands, e.seat, h.hands[e.seat] + (e.tile,)),
                   turn_up_taken=True)


def _played(h: Hand, e: ev.TilePlayed) -> Hand:
    cur = h.current or Trick(leader=e.seat, suit=e.suit if e.suit is not None else -1, plays=())
    cur = replace(cur, plays=cur.plays + ((e.seat, e.tile),))
    done = len(cur.plays) == len(h.active)
    return replace(h, hands=_set(h.hands, e.seat, _without(h.hands[e.seat], (e.tile,))),
                   current=cur, turn=None if done else h.next_active(e.seat))


def _trick_won(h: Hand, e: ev.TrickWon) -> Hand:
    trick = Trick(leader=e.plays[0][0], suit=e.suit, plays=e.plays, winner=e.seat)
    tricks = h.tricks + (trick,)
    return replace(h, tricks=tricks, current=None,
                   tricks_won=_set(h.tricks_won, e.seat, h.tricks_won[e.seat] + 1),
                   turn=e.seat if len(tricks) < TRICKS else None)


def _won_without_play(h: Hand, e: ev.HandWonWithoutPlay) -> Hand:
    return replace(h, tricks_won=_set((0,) * h.players, e.seat, TRICKS),
                   won_without_play=e.seat, turn=None)


def _completed(h: Hand, e: ev.HandCompleted) -> Hand:
    return replace(h, phase="complete", turn=None, tricks_won=e.tricks_won, looed=e.looed,
                   for_pool=e.for_pool or h.for_pool)


EVOLVE = {
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
}


def evolve(h: Hand, e: ev.Event) -> Hand:
    """Apply one hand-level event (others leave the hand unchanged)."""
    fn = EVOLVE.get(type(e))
    return fn(h, e) if fn else h


def deal_events(h: Hand, hands: tuple[tuple[Tile, ...], ...], turn_up: Tile,
                boneyard: tuple[Tile, ...], ordered: bool) -> list[ev.Event]:
    """§3: the deal and the turn-up (Rounce: exposed by the trump-holder's right, §9)."""
    exposer = (h.dealer - 1) % h.players if h.opts.is_rounce else h.dealer
    return [ev.TilesDealt(hands=hands, boneyard=boneyard, ordered=ordered),
            ev.TrumpTurned(tile=turn_up, trump=trump_of(turn_up), exposed_by=exposer)]


def looed_seats(h: Hand, tricks_won: tuple[int, ...]) -> tuple[int, ...]:
    """§7: stayed in and won no trick; a dealer playing for the pool is never looed."""
    return tuple(s for s in h.active if tricks_won[s] == 0
                 and not (h.for_pool and s == h.dealer))


def completion(h: Hand) -> ev.HandCompleted:
    dropped = tuple(s for s in range(h.players) if h.decisions[s] == "drop")
    return ev.HandCompleted(tricks_won=h.tricks_won, looed=looed_seats(h, h.tricks_won),
                            dropped=dropped, for_pool=h.for_pool)


def consequences(h: Hand) -> list[ev.Event]:
    """Events that follow by rule from the state alone: a trick won, the end of the hand."""
    out: list[ev.Event] = []
    if h.phase == "deciding" and h.turn is None:
        (winner,) = h.active
        reason = "all_dropped" if winner == h.dealer and h.decisions[winner] is None else "one_left"
        out.append(ev.HandWonWithoutPlay(seat=winner, reason=reason))
    elif h.phase == "playing" and h.current is not None and h.turn is None:
        assert h.trump is not None
        winner = trick_winner(h.current.plays, h.current.suit, h.trump)
        out.append(ev.TrickWon(trick=len(h.tricks) + 1, seat=winner, suit=h.current.suit,
                               plays=h.current.plays))
    else:
        return out
    for e in out:
        h = evolve(h, e)
    if h.won_without_play is not None or len(h.tricks) == TRICKS:
        out.append(completion(h))
    return out
