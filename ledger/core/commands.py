"""The intents every writer sends to the command handler (API, workers, CLI, tests)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ledger.core.rules.actions import Action
from ledger.core.rules.tiles import Tile


@dataclass(frozen=True, slots=True)
class CreateTable:
    variant: str
    scoring: str | None
    seats: tuple[tuple[str, str | None], ...]
    first_dealer: Any
    deal: str
    options: dict[str, Any] = field(default_factory=dict)
    club: str | None = None  # a club table (API.md Club tables and seasons)
    season: str | None = None
    members: tuple[str | None, ...] = ()  # per seat: a club member id or None


@dataclass(frozen=True, slots=True)
class StartHand:
    """Start the next hand; recorded tables send the deal, results tables the result."""

    hands: tuple[tuple[Tile, ...], ...] | None = None
    turn_up: Tile | None = None
    result: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Act:
    action: Action


@dataclass(frozen=True, slots=True)
class SettleHand:
    pass


@dataclass(frozen=True, slots=True)
class PlayBot:
    """Let the bot whose turn it is move (the worker's command)."""


@dataclass(frozen=True, slots=True)
class TimeOut:
    """The seat to act let options.turn_seconds pass: act for it (the timer's command)."""

    seat: int


@dataclass(frozen=True, slots=True)
class CloseTable:
    pass


@dataclass(frozen=True, slots=True)
class AddSpectator:
    """A read-only token; the app layer makes it and keeps only its hash."""

    id: str
    token_hash: str
    label: str | None = None


@dataclass(frozen=True, slots=True)
class RevokeSpectator:
    id: str


@dataclass(frozen=True, slots=True)
class VoidHand:
    """Void the latest settled hand by compensating events (a scorer's correction)."""

    number: int
    reason: str


Command = (CreateTable | StartHand | Act | SettleHand | PlayBot | CloseTable | AddSpectator
           | RevokeSpectator | VoidHand | TimeOut)
