"""Playouts: the rules of one hand (§3-§9) on a single mutable state, for many fast rollouts.

The service records every game through the event-sourced engine (hand.py, decide.py,
legal.py): each action an immutable event, each state a frozen fold, every refusal a
RuleViolation a player can read. A bot that plans by rollouts (a Monte Carlo bot) and the
engine benchmark need something else: thousands of whole hands a second, no record, no
explanations. This module plays the same rules on one mutable `Playout` per hand.

It is pure like the rest of `ledger.core.rules`: no I/O or clock, and the caller brings the
randomness (a `choose` function). Its moves are cheap values (see `legal`); `to_action`
turns one into the engine's Action. tests/unit/test_rules_playout.py drives both in lockstep
over random games of every variant and option and proves the lists of legal moves equal,
order included, and every result and settlement equal.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import combinations
from typing import Any

from ledger.core.rules.actions import Action, Decide, Discard, Play
from ledger.core.rules.hand import next_active
from ledger.core.rules.options import Options
from ledger.core.rules.scoring import penalty
from ledger.core.rules.tiles import FOLLOWERS, LEADS, SORT_KEY, TRUMPS, WIN_KEYS, Tile, trump_of

DECIDING, DISCARDING, PLAYING, COMPLETE = 1, 2, 3, 4
HAND_SIZE, TRICKS = 5, 5
NO_SUIT = 7  # the suit of a play move that follows (only a lead declares one)

# Moves. Deciding: (choice, for_pool, tile taken from the turn-up's exchange or -1).
# Discarding: the tuple of tiles put out. Playing: tile * 8 + declared suit (7: a follow).
Move = Any
PLAY, PLAY_FOR_POOL = ("play", False, -1), ("play", True, -1)
MISS, DROP = ("miss", False, -1), ("drop", False, -1)
_TAKE = tuple(tuple(("play", fp, t) for t in range(28)) for fp in (False, True))
_LEADS = tuple(tuple(tuple(t * 8 + s for s in LEADS[trump][t]) for t in range(28))
               for trump in range(7))
_KEY = SORT_KEY.__getitem__


def _sorted(tiles: Sequence[Tile]) -> list[Tile]:
    """Highest first, the order in which the engine lists a hand's moves."""
    return sorted(tiles, key=_KEY, reverse=True)


class Playout:
    """One hand in progress: everything a rollout needs, mutated in place by `step`."""

    __slots__ = ("opts", "players", "dealer", "hands", "boneyard", "turn_up", "trump",
                 "decisions", "misses", "for_pool", "turn_up_taken", "phase", "turn",
                 "plays", "led", "next_seat", "active", "tricks_won", "winners",
                 "won_without_play")

    def __init__(self, opts: Options, dealer: int, hands: Sequence[Sequence[Tile]],
                 turn_up: Tile, boneyard: Sequence[Tile]) -> None:
        n = opts.players
        self.opts, self.players, self.dealer = opts, n, dealer
        self.hands = [_sorted(h) for h in hands]
        self.boneyard = list(boneyard)  # §3.4: misses draw from it in this order
        self.turn_up, self.trump = turn_up, trump_of(turn_up)
        self.decisions: list[str | None] = [None] * n
        self.misses, self.for_pool, self.turn_up_taken = 0, False, False
        self.phase, self.turn = DECIDING, (dealer + 1) % n  # §4: dealer's left first
        self.plays: list[tuple[int, Tile]] = []
        self.led = -1
        self.next_seat: list[int] = []
        self.active = 0
        self.tricks_won = [0] * n
        self.winners: list[int] = []  # the winner of each trick, in order
        self.won_without_play: int | None = None

    @property
    def looed(self) -> tuple[int, ...]:
        """§7: stayed in and won no trick; a dealer playing for the pool is never looed."""
        pool_dealer = self.dealer if self.for_pool else -1
        won = self.tricks_won
        return tuple(s for s, d in enumerate(self.decisions)
                     if d != "drop" and won[s] == 0 and s != pool_dealer)


def deal(opts: Options, dealer: int, order: Sequence[Tile]) -> Playout:
    """§3: five tiles a seat from the dealer's left, the dealer last, the turn-up, the rest."""
    n = opts.players
    hands: list[Sequence[Tile]] = [()] * n
    for k in range(n):
        hands[(dealer + 1 + k) % n] = order[k * HAND_SIZE:(k + 1) * HAND_SIZE]
    used = n * HAND_SIZE
    return Playout(opts, dealer, hands, order[used], order[used + 1:])


def resume(opts: Options, dealer: int, hands: Sequence[Sequence[Tile]], turn_up: Tile,
           boneyard: Sequence[Tile], *, phase: int, turn: int, decisions: Sequence[str | None],
           misses: int, for_pool: bool, turn_up_taken: bool,
           plays: Sequence[tuple[int, Tile]], led: int, tricks_won: Sequence[int],
           winners: Sequence[int]) -> Playout:
    """A hand part-played (a Monte Carlo bot's guess at the hidden tiles), ready to go on.

    `phase` is DECIDING, DISCARDING or PLAYING and `turn` the seat to act; `plays` and `led`
    are the trick in progress, `winners` the winner of each trick already won.
    """
    p = Playout(opts, dealer, hands, turn_up, boneyard)
    n = p.players
    p.decisions = list(decisions)
    p.misses, p.for_pool, p.turn_up_taken = misses, for_pool, turn_up_taken
    p.phase, p.turn = phase, turn
    p.plays, p.led = list(plays), led
    p.tricks_won = list(tricks_won) if tricks_won else [0] * n
    p.winners = list(winners)
    if phase == PLAYING:
        active = [s for s in range(n) if p.decisions[s] != "drop"]
        nxt = [0] * n
        for s, f in zip(active, active[1:] + active[:1], strict=True):
            nxt[s] = f
        p.next_seat, p.active = nxt, len(active)
    return p


# ---- legal moves -----------------------------------------------------------------------

def legal(p: Playout) -> list[Move]:
    """Every move of the seat to act, in the order `legal_actions` lists the same actions."""
    phase = p.phase
    if phase == PLAYING:
        return _plays(p)
    if phase == DECIDING:
        return _decisions(p)
    if phase == DISCARDING:
        return list(combinations(p.hands[p.turn], p.opts.miss_discard))  # type: ignore[index]
    return []


def _plays(p: Playout) -> list[Move]:
    seat, trump = p.turn, p.trump
    hand = p.hands[seat]  # type: ignore[index]
    trumps = TRUMPS[trump]
    if not p.plays:
        held = [t for t in hand if t in trumps]
        if len(held) >= p.opts.lead_trump_threshold or (
                held and p.winners and p.winners[-1] == seat):
            hand = held  # §6.1, §6.2: a trump must be led
        leads = _LEADS[trump]
        return [m for t in hand for m in leads[t]]
    followers = FOLLOWERS[p.led][trump] if 0 <= p.led < 7 else ()
    able = [t for t in hand if t in followers]  # §6.3
    if not able and not p.opts.is_rounce:
        able = [t for t in hand if t in trumps]  # §6.4, Loo only
    return [t * 8 + NO_SUIT for t in (able or hand)]


def may_play_for_pool(p: Playout, seat: int) -> bool:
    """§4: a 4-player pool game's dealer, when the one other player still in took the miss."""
    if seat != p.dealer or p.players != 4 or p.opts.scoring != "pool":
        return False
    others = [d for s, d in enumerate(p.decisions) if s != seat and d != "drop"]
    return len(others) == 1 and others[0] == "miss"


def _decisions(p: Playout) -> list[Move]:
    seat = p.turn
    assert seat is not None
    dealer = seat == p.dealer
    out: list[Move] = [PLAY]
    if dealer:
        out += [_TAKE[0][t] for t in p.hands[seat]]  # §4: take the turn-up, discard one
        if may_play_for_pool(p, seat):
            out.append(PLAY_FOR_POOL)
            out += [_TAKE[1][t] for t in p.hands[seat]]
    opts = p.opts
    if p.misses < opts.max_misses:
        out.append(MISS)
    if opts.drop_allowed:
        out.append(DROP)
    return out


# ---- applying a move ---------------------------------------------------------------------

def step(p: Playout, move: Move) -> None:
    """Apply one legal move of the seat to act (moves are trusted: take them from `legal`)."""
    phase = p.phase
    if phase == PLAYING:
        _play(p, move)
    elif phase == DECIDING:
        _decide(p, move)
    elif phase == DISCARDING:
        seat = p.turn
        assert seat is not None
        hand = p.hands[seat]
        for t in move:
            hand.remove(t)
        _advance(p, seat)


def _decide(p: Playout, move: Move) -> None:
    seat = p.turn
    assert seat is not None
    choice, for_pool, take = move
    p.decisions[seat] = choice
    if for_pool:
        p.for_pool = True
    if choice == "miss":  # §4: the whole hand out, the next tiles of the boneyard in
        p.misses += 1
        draw = p.opts.miss_draw
        p.hands[seat] = _sorted(p.boneyard[:draw])
        del p.boneyard[:draw]
        p.phase = DISCARDING
        return
    if take >= 0:  # §4: the turn-up joins the dealer's hand, one of his five goes out
        hand = p.hands[seat]
        hand.remove(take)
        hand.append(p.turn_up)
        hand.sort(key=_KEY, reverse=True)
        p.turn_up_taken = True
    _advance(p, seat)


def _advance(p: Playout, seat: int) -> None:
    """A seat has decided: the next seat decides, play begins, or the hand ends (§4)."""
    decisions, dealer = p.decisions, p.dealer
    n = p.players
    p.phase = DECIDING
    if seat != dealer:
        nxt = (seat + 1) % n
        if nxt == dealer and all(d == "drop" for s, d in enumerate(decisions) if s != dealer):
            _won_without_play(p, dealer)  # §4: everyone else dropped
        else:
            p.turn = nxt
        return
    active = [s for s in range(n) if decisions[s] != "drop"]
    if len(active) < 2:
        _won_without_play(p, active[0])  # §4: one player left wins five
        return
    following = active[1:] + active[:1]
    nxt = [0] * n
    for s, f in zip(active, following, strict=True):
        nxt[s] = f
    p.next_seat, p.active = nxt, len(active)
    p.phase, p.turn = PLAYING, next_active(decisions, dealer)


def _won_without_play(p: Playout, seat: int) -> None:
    p.tricks_won[seat] = TRICKS
    p.won_without_play = seat
    p.phase, p.turn = COMPLETE, None


def _play(p: Playout, move: int) -> None:
    seat = p.turn
    assert seat is not None
    tile = move >> 3
    p.hands[seat].remove(tile)
    plays = p.plays
    if not plays:
        p.led = move & 7
    plays.append((seat, tile))
    if len(plays) < p.active:
        p.turn = p.next_seat[seat]
        return
    keys = WIN_KEYS[p.trump][p.led]  # §6 Winning a trick
    best, winner = -1, -1
    for s, t in plays:
        if keys[t] > best:
            best, winner = keys[t], s
    p.tricks_won[winner] += 1
    p.winners.append(winner)
    p.plays = []
    if len(p.winners) == TRICKS:
        p.phase, p.turn = COMPLETE, None
    else:
        p.turn = winner


def playout(p: Playout, choose: Callable[[list[Move]], Move]) -> Playout:
    """Play the hand to its end, `choose` picking each move from the legal ones."""
    while True:  # `step(p, choose(legal(p)))`, dispatched once per move instead of twice
        phase = p.phase
        if phase == PLAYING:
            _play(p, choose(_plays(p)))
        elif phase == DECIDING:
            _decide(p, choose(_decisions(p)))
        elif phase == DISCARDING:
            step(p, choose(legal(p)))
        else:
            return p


# ---- the engine's actions, and settlement ---------------------------------------------

def to_action(p: Playout, move: Move) -> Action:
    """The engine's Action for a move of the seat to act."""
    seat = p.turn
    assert seat is not None
    if p.phase == PLAYING:
        suit = move & 7
        return Play(seat, move >> 3, None if suit == NO_SUIT else suit)
    if p.phase == DISCARDING:
        return Discard(seat, tuple(move))
    choice, for_pool, take = move
    if take >= 0:
        return Decide(seat, choice, take_turn_up=True, discard=(take,), for_pool=for_pool)
    return Decide(seat, choice, for_pool=for_pool)


def pool_settlement(p: Playout, pool_at_start: int) -> tuple[list[int], list[tuple[int, int]]]:
    """§8.3-8.5 for a complete hand: (chips paid to each seat, [(looed seat, penalty)])."""
    opts, value = p.opts, pool_at_start // 5
    pay = [0] * p.players
    if p.won_without_play == p.dealer and p.decisions[p.dealer] is None:
        pay[p.dealer] = pool_at_start  # the dealer wins without play: the whole pool
    else:
        for s, won in enumerate(p.tricks_won):
            if not (p.for_pool and s == p.dealer):
                pay[s] = won * value
    return pay, [(s, penalty(opts, pool_at_start)[0]) for s in p.looed]


def points_deltas(p: Playout) -> list[int]:
    """§9 for a complete hand: each seat's change of score (Rounce counts down)."""
    sign = -1 if p.opts.is_rounce else 1
    out = [0] * p.players
    if p.won_without_play is not None:
        out[p.won_without_play] = 5 * sign
        return out
    for s, won in enumerate(p.tricks_won):
        out[s] = sign * won
    for s in p.looed:
        out[s] -= 5 * sign
    return out


def stakes(opts: Options, pool: int, dealer: int) -> list[tuple[int, int]]:
    """§8.1: (seat, chips) put in before the deal."""
    n = opts.players
    out = [((dealer + 1 + k) % n, opts.ante) for k in range(n)] if pool == 0 and opts.ante else []
    if opts.dealer_ante:
        out.append((dealer, opts.dealer_ante))
    return out


def post_stakes(opts: Options, pool: int, dealer: int, balances: list[int]) -> int:
    """§8.1 on a table's chips: `balances` pay in (changed in place); returns the pool."""
    for seat, chips in stakes(opts, pool, dealer):
        balances[seat] -= chips
        pool += chips
    return pool


def pay_out(p: Playout, pool_at_start: int, pool: int, balances: list[int]) -> int:
    """§8.3-8.5 on a table's chips for a complete hand: tricks paid from the pool, loo
    penalties into it (`balances` changed in place); returns the pool."""
    pay, penalties = pool_settlement(p, pool_at_start)
    for seat, chips in enumerate(pay):
        balances[seat] += chips
        pool -= chips
    for seat, chips in penalties:
        balances[seat] -= chips
        pool += chips
    return pool
