"""Helpers shared by the rules-engine unit tests (tests/unit/test_rules_*.py).

Everything goes through the public engine API: `make_options`, `table.create`,
`table.start_hand`, `table.act`, `table.settle`, folded with `table.replay`.
"""

from __future__ import annotations

from typing import Any

import pytest

from ledger.core import events as ev
from ledger.core.errors import RuleViolation
from ledger.core.rules import table as tb
from ledger.core.rules.actions import Action, Decide, Discard, Play
from ledger.core.rules.options import make_options
from ledger.core.rules.tiles import parse_tile


def T(text: str) -> int:  # noqa: N802 - reads like a tile literal: T("6-3")
    """One tile from its name."""
    return parse_tile(text)


def TS(text: str) -> tuple[int, ...]:  # noqa: N802
    """Several tiles from space-separated names: TS("6-3 5-5")."""
    return tuple(parse_tile(x) for x in text.split())


class Game:
    """A table plus the full list of its events, driven one call at a time."""

    def __init__(self, variant: str = "loo", scoring: str | None = None, players: int = 4,
                 options: dict[str, Any] | None = None, deal: str = "recorded",
                 dealer: Any = 0, lots_seed: bytes = bytes(32)) -> None:
        self.opts = make_options(variant, scoring, players, options or {}, deal)
        self.events: list[ev.Event] = []
        self.t = tb.Table(opts=self.opts)
        self._apply(tb.create(self.opts, [(f"p{i}", None) for i in range(players)], dealer,
                              {}, lots_seed))

    def _apply(self, events: list[ev.Event]) -> list[ev.Event]:
        self.events += events
        self.t = tb.replay(events, self.t)
        return events

    @property
    def h(self):  # noqa: ANN201 - the live Hand
        return self.t.hand

    # -- hands -----------------------------------------------------------------------------
    def deal(self, hands: dict[int, str], turn_up: str) -> list[ev.Event]:
        """A recorded deal: {seat: "6-6 5-5 ..."}, the turn-up."""
        dealt = tuple(TS(hands[s]) for s in range(self.opts.players))
        every = [t for hand in dealt for t in hand] + [T(turn_up)]
        assert all(len(hand) == 5 for hand in dealt), "a test deal needs five tiles a seat"
        assert len(set(every)) == len(every), "a test deal may not repeat a tile"
        return self._apply(tb.start_hand(self.t, recorded=(dealt, T(turn_up))))

    def shuffled(self, seed: bytes) -> list[ev.Event]:
        return self._apply(tb.start_hand(self.t, seed=seed))

    def result(self, result: dict[str, Any]) -> list[ev.Event]:
        return self._apply(tb.start_hand(self.t, result=result))

    def settle(self) -> list[ev.Event]:
        return self._apply(tb.settle(self.t))

    def close(self) -> list[ev.Event]:
        return self._apply(tb.close(self.t))

    # -- actions ---------------------------------------------------------------------------
    def act(self, action: Action) -> list[ev.Event]:
        return self._apply(tb.act(self.t, action))

    def decide(self, seat: int, choice: str, **kw: Any) -> list[ev.Event]:
        return self.act(Decide(seat, choice, **kw))

    def discard(self, seat: int, tiles: str) -> list[ev.Event]:
        return self.act(Discard(seat, TS(tiles)))

    def play(self, seat: int, tile: str, suit: int | None = None) -> list[ev.Event]:
        return self.act(Play(seat, T(tile), suit))

    def plays(self, script: str) -> list[ev.Event]:
        """Play a script like "1:6-6/6 0:6-5 ..." (seat:tile, optional /suit for a lead)."""
        out: list[ev.Event] = []
        for step in script.split():
            seat, rest = step.split(":")
            tile, _, suit = rest.partition("/")
            out += self.play(int(seat), tile, int(suit) if suit else None)
        return out

    def refuse(self, action: Action) -> RuleViolation:
        """The action must be refused; return the violation for closer checks."""
        before = self.t
        with pytest.raises(RuleViolation) as info:
            tb.act(self.t, action)
        assert self.t == before
        return info.value


def of_type(events: list[ev.Event], cls: type) -> list[Any]:
    return [e for e in events if isinstance(e, cls)]


def one(events: list[ev.Event], cls: type) -> Any:
    found = of_type(events, cls)
    assert len(found) == 1, f"expected one {cls.__name__}, got {found}"
    return found[0]
