"""Every action a seat may take now (what bots and the API's `legal_actions` use)."""

from __future__ import annotations

from itertools import combinations

from ledger.rules.actions import Action, Decide, Discard, Play
from ledger.rules.decide import may_play_for_pool
from ledger.rules.hand import Hand
from ledger.rules.tiles import follows, is_trump, sort_tiles, suits_of


def legal_actions(h: Hand, seat: int) -> list[Action]:
    """Complete list for the seat to act; empty for everyone else."""
    if h.turn != seat or h.mode == "results":
        return []
    if h.phase == "deciding":
        return _decisions(h, seat)
    if h.phase == "discarding":
        held = sort_tiles(h.hands[seat])
        return [Discard(seat, tuple(c)) for c in combinations(held, h.opts.miss_discard)]
    if h.phase == "playing":
        return _plays(h, seat)
    return []


def _decisions(h: Hand, seat: int) -> list[Action]:
    out: list[Action] = []
    pool_options = (False, True) if may_play_for_pool(h, seat) else (False,)
    for for_pool in pool_options:
        out.append(Decide(seat, "play", for_pool=for_pool))
        if seat == h.dealer and h.turn_up is not None:
            for t in sort_tiles(h.hands[seat]):
                out.append(Decide(seat, "play", take_turn_up=True, discard=(t,),
                                  for_pool=for_pool))
    if h.misses < h.opts.max_misses:
        if h.ordered:
            out.append(Decide(seat, "miss"))
        elif len(h.boneyard) == h.opts.miss_draw:
            # Recorded 4-player table: the miss takes the whole boneyard, so it is known.
            out.append(Decide(seat, "miss", drawn=tuple(sort_tiles(h.boneyard))))
    if h.opts.drop_allowed:
        out.append(Decide(seat, "drop"))
    return out


def _plays(h: Hand, seat: int) -> list[Action]:
    assert h.trump is not None
    hand, trump = sort_tiles(h.hands[seat]), h.trump
    if h.current is None:
        held = sum(1 for t in hand if is_trump(t, trump))
        must_trump = held >= h.opts.lead_trump_threshold or (
            held > 0 and bool(h.tricks) and h.tricks[-1].winner == seat)
        tiles = [t for t in hand if is_trump(t, trump)] if must_trump else hand
        return [Play(seat, t, s) for t in tiles for s in suits_of(t, trump)]
    led = h.current.suit
    able = [t for t in hand if follows(t, led, trump)]
    if able:
        return [Play(seat, t) for t in able]
    if not h.opts.is_rounce:
        trumps = [t for t in hand if is_trump(t, trump)]
        if trumps:
            return [Play(seat, t) for t in trumps]
    return [Play(seat, t) for t in hand]
