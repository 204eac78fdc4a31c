"""Bot policies: pure functions of a seat view and the legal actions (never the full state)."""

from __future__ import annotations

import random
from collections.abc import Callable

from ledger.core.rules.actions import Action, Decide, Discard, Play
from ledger.core.rules.tiles import DOUBLE, Tile, follows, is_trump, rank, suits_of, trick_winner
from ledger.core.rules.view import SeatView

Policy = Callable[[SeatView, list[Action], random.Random], Action]


def random_policy(view: SeatView, legal: list[Action], rng: random.Random) -> Action:
    """Uniform over the legal actions."""
    return rng.choice(legal)


def tile_value(t: Tile, trump: int) -> float:
    """Rough trick-taking strength: any trump beats any plain tile; doubles top their suit."""
    if is_trump(t, trump):
        return 10 + rank(t, trump)
    return max(rank(t, s) for s in suits_of(t, trump)) / 2


def hand_strength(tiles: tuple[Tile, ...] | list[Tile], trump: int) -> float:
    return sum(tile_value(t, trump) for t in tiles)


def heuristic_policy(view: SeatView, legal: list[Action], rng: random.Random) -> Action:
    """Miss or drop weak hands, win with the cheapest winner, keep trumps, avoid the loo."""
    first = legal[0]
    assert view.trump is not None
    if isinstance(first, Decide):
        return _decide(view, legal)
    if isinstance(first, Discard):
        return min(legal, key=lambda a: hand_strength(a.tiles, view.trump))  # type: ignore[union-attr]
    return _play(view, legal)


def _decide(view: SeatView, legal: list[Action]) -> Action:
    trump = view.trump
    assert trump is not None
    strength = hand_strength(view.hand, trump)
    by_choice: dict[str, list[Decide]] = {}
    for a in legal:
        assert isinstance(a, Decide)
        by_choice.setdefault(a.choice, []).append(a)
    plays = by_choice["play"]
    best = max(plays, key=lambda a: _after_exchange(view, a))
    if _after_exchange(view, best) >= 24 or strength >= 24:
        return _prefer_pool(best, plays)
    if "miss" in by_choice:
        return by_choice["miss"][0]
    if "drop" in by_choice and _after_exchange(view, best) < 14:
        return by_choice["drop"][0]
    return _prefer_pool(best, plays)


def _after_exchange(view: SeatView, a: Decide) -> float:
    assert view.trump is not None
    tiles = list(view.hand)
    if a.take_turn_up and view.turn_up is not None:
        tiles = [t for t in tiles if t not in a.discard] + [view.turn_up]
    return hand_strength(tiles, view.trump) - (3 if a.for_pool else 0)


def _prefer_pool(best: Decide, plays: list[Decide]) -> Decide:
    # Playing for the pool removes the loo risk; worth it unless the hand is strong.
    for a in plays:
        if a.for_pool and a.take_turn_up == best.take_turn_up and a.discard == best.discard:
            return a
    return best


def _play(view: SeatView, legal: list[Action]) -> Action:
    trump = view.trump
    assert trump is not None
    plays = [a for a in legal if isinstance(a, Play)]
    cur = view.current
    if cur is None:
        # Lead: a sure winner (top trump) if held, else the cheapest lead, kept off trumps.
        top = max(plays, key=lambda a: tile_value(a.tile, trump))
        if is_trump(top.tile, trump) and DOUBLE[top.tile]:
            return top
        return min(plays, key=lambda a: tile_value(a.tile, trump))
    winners = [a for a in plays
               if trick_winner(cur.plays + ((view.seat, a.tile),), cur.suit, trump) == view.seat]
    if winners:
        return min(winners, key=lambda a: tile_value(a.tile, trump))
    followers = [a for a in plays if follows(a.tile, cur.suit, trump)]
    pool = followers or plays
    return min(pool, key=lambda a: tile_value(a.tile, trump))


DESCRIPTIONS = {
    "random": "plays a uniformly random legal action (a baseline)",
    "heuristic": "misses or drops weak hands, wins with its cheapest winner, keeps trumps "
                 "and avoids the loo",
}

POLICIES: dict[str, tuple[Policy, str]] = {
    "random": (random_policy, "1"),
    "heuristic": (heuristic_policy, "1"),
}
