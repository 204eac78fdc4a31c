"""Determinized Monte Carlo from one seat's view (the `expert` bot and hints).

A seat does not know the others' tiles, so the expert guesses them many times: each guess
(a *determinization*) deals the tiles it cannot see at random, consistently with everything
the seat has seen (RULES §10): its own tiles, the tiles it put out or discarded, the
turn-up (in the dealer's hand once taken), every tile played, and what the plays showed —
a seat that failed to follow a suit holds none of it, and in Loo (§6.4) one that neither
followed nor trumped holds no trump; a leader of tricks 2-5 who led a plain tile holds no
trump (§6.2). Each candidate action is then played to the end of the hand on the playout
engine with the heuristic for every seat, and scores the chips (pool) or points it brings
the seat. The same guesses serve every candidate (common random numbers), so the
comparison between candidates is sharper than their values.

Pure and stdlib-only: the randomness comes from the caller's `random.Random`, and the only
input about the hand is a SeatView, so two states that differ only in tiles the seat cannot
see give the same guesses and the same choice.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from ledger.core.rules import playout as po
from ledger.core.rules.actions import Action, Decide, Discard, Play
from ledger.core.rules.tiles import (
    DOUBLE,
    FOLLOWERS,
    LEADS,
    TILES,
    TRUMPS,
    WIN_KEYS,
    Tile,
    rank,
    suits_of,
)
from ledger.core.rules.view import SeatView


def tile_value(t: Tile, trump: int) -> float:
    """Rough trick-taking strength: any trump beats any plain tile; doubles top their suit."""
    if t in TRUMPS[trump]:
        return 10 + rank(t, trump)
    return max(rank(t, s) for s in suits_of(t, trump)) / 2


def hand_strength(tiles: tuple[Tile, ...] | list[Tile], trump: int) -> float:
    return sum(tile_value(t, trump) for t in tiles)


# VALUE[trump][t] = tile_value(t, trump): the heuristic's hot path is a lookup.
VALUE: tuple[tuple[float, ...], ...] = tuple(
    tuple(tile_value(t, trump) for t in TILES) for trump in range(7))
_PHASES = {"deciding": po.DECIDING, "discarding": po.DISCARDING, "playing": po.PLAYING}


# ---- the heuristic on the playout engine -----------------------------------------------

def heuristic_move(p: po.Playout, moves: list[po.Move]) -> po.Move:
    """bots.heuristic_policy on a playout: the same choice, move for move (a lockstep test
    in tests/unit/test_rules_expert.py holds them together)."""
    trump = p.trump
    value = VALUE[trump]
    phase = p.phase
    if phase == po.PLAYING:
        plays = p.plays
        if not plays:  # lead: a sure winner (the double of trumps) if held, else the cheapest
            top = max(moves, key=lambda m: value[m >> 3])
            t = top >> 3
            if DOUBLE[t] and t in TRUMPS[trump]:
                return top
            return min(moves, key=lambda m: value[m >> 3])
        keys = WIN_KEYS[trump][p.led]
        best = max(keys[t] for _s, t in plays)
        winners = [m for m in moves if keys[m >> 3] > best]
        if winners:
            return min(winners, key=lambda m: value[m >> 3])
        followers = FOLLOWERS[p.led][trump]
        pool = [m for m in moves if (m >> 3) in followers] or moves
        return min(pool, key=lambda m: value[m >> 3])
    if phase == po.DISCARDING:
        return min(moves, key=lambda m: sum(value[t] for t in m))
    hand = p.hands[p.turn]  # type: ignore[index]
    strength = sum(value[t] for t in hand)
    gain = value[p.turn_up]

    def after(m: po.Move) -> float:  # halves and whole numbers: every sum is exact
        return (strength if m[2] < 0 else strength - value[m[2]] + gain) - (3 if m[1] else 0)

    stands = [m for m in moves if m[0] == "play"]
    best_stand = max(stands, key=after)
    kept = after(best_stand)
    if kept >= 24 or strength >= 24:
        return _prefer_pool(best_stand, stands)
    if po.MISS in moves:
        return po.MISS
    if po.DROP in moves and kept < 14:
        return po.DROP
    return _prefer_pool(best_stand, stands)


def _prefer_pool(best: po.Move, stands: list[po.Move]) -> po.Move:
    for m in stands:
        if m[1] and m[2] == best[2]:
            return m
    return best


def rollout(p: po.Playout) -> po.Playout:
    """Play the hand to its end with the heuristic for every seat."""
    choose = heuristic_move
    while p.phase == po.DECIDING or p.phase == po.DISCARDING:
        moves = po.legal(p)
        po.step(p, moves[0] if len(moves) == 1 else choose(p, moves))
    while p.phase == po.PLAYING and p.plays:  # a trick part-played: finish it move by move
        moves = po._plays(p)  # noqa: SLF001 - the hot loop
        po._play(p, moves[0] if len(moves) == 1 else choose(p, moves))  # noqa: SLF001
    if p.phase == po.PLAYING:
        _heuristic_tricks(p)
    return p


def _heuristic_tricks(p: po.Playout) -> None:
    """Every trick to the last with heuristic_move's choices, in one loop over local variables
    (tests/unit/test_rules_expert.py holds it to the move-by-move loop, end state for end
    state). Lead: the double of trumps if it is the highest-valued lead, else the cheapest
    lead; follow: the cheapest tile that would take the trick, else the cheapest follower,
    else the cheapest tile (the first of equals, in the order the moves are listed)."""
    trump, r = p.trump, p.rules
    trumps, value = TRUMPS[trump], VALUE[trump].__getitem__
    lead_suits, win_keys, followers_of = LEADS[trump], WIN_KEYS[trump], FOLLOWERS
    threshold, loo = r.threshold, r.loo
    hands, won, winners = p.hands, p.tricks_won, p.winners
    orders = po._orders(p.next_seat, p.active)  # noqa: SLF001
    seat, led = p.turn, p.led
    for _ in range(po.TRICKS - len(winners)):
        hand = hands[seat]  # type: ignore[index]
        held = [t for t in hand if t in trumps]
        if held and (len(held) >= threshold or (winners and winners[-1] == seat)):
            hand_ = held  # §6.1, §6.2: a trump must be led
        else:
            hand_ = hand
        t = max(hand_, key=value)
        if not (DOUBLE[t] and t in trumps):
            t = min(hand_, key=value)
        led = lead_suits[t][0]
        hand.remove(t)
        keys = win_keys[led]
        best, winner = keys[t], seat
        followers = followers_of[led][trump]
        for s in orders[seat]:  # type: ignore[index]
            hand = hands[s]
            if len(hand) == 1:
                t = hand.pop()
            else:
                able = [x for x in hand if x in followers]  # §6.3
                if not able and loo:
                    able = [x for x in hand if x in trumps]  # §6.4, Loo only
                if not able:
                    able = hand
                if len(able) == 1:
                    t = able[0]
                else:
                    taking = [x for x in able if keys[x] > best]
                    if taking:
                        t = min(taking, key=value)
                    else:
                        t = min([x for x in able if x in followers] or able, key=value)
                hand.remove(t)
            if keys[t] > best:  # §6 Winning a trick
                best, winner = keys[t], s
        won[winner] += 1
        winners.append(winner)
        seat = winner
    p.led, p.phase, p.turn = led, po.COMPLETE, None


def seat_result(p: po.Playout, seat: int, pool_at_start: int) -> int:
    """What a complete hand brought `seat`: chips taken less any loo penalty (pool), or
    points (Loo: more is better; Rounce counts down, so its delta is negated)."""
    if p.opts.scoring == "pool":
        pay, penalties = po.pool_settlement(p, pool_at_start)
        return pay[seat] - sum(chips for s, chips in penalties if s == seat)
    delta = po.points_deltas(p)[seat]
    return -delta if p.opts.is_rounce else delta


# ---- what the seat knows, and the guesses ------------------------------------------------

def voids(view: SeatView) -> list[frozenset[Tile]]:
    """Per seat, the tiles its plays prove it does not hold (empty for the viewer itself)."""
    n = view.opts.players
    trump = view.trump
    assert trump is not None
    trumps = TRUMPS[trump]
    out: list[set[Tile]] = [set() for _ in range(n)]
    tricks = list(view.tricks) + ([view.current] if view.current is not None else [])
    for k, trick in enumerate(tricks):
        if not trick.plays:
            continue
        leader, lead = trick.plays[0]
        if k > 0 and lead not in trumps:
            out[leader] |= trumps  # §6.2: the previous trick's winner leads a trump if he can
        if not 0 <= trick.suit < 7:
            continue
        followers = FOLLOWERS[trick.suit][trump]
        for s, t in trick.plays[1:]:
            if t not in followers:
                out[s] |= followers  # §6.3: he could not follow
                if not view.opts.is_rounce and t not in trumps:
                    out[s] |= trumps  # §6.4 (Loo): nor trump
    out[view.seat] = set()
    return [frozenset(x) for x in out]


@dataclass(frozen=True, slots=True)
class Knowledge:
    """Everything the sampler uses, computed from the view alone (tests compare these)."""

    seat: int
    unseen: tuple[Tile, ...]  # canonical order
    forced: tuple[tuple[Tile, ...], ...]  # tiles known to be in a seat's hand (the turn-up)
    need: tuple[int, ...]  # unseen tiles each seat holds (0 for the viewer)
    boneyard: int
    forbidden: tuple[frozenset[Tile], ...]


def knowledge(view: SeatView) -> Knowledge:
    n = view.opts.players
    played = {t for trick in view.tricks for _s, t in trick.plays}
    if view.current is not None:
        played |= {t for _s, t in view.current.plays}
    seen = set(view.hand) | played | set(view.known_out)
    forced: list[tuple[Tile, ...]] = [()] * n
    if view.turn_up is not None:
        seen.add(view.turn_up)
        if view.turn_up_taken and view.dealer != view.seat and view.turn_up not in played:
            forced[view.dealer] = (view.turn_up,)  # §3.3: everyone knows he holds it
    need = tuple(0 if s == view.seat else max(0, view.counts[s] - len(forced[s]))
                 for s in range(n))
    return Knowledge(view.seat, tuple(t for t in TILES if t not in seen), tuple(forced),
                     need, view.boneyard_count, tuple(voids(view)))


def sample(k: Knowledge, rng: random.Random, tries: int = 20,
           ) -> tuple[list[list[Tile]], list[Tile]]:
    """One guess: (every seat's hand, the viewer's own left empty; the boneyard in order).

    The unseen tiles are shuffled and dealt to the most constrained seat first, each taking
    the first tiles it may hold; a dead end reshuffles, and after `tries` the voids are
    relaxed (a guess that breaks them beats no guess).
    """
    order = sorted(range(len(k.need)), key=lambda s: -len(k.forbidden[s]))
    for attempt in range(tries + 1):
        pool = list(k.unseen)
        rng.shuffle(pool)
        hands: list[list[Tile]] = [list(f) for f in k.forced]
        ok = True
        for s in order:
            want = k.need[s]
            if not want:
                continue
            banned = k.forbidden[s] if attempt < tries else frozenset()
            took: list[Tile] = []
            rest: list[Tile] = []
            for t in pool:
                if len(took) < want and t not in banned:
                    took.append(t)
                else:
                    rest.append(t)
            if len(took) < want:
                ok = False
                break
            hands[s] += took
            pool = rest
        if ok:
            return hands, pool[:k.boneyard]
    raise AssertionError("unreachable: the last try ignores the voids")  # pragma: no cover


def resume(view: SeatView, hands: list[list[Tile]], boneyard: list[Tile]) -> po.Playout:
    """The view's hand as a playout, the viewer's tiles its own and the rest a guess."""
    assert view.turn is not None and view.turn_up is not None
    hands = [list(view.hand) if s == view.seat else h for s, h in enumerate(hands)]
    cur = view.current
    return po.resume(view.opts, view.dealer, hands, view.turn_up, boneyard,
                     phase=_PHASES[view.phase], turn=view.turn, decisions=view.decisions,
                     misses=view.misses, for_pool=view.for_pool,
                     turn_up_taken=view.turn_up_taken, plays=cur.plays if cur else (),
                     led=cur.suit if cur else -1, tricks_won=view.tricks_won,
                     winners=[t.winner for t in view.tricks])  # type: ignore[misc]


def to_move(a: Action) -> po.Move:
    """The playout move for one of the engine's legal actions."""
    if isinstance(a, Play):
        return a.tile * 8 + (po.NO_SUIT if a.suit is None else a.suit)
    if isinstance(a, Discard):
        return tuple(a.tiles)
    assert isinstance(a, Decide)
    return (a.choice, a.for_pool, a.discard[0] if a.take_turn_up else -1)


# ---- the search ------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Estimate:
    """The search's answer: the best action, every candidate's mean result, the guesses."""

    action: Action
    means: tuple[tuple[Action, float], ...]  # best first
    samples: int


def search(view: SeatView, legal: Sequence[Action], rng: random.Random, *,
           max_samples: int, deadline: float | None = None,
           clock: object = None) -> Estimate:
    """Mean result of each legal action over up to `max_samples` guesses.

    With `deadline` (a value of `clock()`, a zero-argument callable) the search stops at the
    first guess finished after it; without, it runs all `max_samples` guesses, and the answer
    is then a function of the view and the rng's state alone.
    """
    legal = list(legal)
    if len(legal) == 1:
        return Estimate(legal[0], ((legal[0], 0.0),), 0)
    k = knowledge(view)
    moves = [to_move(a) for a in legal]
    totals = [0] * len(legal)
    seat, pool = view.seat, view.pool_at_start
    done = 0
    while done < max_samples:
        hands, boneyard = sample(k, rng)
        for i, m in enumerate(moves):
            p = resume(view, hands, boneyard)
            po.step(p, m)
            totals[i] += seat_result(rollout(p), seat, pool)
        done += 1
        if deadline is not None and clock() >= deadline:  # type: ignore[operator]
            break
    ranked = sorted(range(len(legal)), key=lambda i: -totals[i])  # stable: ties keep order
    means = tuple((legal[i], totals[i] / done) for i in ranked)
    return Estimate(means[0][0], means, done)
