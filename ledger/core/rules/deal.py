"""The fair deal of API.md: seed -> shuffled order -> hands, turn-up, boneyard (RULES §2, §3)."""

from __future__ import annotations

import hashlib
import hmac
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ledger.core.rules.tiles import HI, LO, TILES, Tile

HAND_SIZE = 5


def commitment(seed: bytes) -> str:
    """Hex SHA-256 of the 32 raw seed bytes, published before any tile is seen."""
    return hashlib.sha256(seed).hexdigest()


_IPAD = bytes(x ^ 0x36 for x in range(256))  # RFC 2104: key XOR ipad / opad, via translate
_OPAD = bytes(x ^ 0x5C for x in range(256))
_BLOCK = hashlib.sha256().block_size
_LIMITS = tuple(2**32 - (2**32 % n) if n else 0 for n in range(len(TILES) + 1))


def _hmac_pads(seed: bytes) -> tuple[Any, Any]:
    """SHA-256 states after the HMAC inner and outer key blocks, computed once per seed."""
    key = seed if len(seed) <= _BLOCK else hashlib.sha256(seed).digest()
    key = key.ljust(_BLOCK, b"\0")
    return hashlib.sha256(key.translate(_IPAD)), hashlib.sha256(key.translate(_OPAD))


def _words(seed: bytes, blocks: int) -> tuple[int, ...]:
    """The first `blocks` x 8 words of the stream (blocks k = 0 .. blocks-1)."""
    inner, outer = _hmac_pads(seed)
    out = []
    for k in range(blocks):
        i = inner.copy()
        i.update(k.to_bytes(8, "big"))
        o = outer.copy()
        o.update(i.digest())  # HMAC = H(key^opad || H(key^ipad || msg)), as hmac.new computes
        out.append(o.digest())
    return struct.unpack(f">{8 * blocks}I", b"".join(out))


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
    return list(_shuffled(bytes(seed)))


_K = tuple(k.to_bytes(8, "big") for k in range(4))
_WORDS_4 = struct.Struct(">32I").unpack


def _first_words(seed: bytes) -> tuple[int, ...]:
    """`_words(seed, 4)` written out: the four blocks a deal nearly always needs."""
    inner, outer = _hmac_pads(seed)
    i0 = inner.copy()
    i0.update(_K[0])
    o0 = outer.copy()
    o0.update(i0.digest())
    i1 = inner.copy()
    i1.update(_K[1])
    o1 = outer.copy()
    o1.update(i1.digest())
    i2 = inner.copy()
    i2.update(_K[2])
    o2 = outer.copy()
    o2.update(i2.digest())
    inner.update(_K[3])
    outer.update(inner.digest())
    return _WORDS_4(o0.digest() + o1.digest() + o2.digest() + outer.digest())


def shuffle_once(seed: bytes) -> list[Tile]:
    """`shuffle` without its cache, for callers that never deal a seed twice (rollouts,
    `loo bench engine`): a fresh list each time."""
    words = _first_words(seed)  # 32 words; 27 draws (more only after a rejection, p < 1e-8)
    w = 0
    items = list(TILES)
    limits = _LIMITS
    for i in range(len(items) - 1, 0, -1):  # invariant: len(words) - w >= i
        x = words[w]
        w += 1
        if x >= limits[i + 1]:
            x, w, words = _redraw(seed, words, w, i)
        j = x % (i + 1)
        items[i], items[j] = items[j], items[i]
    return items


@lru_cache(maxsize=64)  # a hand's order is needed at the deal and again at the reveal
def _shuffled(seed: bytes) -> tuple[Tile, ...]:
    return tuple(shuffle_once(seed))


def _redraw(seed: bytes, words: tuple[int, ...], w: int,
            i: int) -> tuple[int, int, tuple[int, ...]]:
    """uniform(i + 1) after a rejected word: read on, extending the stream as needed."""
    while True:
        if len(words) - w < i + 1:
            words = _words(seed, len(words) // 8 + 4)  # a longer prefix of the same stream
        x = words[w]
        w += 1
        if x < _LIMITS[i + 1]:
            return x, w, words


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
