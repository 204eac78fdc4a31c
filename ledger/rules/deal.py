"""The fair deal of API.md: seed -> shuffled order -> hands, turn-up, boneyard (RULES §2, §3)."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from ledger.rules.tiles import HI, LO, TILES, Tile

HAND_SIZE = 5


def commitment(seed: bytes) -> str:
    """Hex SHA-256 of the 32 raw seed bytes, published before any tile is seen."""
    return hashlib.sha256(seed).hexdigest()


def _stream(seed: bytes) -> Iterator[int]:
    """4-byte big-endian words of HMAC-SHA256(seed, k as 8-byte big-endian), k = 0, 1, ..."""
    k = 0
    while True:
        block = hmac.new(seed, k.to_bytes(8, "big"), hashlib.sha256).digest()
        for i in range(0, 32, 4):
            yield int.from_bytes(block[i : i + 4], "big")
        k += 1


def shuffle(seed: bytes) -> list[Tile]:
    """Fisher-Yates over the canonical order with rejection sampling, exactly as API.md."""
    words = _stream(seed)
    items = list(TILES)
    for i in range(len(items) - 1, 0, -1):
        n = i + 1
        limit = 2**32 - (2**32 % n)
        x = next(words)
        while x >= limit:
            x = next(words)
        j = x % n
        items[i], items[j] = items[j], items[i]
    return items


@dataclass(frozen=True, slots=True)
class Deal:
    """The result of a deal: five tiles per seat, the turn-up and the boneyard in order."""

    hands: tuple[tuple[Tile, ...], ...]
    turn_up: Tile
    boneyard: tuple[Tile, ...]


def deal_order(players: int, dealer: int) -> list[int]:
    """Seats in dealing (and deciding) order: the dealer's left first, the dealer last."""
    return [(dealer + 1 + i) % players for i in range(players)]


def deal(order: Sequence[Tile], players: int, dealer: int) -> Deal:
    """§3.2-3.4: five at a time from the dealer's left, the dealer last, then the turn-up."""
    hands: list[tuple[Tile, ...]] = [()] * players
    for k, seat in enumerate(deal_order(players, dealer)):
        hands[seat] = tuple(order[k * HAND_SIZE : (k + 1) * HAND_SIZE])
    used = players * HAND_SIZE
    return Deal(tuple(hands), order[used], tuple(order[used + 1 :]))


def lots(seed: bytes, players: int) -> tuple[list[Tile], int]:
    """§2 by lots: seat i draws item i of the seed's shuffle; the highest tile deals."""
    order = shuffle(seed)
    draws = order[:players]
    winner = max(range(players), key=lambda s: (HI[draws[s]], LO[draws[s]]))
    return draws, winner
