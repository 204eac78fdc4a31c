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

`playout` is the hot path of random playouts (`loo bench engine`): it plays the decisions
and then all the tricks in two tight loops over local variables, a seat's tiles held as its
follow moves (tile * 8 + 7) so that a follow hands `choose` a slice of the hand itself, and
a lone legal move is played without asking `choose`. The same test plays every hand once
more through `playout` and proves the end state equal to the step-by-step one. (The expert's
rollouts, mc.rollout, have the same trick loop with the heuristic's choices written in.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import combinations
from typing import Any

from ledger.core.rules.actions import Action, Decide, Discard, Play
from ledger.core.rules.hand import next_active
from ledger.core.rules.options import Options
from ledger.core.rules.scoring import penalty
from ledger.core.rules.tiles import (
    FOLLOWERS,
    LEADS,
    SORT_KEY,
    TILES,
    TRUMPS,
    WIN_KEYS,
    Tile,
    trump_of,
)

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

# The tables of `playout`'s trick loop, a tile written as its follow move f = tile * 8 + 7
# (so `f >> 3` is the tile): per trump, the trumps; per trump and led suit, the followers
# and each tile's rank in the trick (WIN_KEYS); per trump, the lead moves of each tile.
_F = tuple(t * 8 + NO_SUIT for t in TILES)
_F_TRUMPS = tuple(frozenset(_F[t] for t in TRUMPS[trump]) for trump in range(7))
_F_FOLLOWERS = tuple(tuple(frozenset(_F[t] for t in FOLLOWERS[led][trump]) for led in range(7))
                     for trump in range(7))


def _by_follow_move(values: Sequence[Any]) -> tuple[Any, ...]:
    out: list[Any] = [None] * (len(TILES) * 8)
    for t, v in enumerate(values):
        out[_F[t]] = v
    return tuple(out)


_F_KEYS = tuple(tuple(_by_follow_move(WIN_KEYS[trump][led]) for led in range(7))
                for trump in range(7))
_F_LEADS = tuple(_by_follow_move(_LEADS[trump]) for trump in range(7))


def _sorted(tiles: Sequence[Tile]) -> list[Tile]:
    """Highest first, the order in which the engine lists a hand's moves."""
    return sorted(tiles, key=_KEY, reverse=True)


class _Rules:
    """What the options say for one hand's moves, computed once per Options object."""

    __slots__ = ("opts", "players", "loo", "threshold", "max_misses", "miss_draw",
                 "miss_discard", "drop_allowed", "pool_for_dealer", "menus")

    def __init__(self, opts: Options) -> None:
        self.opts, self.players = opts, opts.players
        self.loo, self.threshold = not opts.is_rounce, opts.lead_trump_threshold
        self.max_misses, self.miss_draw = opts.max_misses, opts.miss_draw
        self.miss_discard, self.drop_allowed = opts.miss_discard, opts.drop_allowed
        self.pool_for_dealer = opts.players == 4 and opts.scoring == "pool"  # §4
        tail = [DROP] if opts.drop_allowed else []
        self.menus = ([PLAY, *tail], [PLAY, MISS, *tail])  # [a miss is still allowed]


_RULES: dict[int, _Rules] = {}


def _rules(opts: Options) -> _Rules:
    r = _RULES.get(id(opts))
    if r is None or r.opts is not opts:  # the entry holds opts, so its id is not reused
        if len(_RULES) > 64:
            _RULES.clear()
        r = _RULES[id(opts)] = _Rules(opts)
    return r


class Playout:
    """One hand in progress: everything a rollout needs, mutated in place by `step`."""

    __slots__ = ("opts", "players", "dealer", "hands", "boneyard", "turn_up", "trump",
                 "decisions", "misses", "for_pool", "turn_up_taken", "phase", "turn",
                 "plays", "led", "next_seat", "active", "tricks_won", "winners",
                 "won_without_play", "rules")

    def __init__(self, opts: Options, dealer: int, hands: Sequence[Sequence[Tile]],
                 turn_up: Tile, boneyard: Sequence[Tile]) -> None:
        n = opts.players
        self.opts, self.players, self.dealer = opts, n, dealer
        self.rules = _rules(opts)
        key = _KEY
        self.hands = [sorted(h, key=key, reverse=True) for h in hands]
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
        return tuple([s for s, d in enumerate(self.decisions)
                      if d != "drop" and not won[s] and s != pool_dealer])


def deal(opts: Options, dealer: int, order: Sequence[Tile]) -> Playout:
    """§3: five tiles a seat from the dealer's left, the dealer last, the turn-up, the rest."""
    n = opts.players
    dealt = [order[k:k + HAND_SIZE] for k in range(0, n * HAND_SIZE, HAND_SIZE)]
    first = (n - 1 - dealer) % n  # seat 0's five, counted from the dealer's left
    used = n * HAND_SIZE
    return Playout(opts, dealer, dealt[first:] + dealt[:first], order[used], order[used + 1:])


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
        return list(combinations(p.hands[p.turn], p.rules.miss_discard))  # type: ignore[index]
    return []


def _plays(p: Playout) -> list[Move]:
    seat, trump = p.turn, p.trump
    hand = p.hands[seat]  # type: ignore[index]
    trumps = TRUMPS[trump]
    if not p.plays:
        held = [t for t in hand if t in trumps]
        if held and (len(held) >= p.rules.threshold or (p.winners and p.winners[-1] == seat)):
            hand = held  # §6.1, §6.2: a trump must be led
        leads = _LEADS[trump]
        return [m for t in hand for m in leads[t]]
    followers = FOLLOWERS[p.led][trump] if 0 <= p.led < 7 else ()
    able = [t for t in hand if t in followers]  # §6.3
    if not able and p.rules.loo:
        able = [t for t in hand if t in trumps]  # §6.4, Loo only
    f = _F
    return [f[t] for t in (able or hand)]


def may_play_for_pool(p: Playout, seat: int) -> bool:
    """§4: a 4-player pool game's dealer, when the one other player still in took the miss."""
    if seat != p.dealer or not p.rules.pool_for_dealer:
        return False
    decisions, own = p.decisions, p.decisions[seat]
    dropped = decisions.count("drop") - (own == "drop")  # by the others
    missed = decisions.count("miss") - (own == "miss")
    return dropped == p.players - 2 and missed == 1


def _decisions(p: Playout) -> list[Move]:
    seat = p.turn
    assert seat is not None
    r = p.rules
    if seat != p.dealer:
        return r.menus[p.misses < r.max_misses][:]
    hand = p.hands[seat]
    out: list[Move] = [PLAY]
    out += [_TAKE[0][t] for t in hand]  # §4: take the turn-up, discard one
    if may_play_for_pool(p, seat):
        out.append(PLAY_FOR_POOL)
        out += [_TAKE[1][t] for t in hand]
    if p.misses < r.max_misses:
        out.append(MISS)
    if r.drop_allowed:
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
        draw = p.rules.miss_draw
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
        # the dealer decides last: when he is next, every other seat has decided
        if nxt == dealer and decisions.count("drop") - (decisions[dealer] == "drop") == n - 1:
            _won_without_play(p, dealer)  # §4: everyone else dropped
        else:
            p.turn = nxt
        return
    key = (dealer, *decisions)
    seating = _SEATING.get(key)
    if seating is None:
        if len(_SEATING) > 1024:
            _SEATING.clear()
        seating = _SEATING[key] = _seating(decisions, dealer)
    nxt, active, turn = seating
    if active < 2:
        _won_without_play(p, turn)  # §4: one player left wins five
        return
    p.next_seat, p.active = list(nxt), active
    p.phase, p.turn = PLAYING, turn


# (dealer, *decisions) -> _seating(decisions, dealer): a few dozen keys a table size
_SEATING: dict[tuple[Any, ...], tuple[tuple[int, ...], int, int]] = {}


def _seating(decisions: Sequence[str | None], dealer: int) -> tuple[tuple[int, ...], int, int]:
    """Once every seat has decided: (the next active seat after each active one, how many
    are active, the first to play: the eldest, or the one seat left in)."""
    active = [s for s in range(len(decisions)) if decisions[s] != "drop"]
    nxt = [0] * len(decisions)
    prev = active[-1]
    for s in active:
        nxt[prev] = s
        prev = s
    first = active[0] if len(active) < 2 else next_active(decisions, dealer)
    return tuple(nxt), len(active), first


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
    """Play the hand to its end, `choose` picking each move from the legal ones.

    `choose` sees the moves alone (the state is not kept current for it while the tricks
    are played) and is not asked when a single move is legal.
    """
    phase = p.phase
    if phase == DECIDING or phase == DISCARDING:
        _decide_all(p, choose)
        phase = p.phase
    if phase == PLAYING:
        if p.plays:  # a trick part-played (a resumed hand): finish it move by move
            while p.plays:
                moves = _plays(p)
                _play(p, moves[0] if len(moves) == 1 else choose(moves))
        if p.phase == PLAYING:
            _play_all(p, choose)
    return p


def _decide_all(p: Playout, choose: Callable[[list[Move]], Move]) -> None:
    """§4: the decisions (and a miss's discard) until play begins or the hand is over."""
    r = p.rules
    hands, decisions, dealer, n = p.hands, p.decisions, p.dealer, p.players
    menus, max_misses = r.menus, r.max_misses
    while True:
        phase, seat = p.phase, p.turn
        if seat is None:
            return  # won without play (§4)
        if phase == DECIDING:
            if seat == dealer:
                moves = _decisions(p)
                choice, for_pool, take = moves[0] if len(moves) == 1 else choose(moves)
                if for_pool:
                    p.for_pool = True
            else:  # play, miss or drop
                moves = menus[p.misses < max_misses][:]
                choice, for_pool, take = moves[0] if len(moves) == 1 else choose(moves)
            decisions[seat] = choice
            if choice == "miss":  # §4: the whole hand out, the next tiles of the boneyard in
                p.misses += 1
                boneyard, draw = p.boneyard, r.miss_draw
                hands[seat] = sorted(boneyard[:draw], key=_KEY, reverse=True)
                del boneyard[:draw]
                p.phase = DISCARDING
                continue
            if take >= 0:  # §4: the turn-up joins the dealer's hand, one of his five goes out
                hand = hands[seat]
                hand.remove(take)
                hand.append(p.turn_up)
                hand.sort(key=_KEY, reverse=True)
                p.turn_up_taken = True
            if seat != dealer:  # _advance's first case, inline
                nxt = seat + 1 if seat + 1 < n else 0
                if nxt != dealer or (decisions.count("drop") - (decisions[dealer] == "drop")
                                     != n - 1):
                    p.turn = nxt
                    continue
        elif phase == DISCARDING:
            hand = hands[seat]
            moves = list(combinations(hand, r.miss_discard))
            for t in moves[0] if len(moves) == 1 else choose(moves):
                hand.remove(t)
        else:
            return
        _advance(p, seat)


_ORDERS: dict[tuple[int, ...], tuple[tuple[int, ...], ...]] = {}


def _orders(next_seat: list[int], active: int) -> tuple[tuple[int, ...], ...]:
    """For each leader, the seats that follow him in a trick (from `next_seat`)."""
    key = (*next_seat, active)
    found = _ORDERS.get(key)
    if found is None:
        out = []
        for leader in range(len(next_seat)):
            seats, s = [], leader
            for _ in range(active - 1):
                s = next_seat[s]
                seats.append(s)
            out.append(tuple(seats))
        found = _ORDERS[key] = tuple(out)
    return found


def _play_all(p: Playout, choose: Callable[[list[Move]], Move]) -> None:
    """§6: every trick to the last, from the lead of one (no trick part-played)."""
    trump, r = p.trump, p.rules
    trumps, leads, keys_by_suit = _F_TRUMPS[trump], _F_LEADS[trump], _F_KEYS[trump]
    followers_of = _F_FOLLOWERS[trump]
    threshold, loo = r.threshold, r.loo
    won, winners = p.tricks_won, p.winners
    orders = _orders(p.next_seat, p.active)
    f = _F
    held_by = [[f[t] for t in hand] for hand in p.hands]  # the tiles as follow moves
    seat, led = p.turn, p.led
    for _ in range(TRICKS - len(winners)):
        hand = held_by[seat]  # type: ignore[index]
        held = [m for m in hand if m in trumps]
        if held and (len(held) >= threshold or (winners and winners[-1] == seat)):
            moves = [m for x in held for m in leads[x]]  # §6.1, §6.2: a trump must be led
        else:
            moves = [m for x in hand for m in leads[x]]
        move = moves[0] if len(moves) == 1 else choose(moves)
        led = move & 7
        move |= 7
        hand.remove(move)
        keys = keys_by_suit[led]
        best, winner = keys[move], seat
        followers = followers_of[led]
        for s in orders[seat]:  # type: ignore[index]
            hand = held_by[s]
            if len(hand) == 1:
                move = hand.pop()
            else:
                able = [m for m in hand if m in followers]  # §6.3
                if not able and loo:
                    able = [m for m in hand if m in trumps]  # §6.4, Loo only
                if not able:
                    able = hand
                move = able[0] if len(able) == 1 else choose(able)
                hand.remove(move)
            if keys[move] > best:  # §6 Winning a trick
                best, winner = keys[move], s
        won[winner] += 1
        winners.append(winner)
        seat = winner
    p.hands[:] = [[m >> 3 for m in hand] for hand in held_by]
    p.led, p.phase, p.turn = led, COMPLETE, None


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
    dealer, value = p.dealer, pool_at_start // 5
    if p.won_without_play == dealer and p.decisions[dealer] is None:
        pay = [0] * p.players
        pay[dealer] = pool_at_start  # the dealer wins without play: the whole pool
    else:
        pay = [won * value for won in p.tricks_won]
        if p.for_pool:
            pay[dealer] = 0  # §4: his share stays in the pool
    looed = p.looed
    if not looed:
        return pay, []
    chips = penalty(p.opts, pool_at_start)[0]
    return pay, [(s, chips) for s in looed]


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
    pool -= sum(pay)
    for seat, chips in penalties:
        balances[seat] -= chips
        pool += chips
    return pool
