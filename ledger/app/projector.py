"""Fold stored events into state, and the read models the API serves (ledger, scores, replay)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ledger.core import events as ev
from ledger.core.rules import table as tb
from ledger.store.base import StoredEvent


@dataclass(frozen=True, slots=True)
class Projection:
    """A table folded up to `version`, plus where its hands begin (for replay and causation)."""

    table: tb.Table
    version: int = 0
    hand_starts: tuple[int, ...] = ()  # version of each hand's hand_started (hand n at n-1)
    completed_at: int | None = None  # version of the live hand's hand_completed


def decode(stored: StoredEvent) -> ev.Event:
    return ev.from_data(stored.type, stored.data)


def project(stored: Iterable[StoredEvent], base: Projection | None = None) -> Projection:
    """Fold stored events on top of a projection (from scratch when `base` is None)."""
    return fold(((s.version, decode(s)) for s in stored), base)


def fold(versioned: Iterable[tuple[int, ev.Event]], base: Projection | None = None) -> Projection:
    """Fold (version, event) pairs on top of a projection: events not yet stored included."""
    p = base or Projection(table=tb.replay([]))
    t, version, starts, completed = p.table, p.version, list(p.hand_starts), p.completed_at
    for v, e in versioned:
        t = tb.evolve(t, e)
        version = v
        if isinstance(e, ev.HandStarted):
            starts.append(v)
            completed = None
        elif isinstance(e, ev.HandCompleted):
            completed = v
    return replace(p, table=t, version=version, hand_starts=tuple(starts), completed_at=completed)


def hand_events(stored: Sequence[StoredEvent], number: int) -> list[StoredEvent]:
    return [s for s in stored if s.hand == number]


SEAT = "seat:{}".format
_CHIP_EVENTS = frozenset({"stake_posted", "tricks_paid", "penalty_assessed", "hand_voided"})
_SCORE_EVENTS = frozenset({"points_scored", "hand_voided"})
BOOK_EVENTS = _CHIP_EVENTS | _SCORE_EVENTS  # all that table_book reads


def table_book(stored: Sequence[StoredEvent], table: tb.Table,
               hand: int | None = None) -> dict[str, Any]:
    """A table's ledger (API.md Audit, GET .../ledger): every chip transfer and the balances,
    and for points games every score, the start and the totals. `stored`: the table's
    events (those of BOOK_EVENTS are enough); `hand`: only that hand's transfers and scores,
    the balances and totals still the whole table's."""
    out = chip_ledger(stored, table.players)
    if table.opts.scoring == "points":
        out |= score_sheet(stored, table)
    if hand is not None:
        for key in ("transfers", "scores"):
            if key in out:
                out[key] = [x for x in out[key] if x["hand"] == hand]
    return out


def chip_ledger(stored: Iterable[StoredEvent], players: int,
                decoded: Sequence[ev.Event] | None = None) -> dict[str, Any]:
    """Double-entry transfers between `seat:N` and `pool`; balances always sum to zero.
    `decoded`: the same events already decoded (they are not decoded again)."""
    transfers: list[dict[str, Any]] = []
    balances = {SEAT(s): 0 for s in range(players)} | {"pool": 0}

    def move(s: StoredEvent, src: str, dst: str, amount: int, reason: str,
             **extra: Any) -> None:
        if amount <= 0:
            return
        transfers.append({"hand": s.hand, "version": s.version, "from": src, "to": dst,
                          "amount": amount, "reason": reason, "causation": s.causation}
                         | extra)
        balances[src] -= amount
        balances[dst] += amount

    for i, s in enumerate(stored):
        if s.type not in _CHIP_EVENTS:
            continue
        e = decode(s) if decoded is None else decoded[i]
        if isinstance(e, ev.StakePosted):
            move(s, SEAT(e.seat), "pool", e.amount, e.reason)
        elif isinstance(e, ev.TricksPaid):
            for seat, amount in enumerate(e.payments):
                move(s, "pool", SEAT(seat), amount, e.reason)
        elif isinstance(e, ev.PenaltyAssessed):  # §8.5: the uncapped amount and the cap
            move(s, SEAT(e.seat), "pool", e.amount, "loo", uncapped=e.uncapped, cap=e.cap,
                 mode=e.mode)
        elif isinstance(e, ev.HandVoided):  # a correction: each transfer of the hand reversed
            for src, dst, amount in e.transfers:
                move(s, src, dst, amount, "void")
    return {"transfers": transfers, "balances": balances}


def score_sheet(stored: Iterable[StoredEvent], table: tb.Table) -> dict[str, Any]:
    """Points games: every delta with its reason, and the running totals."""
    from ledger.core.rules.scoring import initial_scores

    scores: list[dict[str, Any]] = []
    for s in stored:
        if s.type not in _SCORE_EVENTS:
            continue
        e = decode(s)
        if isinstance(e, ev.PointsScored):
            for seat, delta, reason in e.deltas:
                scores.append({"hand": s.hand, "version": s.version, "seat": seat,
                               "delta": delta, "reason": reason})
        elif isinstance(e, ev.HandVoided):
            for seat, delta in e.score_changes:
                scores.append({"hand": s.hand, "version": s.version, "seat": seat,
                               "delta": delta, "reason": "void"})
    start = initial_scores(table.opts)
    totals = {SEAT(i): v for i, v in enumerate(table.scores)}
    return {"scores": scores, "start": {SEAT(i): v for i, v in enumerate(start)},
            "totals": totals}
