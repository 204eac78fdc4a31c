"""Every action a seat may take now (what bots and the API's `legal_actions` use)."""

from __future__ import annotations

from itertools import combinations

from ledger.core.rules.actions import Action, Decide, Discard, Play
from ledger.core.rules.decide import may_play_for_pool
from ledger.core.rules.hand import Hand
from ledger.core.rules.tiles import FOLLOWERS, LEADS, SORT_KEY, TILES, TRUMPS, sort_tiles

# Actions are frozen values: the plays of the four seats are made once and shared.
_PLAY = tuple(tuple(Play(seat, t) for t in TILES) for seat in range(4))
_LEAD = tuple(tuple(tuple(Play(seat, t, s) for s in range(7)) for t in TILES) for seat in range(4))
_KEY = SORT_KEY.__getitem__


def legal_actions(h: Hand, seat: int) -> list[Action]:
    """Complete list for the seat to act; empty for everyone else."""
    if h.turn != seat or h.mode == "results":
        return []
    phase = h.phase
    if phase == "playing":
        return _plays(h, seat)  # type: ignore[return-value]
    if phase == "deciding":
        return _decisions(h, seat)
    if phase == "discarding":
        held = sort_tiles(h.hands[seat])
        return [_discard(seat, c) for c in combinations(held, h.opts.miss_discard)]
    return []


def _discard(seat: int, tiles: tuple[int, ...]) -> Discard:
    """Discard values are shared too: one or two tiles, at most C(28, 2) a seat."""
    if not 1 <= len(tiles) <= 2:
        return Discard(seat, tiles)
    key = seat << 10 | (tiles[0] << 5 if len(tiles) == 2 else 31 << 5) | tiles[-1]
    found = _DISCARDS.get(key)
    if found is None:
        found = _DISCARDS[key] = Discard(seat, tiles)
    return found


_DISCARDS: dict[int, Discard] = {}


# The decisions without tiles, and taking the turn-up with each discard, likewise shared.
_CHOICE = tuple({c: Decide(seat, c) for c in ("play", "miss", "drop")} for seat in range(4))
_FOR_POOL = tuple(Decide(seat, "play", for_pool=True) for seat in range(4))
_TAKE = tuple(tuple(tuple(Decide(seat, "play", take_turn_up=True, discard=(t,), for_pool=p)
                          for t in TILES) for seat in range(4)) for p in (False, True))


def miss_draw_to_name(h: Hand, seat: int) -> int:
    """§4 on a recorded table: how many tiles a miss by `seat` must name in `drawn` now, or
    0 (not the seat's decision, no miss left, or the service knows the draw: a shuffled
    table, or a miss that takes the whole boneyard). No list of bodies can offer that miss
    (§10: it would show the boneyard), so the view offers it to complete (to_complete)."""
    if h.ordered or h.phase != "deciding" or h.turn != seat or h.mode == "results":
        return 0
    n = h.opts.miss_draw
    return n if h.misses < h.opts.max_misses and len(h.boneyard) != n else 0


def _decisions(h: Hand, seat: int) -> list[Action]:
    out: list[Action] = []
    choice = _CHOICE[seat]
    pool_options = (False, True) if may_play_for_pool(h, seat) else (False,)
    for for_pool in pool_options:
        out.append(_FOR_POOL[seat] if for_pool else choice["play"])
        if seat == h.dealer and h.turn_up is not None:
            take = _TAKE[for_pool][seat]
            out += [take[t] for t in sort_tiles(h.hands[seat])]
    if h.misses < h.opts.max_misses and (h.ordered or len(h.boneyard) == h.opts.miss_draw):
        # Recorded table whose miss takes the whole boneyard: the service knows the draw, so
        # the body names no tiles (§10: listing them would show the boneyard before he decides).
        out.append(choice["miss"])
    if h.opts.drop_allowed:
        out.append(choice["drop"])
    return out


def _plays(h: Hand, seat: int) -> list[Play]:
    trump = h.trump
    assert trump is not None
    hand = sorted(h.hands[seat], key=_KEY, reverse=True)
    trumps = TRUMPS[trump]
    cur = h.current
    if cur is None:
        held = [t for t in hand if t in trumps]
        if len(held) >= h.opts.lead_trump_threshold or (
                held and h.tricks and h.tricks[-1].winner == seat):
            hand = held  # §6.1, §6.2: a trump must be led
        leads, plays = LEADS[trump], _LEAD[seat]
        return [plays[t][s] for t in hand for s in leads[t]]
    plays = _PLAY[seat]
    followers = FOLLOWERS[cur.suit][trump] if 0 <= cur.suit < 7 else ()
    able = [plays[t] for t in hand if t in followers]
    if able:
        return able
    if not h.opts.is_rounce:
        able = [plays[t] for t in hand if t in trumps]
        if able:
            return able
    return [plays[t] for t in hand]
