"""Settling a complete hand: pool chips with penalty caps (§8), Loo points and Rounce (§9)."""

from __future__ import annotations

from ledger.core import events as ev
from ledger.core.rules.hand import Hand
from ledger.core.rules.options import Options


def settle(opts: Options, h: Hand, pool: int, balances: tuple[int, ...],
           scores: tuple[int, ...]) -> list[ev.Event]:
    """The settlement events of a complete hand; the last is hand_settled (maybe game_won)."""
    if opts.scoring == "pool":
        out, pool, balances = _pool(opts, h, pool, balances)
    else:
        out, scores = _points(opts, h, scores)
    out.append(ev.HandSettled(pool=pool, balances=balances, scores=scores))
    won = game_result(opts, h, scores)
    if won is not None:
        out.append(won)
    return out


def penalty(opts: Options, pool_at_start: int) -> tuple[int, int | None]:
    """§8.4-8.5: (amount paid, cap applied or None) for one looed player."""
    cap = opts.penalty_cap()
    if opts.penalty_mode == "fixed":
        assert cap is not None
        return cap, cap  # §8.5: 5 x number of players, whatever P is (even above P)
    return (pool_at_start if cap is None else min(pool_at_start, cap)), cap


def _pool(opts: Options, h: Hand, pool: int, balances: tuple[int, ...]):
    n, p = opts.players, h.pool_at_start
    value = p // 5  # §8.3: each trick is worth P/5 (P is always a multiple of 5)
    pay = [0] * n
    if h.won_without_play == h.dealer and h.decisions[h.dealer] is None:
        pay[h.dealer] = p  # §8.3: a dealer who wins without play takes the whole pool
        reason = "pool_award"
    else:
        # §4: a lone player left in wins five tricks, paid as tricks (P/5 each, §8.3).
        reason = "trick"
        for s in range(n):
            if not (h.for_pool and s == h.dealer):  # §4: his share stays in the pool
                pay[s] = h.tricks_won[s] * value
    out: list[ev.Event] = [ev.TricksPaid(trick_value=value, payments=tuple(pay), reason=reason)]
    bal = [b + x for b, x in zip(balances, pay, strict=True)]
    pool -= sum(pay)
    for s in h.looed:
        amount, cap = penalty(opts, p)
        out += [ev.PlayerLooed(seat=s),
                ev.PenaltyAssessed(seat=s, uncapped=p, cap=cap, amount=amount,
                                   mode=opts.penalty_mode)]
        bal[s] -= amount
        pool += amount
    return out, pool, tuple(bal)


def points_deltas(opts: Options, h: Hand) -> list[tuple[int, int, str]]:
    """§9: Loo +1 a trick, -5 looed; Rounce -1 a trick, +5 rounced; ±5 won without play."""
    sign = -1 if opts.is_rounce else 1
    if h.won_without_play is not None:
        return [(h.won_without_play, 5 * sign, "won_without_play")]
    out: list[tuple[int, int, str]] = []
    for s in range(opts.players):
        if h.tricks_won[s]:
            out.append((s, sign * h.tricks_won[s], "trick"))
    for s in h.looed:
        out.append((s, -5 * sign, "rounce" if opts.is_rounce else "loo"))
    return out


def _points(opts: Options, h: Hand, scores: tuple[int, ...]):
    deltas = points_deltas(opts, h)
    totals = list(scores)
    for s, d, _r in deltas:
        totals[s] += d
    return [ev.PointsScored(deltas=tuple(deltas), totals=tuple(totals))], tuple(totals)


def initial_scores(opts: Options) -> tuple[int, ...]:
    """Loo points start at 0; Rounce counts down from the target (§9)."""
    return (opts.target if opts.is_rounce else 0,) * opts.players


def game_result(opts: Options, h: Hand, scores: tuple[int, ...]) -> ev.GameWon | None:
    """§9: Loo ends at target or more (highest wins); Rounce at 0 or less (lowest wins)."""
    if opts.scoring != "points":
        return None
    if opts.is_rounce:
        done = [s for s in range(opts.players) if scores[s] <= 0]
        best = min(scores)
    else:
        done = [s for s in range(opts.players) if scores[s] >= opts.target]
        best = max(scores)
    if not done:
        return None
    leaders = [s for s in range(opts.players) if scores[s] == best]
    if len(leaders) == 1:
        return ev.GameWon(seat=leaders[0], scores=scores)
    first = _first_to_reach(opts, h, scores, leaders)
    return ev.GameWon(seat=first, scores=scores, tied=tuple(leaders))


def _first_to_reach(opts: Options, h: Hand, scores: tuple[int, ...],
                    leaders: list[int]) -> int | None:
    """Tie-break (§9): who reached the goal at the earlier trick of the final hand."""
    if not h.tricks:
        return None  # results tables record no trick order: the tie stands
    sign = -1 if opts.is_rounce else 1
    before = {s: scores[s] - sum(d for x, d, _ in points_deltas(opts, h) if x == s)
              for s in leaders}
    for trick in h.tricks:
        w = trick.winner
        if w in before:
            before[w] += sign
            reached = before[w] <= 0 if opts.is_rounce else before[w] >= opts.target
            if reached:
                return w
    return None
