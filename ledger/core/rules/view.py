"""What one seat may know of a hand (§10): its own tiles and public information only."""

from __future__ import annotations

from dataclasses import dataclass

from ledger.core.rules.hand import Hand, Trick
from ledger.core.rules.options import Options
from ledger.core.rules.tiles import Tile


@dataclass(frozen=True, slots=True)
class SeatView:
    """The observer of one seat: bots and the terminal player only ever get this."""

    seat: int
    opts: Options
    number: int
    dealer: int
    phase: str
    turn: int | None
    hand: tuple[Tile, ...]
    turn_up: Tile | None
    trump: int | None
    turn_up_taken: bool
    decisions: tuple[str | None, ...]
    misses: int
    counts: tuple[int, ...]
    boneyard_count: int
    tricks: tuple[Trick, ...]
    current: Trick | None
    tricks_won: tuple[int, ...]
    pool_at_start: int
    for_pool: bool = False  # §4: the dealer's announcement is public
    known_out: tuple[Tile, ...] = ()  # tiles this seat itself put out on a miss or discarded


def seat_view(h: Hand, seat: int) -> SeatView:
    """Project the full state down to what `seat` may see."""
    return SeatView(seat=seat, opts=h.opts, number=h.number, dealer=h.dealer, phase=h.phase,
                    turn=h.turn, hand=h.hands[seat] if h.hands else (), turn_up=h.turn_up,
                    trump=h.trump, turn_up_taken=h.turn_up_taken, decisions=h.decisions,
                    misses=h.misses, counts=tuple(len(x) for x in h.hands),
                    boneyard_count=len(h.boneyard), tricks=h.tricks, current=h.current,
                    tricks_won=h.tricks_won, pool_at_start=h.pool_at_start,
                    for_pool=h.for_pool, known_out=_own(h.put_out, seat) + _own(h.discards, seat))


def _own(per_seat: tuple[tuple[Tile, ...], ...], seat: int) -> tuple[Tile, ...]:
    return per_seat[seat] if seat < len(per_seat) else ()
