"""Tiles, suits, trumps and ranking (RULES §1, §5).

A tile is an int 0..27, its index in the canonical order of API.md "Fair deal"
(0-0, 0-1, ..., 0-6, 1-1, ..., 6-6); lookup tables keep the hot paths cheap.
"""

from __future__ import annotations

from collections.abc import Iterable

from ledger.core.errors import Invalid

Tile = int

CANONICAL: tuple[tuple[int, int], ...] = tuple((a, b) for a in range(7) for b in range(a, 7))
TILES: tuple[Tile, ...] = tuple(range(len(CANONICAL)))
HI: tuple[int, ...] = tuple(b for _a, b in CANONICAL)
LO: tuple[int, ...] = tuple(a for a, _b in CANONICAL)
NAMES: tuple[str, ...] = tuple(f"{b}-{a}" for a, b in CANONICAL)
DOUBLE: tuple[bool, ...] = tuple(a == b for a, b in CANONICAL)
_BY_PAIR = {pair: i for i, pair in enumerate(CANONICAL)}
_PARSE = {f"{a}-{b}": i for i, (a, b) in enumerate(CANONICAL)} | {
    f"{b}-{a}": i for i, (a, b) in enumerate(CANONICAL)
}
SUIT_NAMES = ("blanks", "ones", "twos", "threes", "fours", "fives", "sixes")

# BEARS[suit] = tiles bearing that suit; with trumps `trump` they are TRUMPS[trump].
BEARS: tuple[frozenset[Tile], ...] = tuple(
    frozenset(t for t in TILES if s in (HI[t], LO[t])) for s in range(7)
)
TRUMPS = BEARS


def tile(a: int, b: int) -> Tile:
    """The tile with ends a and b, in either order."""
    return _BY_PAIR[(min(a, b), max(a, b))]


def parse_tile(text: object) -> Tile:
    """Parse "6-3" or "3-6", exactly as written: no spaces or other characters around it
    (API.md Conventions); raise Invalid for anything else."""
    if isinstance(text, str):  # one lookup: " 6-3" or "6-3\n" is not a tile (422, not 6-3)
        found = _PARSE.get(text)
        if found is not None:
            return found
    raise Invalid("invalid_tile", f"{text!r} is not a tile: write its two ends 0..6 joined by "
                  "a hyphen, as \"6-3\", with no spaces or other characters around them")


def name(t: Tile) -> str:
    """The tile written high end first."""
    return NAMES[t]


def names(tiles: Iterable[Tile]) -> list[str]:
    """Tiles written high end first, highest tile first."""
    return [NAMES[t] for t in sort_tiles(tiles)]


def sort_tiles(tiles: Iterable[Tile]) -> list[Tile]:
    """Highest first: by the higher end, then the lower end."""
    return sorted(tiles, key=SORT_KEY.__getitem__, reverse=True)


def is_trump(t: Tile, trump: int) -> bool:
    """§5: every tile bearing the trump suit is a trump, and only a trump."""
    return HI[t] == trump or LO[t] == trump


def suits_of(t: Tile, trump: int) -> tuple[int, ...]:
    """The suits a tile may be led as (§6 Leading): trumps as trumps, doubles as their own suit."""
    if is_trump(t, trump):
        return (trump,)
    if DOUBLE[t]:
        return (HI[t],)
    return (HI[t], LO[t])


def follows(t: Tile, led: int, trump: int) -> bool:
    """§6.3: a tile follows the led suit if it bears it and is not a trump (or trumps were led)."""
    if led == trump:
        return is_trump(t, trump)
    return (HI[t] == led or LO[t] == led) and not is_trump(t, trump)


def rank(t: Tile, suit: int) -> int:
    """§5: within a suit the double is on top (7), then by the other end (0..6)."""
    if DOUBLE[t]:
        return 7
    return HI[t] + LO[t] - suit


def trick_winner(plays: Iterable[tuple[int, Tile]], led: int, trump: int) -> int:
    """§6 Winning a trick: the highest trump, else the highest tile of the led suit."""
    if not (0 <= led < 7 and 0 <= trump < 7):
        return _trick_winner(plays, led, trump)
    keys = WIN_KEYS[trump][led]
    best_seat, best_key = -1, -1
    for seat, t in plays:
        key = keys[t]
        if key > best_key:  # -1: neither follows nor trumps, can never win
            best_seat, best_key = seat, key
    return best_seat


def _win_key(t: Tile, led: int, trump: int) -> tuple[int, int]:
    if is_trump(t, trump):
        return (2, rank(t, trump))
    if follows(t, led, trump):
        return (1, rank(t, led))
    return (-1, -1)


def _trick_winner(plays: Iterable[tuple[int, Tile]], led: int, trump: int) -> int:
    best_seat, best_key = -1, (-1, -1)
    for seat, t in plays:
        key = _win_key(t, led, trump)
        if key > best_key:
            best_seat, best_key = seat, key
    return best_seat


def trump_of(turn_up: Tile) -> int:
    """§3.3: the trump suit is the turn-up's higher end."""
    return HI[turn_up]


# Lookup tables for the hot paths (legal actions, checks, trick winner), from the rules above.
# FOLLOWERS[led][trump]: the tiles that follow `led` when `trump` is trumps (§6.3).
FOLLOWERS: tuple[tuple[frozenset[Tile], ...], ...] = tuple(
    tuple(frozenset(t for t in TILES if follows(t, led, trump)) for trump in range(7))
    for led in range(7)
)
# LEADS[trump][t]: the suits `t` may be led as (§6 Leading).
LEADS: tuple[tuple[tuple[int, ...], ...], ...] = tuple(
    tuple(suits_of(t, trump) for t in TILES) for trump in range(7)
)
# SORT_KEY[t] orders tiles like sort_tiles (higher end, then lower end).
SORT_KEY: tuple[int, ...] = tuple(HI[t] * 7 + LO[t] for t in TILES)
# WIN_KEYS[trump][led][t]: trick_winner's order as one int (trumps over followers; -1 neither).
WIN_KEYS: tuple[tuple[tuple[int, ...], ...], ...] = tuple(
    tuple(tuple(k * 8 + r if k > 0 else -1 for k, r in (_win_key(t, led, trump) for t in TILES))
          for led in range(7)) for trump in range(7)
)
