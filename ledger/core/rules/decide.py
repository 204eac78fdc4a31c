"""Validate one action against the rules and turn it into events (RULES §4, §6)."""

from __future__ import annotations

from ledger.core import events as ev
from ledger.core.rules.actions import Action, Decide, Discard, Play
from ledger.core.rules.hand import Hand, apply, draft, follow_up, trick_end, violation
from ledger.core.rules.tiles import (
    FOLLOWERS,
    HI,
    LO,
    NAMES,
    SUIT_NAMES,
    TRUMPS,
    Tile,
    is_trump,
    sort_tiles,
    suits_of,
)


def decide(h: Hand, action: Action) -> list[ev.Event]:
    """Every event the action causes, including what follows by rule; raises RuleViolation."""
    if h.phase == "playing" and h.mode != "results" and isinstance(action, Play):
        return _play(h, action)  # the common case, past every check below
    if h.phase == "complete":
        raise violation("hand_complete", "7", f"hand {h.number} is over: no more actions")
    if h.mode == "results":
        raise violation("wrong_mode", "10", "this table records results only: send each "
                        "hand's result to /hands instead of actions")
    if h.phase == "dealing":
        raise violation("wrong_phase", "3", "the hand has not been dealt yet")
    if isinstance(action, Play):
        return _play(h, action)
    if isinstance(action, Decide):
        primary = _decide(h, action)
    else:
        primary = _discard(h, action)
    state = draft(h)
    for e in primary:
        apply(state, e)
    return primary + follow_up(state)


def _check_turn(h: Hand, seat: int, phase: str, verb: str) -> None:
    if not 0 <= seat < h.players:
        raise violation("invalid_seat", "2", f"there is no seat {seat} at this table")
    if h.phase != phase:
        wanted = {"deciding": "decide", "discarding": "discard", "playing": "play a tile"}
        who = f"seat {h.turn} must {wanted[h.phase]}" if h.turn is not None else "nobody acts"
        rule = {"deciding": "4", "discarding": "4", "playing": "6"}[h.phase]
        raise violation("wrong_phase", rule, f"you cannot {verb} now: {who}")
    if h.turn != seat:
        raise violation("not_your_turn", "4" if phase != "playing" else "6",
                        f"it is seat {h.turn}'s turn, not seat {seat}'s")


def may_play_for_pool(h: Hand, seat: int) -> bool:
    """§4 Playing for the pool: 4-player pool game, one other still in, and he took the miss."""
    if seat != h.dealer or h.opts.scoring != "pool" or h.players != 4:
        return False
    others_in = [s for s in range(h.players) if s != seat and h.decisions[s] != "drop"]
    return len(others_in) == 1 and h.decisions[others_in[0]] == "miss"


def _decide(h: Hand, a: Decide) -> list[ev.Event]:
    _check_turn(h, a.seat, "deciding", "decide")
    if a.choice not in ("play", "miss", "drop"):
        raise violation("invalid_choice", "4", "choose play, miss or drop")
    if a.choice == "drop" and not h.opts.drop_allowed:
        raise violation("drop_not_allowed", "4",
                        "dropping is allowed only with 3 or 4 players in Loo: play or miss")
    if a.choice == "miss" and h.misses >= h.opts.max_misses:
        raise violation("miss_unavailable", "4", "no miss is left in this hand: play"
                        + (" or drop" if h.opts.drop_allowed else ""))
    if a.for_pool and (a.choice != "play" or not may_play_for_pool(h, a.seat)):
        raise violation("for_pool_not_allowed", "4", "only the dealer of a 4-player pool game, "
                        "when the one other player still in took the miss, may play for the pool")
    if a.take_turn_up or a.discard:
        _check_turn_up(h, a)
    if a.drawn is not None and (a.choice != "miss" or h.ordered):
        raise violation("drawn_not_allowed", "4", "name drawn tiles only for a miss on a "
                        "recorded table; on shuffled tables the service draws")
    out: list[ev.Event] = [ev.PlayerDecided(seat=a.seat, choice=a.choice,
                                            take_turn_up=a.take_turn_up, for_pool=a.for_pool)]
    if a.take_turn_up:
        assert h.turn_up is not None
        out += [ev.TurnUpTaken(seat=a.seat, tile=h.turn_up),
                ev.TilesDiscarded(seat=a.seat, tiles=a.discard)]
    if a.choice == "miss":
        out.append(ev.MissDrawn(seat=a.seat, tiles=_drawn(h, a), put_out=h.hands[a.seat]))
    return out


def _check_turn_up(h: Hand, a: Decide) -> None:
    if a.seat != h.dealer:
        raise violation("turn_up_not_allowed", "4", "only the dealer may take the turn-up")
    if a.choice != "play" or not a.take_turn_up:
        raise violation("turn_up_not_allowed", "4", "the dealer may take the turn-up only "
                        "when he plays his original hand, never after the miss")
    if len(a.discard) != 1:
        raise violation("invalid_discard", "4", "taking the turn-up, discard exactly one tile")
    (t,) = a.discard
    if t == h.turn_up:
        # §3.3: once taken, everyone knows he holds the turn-up until he plays it.
        raise violation("invalid_discard", "3.3", f"the turn-up {NAMES[t]} stays in your "
                        "hand until you play it: discard one of your own five tiles")
    if t not in h.hands[a.seat]:
        raise violation("tile_not_in_hand", "4", f"you do not hold {NAMES[t]}: "
                        "discard one of your own five tiles")


def _drawn(h: Hand, a: Decide) -> tuple[Tile, ...]:
    n = h.opts.miss_draw
    if h.ordered:
        return h.boneyard[:n]  # §3.4: misses are drawn from the boneyard in shuffled order
    if a.drawn is None:
        if len(h.boneyard) == n:
            return h.boneyard
        raise violation("drawn_required", "4", f"on a recorded table name the {n} tiles "
                        "drawn on the miss in \"drawn\"")
    drawn = a.drawn
    if len(drawn) != n or len(set(drawn)) != n:
        raise violation("invalid_drawn", "4", f"a miss draws exactly {n} different tiles")
    boneyard = set(h.boneyard)
    bad = [t for t in drawn if t not in boneyard]
    if not bad:
        return drawn
    # §10: name only tiles the seat can see (its hand, the turn-up); where another named tile
    # lies (another hand, a discard) stays hidden.
    held = h.hands[a.seat]
    seen = [f"{NAMES[t]} ({'the turn-up' if t == h.turn_up else 'in your hand'})"
            for t in bad if t in held or t == h.turn_up]
    if seen:
        raise violation("invalid_drawn", "4", f"{', '.join(seen)} cannot be drawn: name the "
                        f"{n} tiles you drew from the boneyard")
    raise violation("invalid_drawn", "4", f"not every tile named is in the boneyard: name the "
                    f"{n} tiles you drew")


def _discard(h: Hand, a: Discard) -> list[ev.Event]:
    _check_turn(h, a.seat, "discarding", "discard")
    need = h.opts.miss_discard
    if len(a.tiles) != need or len(set(a.tiles)) != need:
        raise violation("invalid_discard", "4", f"discard exactly {need} different tile"
                        + ("s" if need > 1 else "") + " to keep five")
    for t in a.tiles:
        if t not in h.hands[a.seat]:
            raise violation("tile_not_in_hand", "4", f"you do not hold {NAMES[t]}")
    return [ev.TilesDiscarded(seat=a.seat, tiles=a.tiles)]


def _play(h: Hand, a: Play) -> list[ev.Event]:
    """The play and what follows it (the trick won, the hand complete), without evolving."""
    seat, tile = a.seat, a.tile
    if h.turn != seat or h.phase != "playing":
        _check_turn(h, seat, "playing", "play")
    if tile not in h.hands[seat]:
        raise violation("tile_not_in_hand", "6", f"you do not hold {NAMES[tile]}")
    trick_no = len(h.tricks) + 1
    cur = h.current
    if cur is None:
        check_lead(h, seat, tile)  # §6.1/6.2 bind whatever suit is declared
        led = lead_suit(h, a)
        played = ev.TilePlayed(seat, tile, trick_no, led)
        plays: tuple[tuple[int, Tile], ...] = ((seat, tile),)
    else:
        check_follow(h, seat, tile)
        played = ev.TilePlayed(seat, tile, trick_no)
        plays, led = cur.plays + ((seat, tile),), cur.suit
    decisions = h.decisions
    if len(plays) < len(decisions) - decisions.count("drop"):
        return [played]
    return [played, *trick_end(h, plays, led)]


def lead_suit(h: Hand, a: Play) -> int:
    """§6 Leading: trumps lead trumps, doubles their own suit, other tiles a declared end."""
    assert h.trump is not None
    options = suits_of(a.tile, h.trump)
    if a.suit is None:
        if len(options) == 1:
            return options[0]
        hi, lo = options
        raise violation("suit_required", "6", f"say which suit {NAMES[a.tile]} leads: "
                        f"\"suit\": {hi} ({SUIT_NAMES[hi]}) or {lo} ({SUIT_NAMES[lo]})")
    if a.suit not in options:
        if is_trump(a.tile, h.trump):
            why = f"{NAMES[a.tile]} is a trump and can only be led as trumps ({h.trump})"
        elif len(options) == 1:
            why = f"a double leads its own suit only: {NAMES[a.tile]} leads {options[0]}"
        else:
            why = f"{NAMES[a.tile]} leads {options[0]} or {options[1]}, not {a.suit}"
        raise violation("invalid_suit", "6", why)
    return a.suit


def check_lead(h: Hand, seat: int, t: Tile) -> None:
    """§6.1 and §6.2: when the leader must lead a trump."""
    trump = h.trump
    assert trump is not None
    bears = TRUMPS[trump]
    if t in bears:
        return
    held = sum(1 for x in h.hands[seat] if x in bears)
    if not held:
        return
    trumps = SUIT_NAMES[trump]
    if held >= h.opts.lead_trump_threshold:
        held_ = f"{held} trump" if held == 1 else f"{held} trumps"
        raise violation("must_lead_trump", "6.1", f"you hold {held_} ({trumps}): "
                        f"with {h.opts.lead_trump_threshold} or more you must lead a trump")
    if h.tricks and h.tricks[-1].winner == seat:
        # §6.2 (the 6.1 threshold above 1 leaves him up to threshold - 1 trumps): name them.
        mine = sort_tiles(tuple(x for x in h.hands[seat] if x in bears))
        *rest, last = [NAMES[x] for x in mine]
        names = f"{', '.join(rest)} and {last}" if rest else last
        which = "it" if len(mine) == 1 else "one of them"
        raise violation("must_lead_trump", "6.2", f"you won the last trick and hold {names} "
                        f"({trumps} are trumps): you must lead {which}")


def check_follow(h: Hand, seat: int, t: Tile) -> None:
    """§6.3 follow suit if able; §6.4 (Loo only) trump if void; otherwise anything."""
    assert h.trump is not None and h.current is not None
    led, trump = h.current.suit, h.trump
    able = FOLLOWERS[led][trump] if 0 <= led < 7 else ()
    if t in able:
        return
    hand = h.hands[seat]
    for x in hand:
        if x in able:
            # §5: a trump bearing the led suit (5-3, fives trump, threes led) is only a trump.
            why = (f" ({NAMES[t]} is a trump, and only a trump: it does not follow "
                   f"{SUIT_NAMES[led]}, §5)" if led in (HI[t], LO[t]) else "")
            raise violation("must_follow_suit", "6.3", f"you hold {NAMES[x]}: you must "
                            f"follow {SUIT_NAMES[led]}{why}")
    bears = TRUMPS[trump]
    if h.opts.is_rounce or t in bears:
        return
    for x in hand:
        if x in bears:
            raise violation("must_trump", "6.4", f"you cannot follow {SUIT_NAMES[led]} but "
                            f"hold {NAMES[x]}: you must play a trump")
