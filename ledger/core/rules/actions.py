"""The actions a seat can take in a hand (API.md "Actions"), as frozen values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger.core.rules.tiles import NAMES, Tile


@dataclass(frozen=True, slots=True)
class Decide:
    """§4: play (stand), miss (exchange) or drop; the dealer's extras ride along."""

    seat: int
    choice: str
    take_turn_up: bool = False
    discard: tuple[Tile, ...] = ()
    for_pool: bool = False
    drawn: tuple[Tile, ...] | None = None  # recorded tables: the tiles drawn on a miss

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "decide", "choice": self.choice}
        if self.take_turn_up:
            out["take_turn_up"] = True
            out["discard"] = [NAMES[t] for t in self.discard]
        if self.for_pool:
            out["for_pool"] = True
        if self.drawn is not None:
            out["drawn"] = [NAMES[t] for t in self.drawn]
        return out


@dataclass(frozen=True, slots=True)
class Discard:
    """§4: after a miss, discard down to five, face down."""

    seat: int
    tiles: tuple[Tile, ...]

    def body(self) -> dict[str, Any]:
        return {"type": "discard", "tiles": [NAMES[t] for t in self.tiles]}


@dataclass(frozen=True, slots=True)
class Play:
    """§6: play a tile to the trick; `suit` declares the led suit of a plain lead."""

    seat: int
    tile: Tile
    suit: int | None = None

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "play", "tile": NAMES[self.tile]}
        if self.suit is not None:
            out["suit"] = self.suit
        return out


Action = Decide | Discard | Play
