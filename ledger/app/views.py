"""What each caller may see (§10): admin view, seat view; never the raw state."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger.app.projector import Projection
from ledger.core.rules import table as tb
from ledger.core.rules.hand import Hand, Trick
from ledger.core.rules.legal import legal_actions, miss_draw_to_name
from ledger.core.rules.tiles import NAMES, names
from ledger.core.rules.timers import timers_idle
from ledger.store.base import StoredEvent


@dataclass(frozen=True, slots=True)
class Viewer:
    """An authenticated caller: the table's admin, or one seat."""

    admin: bool
    seat: int | None = None
    spectator: bool = False  # a read-only token: sees what no seat hides

    @property
    def role(self) -> str:
        return "admin" if self.admin else "spectator" if self.spectator else "seat"

    def sees_seat(self, seat: int) -> bool:
        return self.admin or self.seat == seat


def _trick(tr: Trick) -> dict[str, Any]:
    return {"leader": tr.leader, "suit": tr.suit,
            "plays": [{"seat": s, "tile": NAMES[t]} for s, t in tr.plays], "winner": tr.winner}


def hand_phase(t: tb.Table) -> str:
    h = t.hand
    assert h is not None
    if h.phase == "complete":
        return "complete" if t.settled else "settling"
    return "deciding" if h.phase == "dealing" else h.phase


def hand_view(t: tb.Table, viewer: Viewer, h: Hand | None = None,
              full: bool = False) -> dict[str, Any]:
    """The hand as the viewer may see it; `full` (audit/replay) shows every tile."""
    h = h or t.hand
    assert h is not None
    open_ = full or h.phase == "complete" or t.status == "closed"  # closed: nothing is live
    per_seat = range(h.players)

    def visible(seat: int) -> bool:
        return open_ or viewer.sees_seat(seat)

    tricks = [_trick(tr) for tr in h.tricks] + ([_trick(h.current)] if h.current else [])
    out: dict[str, Any] = {
        "number": h.number, "phase": hand_phase(t) if h is t.hand else h.phase,
        "dealer": h.dealer, "turn": h.turn, "mode": h.mode, "voided": h.number in t.voided,
        "turn_up": NAMES[h.turn_up] if h.turn_up is not None else None,
        "trump": h.trump, "turn_up_taken": h.turn_up_taken,
        "decisions": {str(s): d for s, d in enumerate(h.decisions) if d is not None},
        "for_pool": h.for_pool, "pool_at_start": h.pool_at_start,
        "hands": {str(s): names(h.hands[s]) if visible(s) else {"count": len(h.hands[s])}
                  for s in per_seat} if h.mode != "results" else {},
        "tricks": tricks,
        "tricks_won": {str(s): n for s, n in enumerate(h.tricks_won)},
        "misses": h.misses, "boneyard_count": len(h.boneyard),
        "commitment": h.commitment, "won_without_play": h.won_without_play,
        "looed": list(h.looed),
    }
    if h.mode != "results":
        out["discards"] = {str(s): names(h.discards[s]) if visible(s)
                           else {"count": len(h.discards[s])} for s in per_seat}
    if open_ or viewer.admin:
        # Shuffled tables keep the boneyard in drawing order; recorded ones know only the set.
        out["boneyard"] = [NAMES[t] for t in h.boneyard] if h.ordered else names(h.boneyard)
    return out


def legal_view(t: tb.Table, viewer: Viewer) -> list[dict[str, Any]]:
    """Every action body the caller could send now (admin: for the seat to act)."""
    h = t.hand
    if h is None or not t.live or h.turn is None or t.status != "playing":
        return []
    if not viewer.sees_seat(h.turn):
        return []
    bodies = [a.body() for a in legal_actions(h, h.turn)]
    if viewer.admin:
        for b in bodies:
            b["seat"] = h.turn
    return bodies


def complete_view(t: tb.Table, viewer: Viewer) -> list[dict[str, Any]]:
    """Bodies the caller could send now once completed, which legal_actions (bodies accepted
    as they are) cannot hold: on a recorded table whose miss draws part of the boneyard, the
    miss as `{"type": "decide", "choice": "miss", "drawn": {"count": n}}`: send the n tiles
    really drawn as `drawn` (the count stands for tiles no list can name, as it does for
    another seat's hand)."""
    h = t.hand
    if h is None or h.ordered or h.turn is None or not t.live or t.status != "playing" \
            or not viewer.sees_seat(h.turn):
        return []
    n = miss_draw_to_name(h, h.turn)
    if not n:
        return []
    body: dict[str, Any] = {"type": "decide", "choice": "miss", "drawn": {"count": n}}
    if viewer.admin:
        body["seat"] = h.turn
    return [body]


def table_view(table_id: str, p: Projection, viewer: Viewer) -> dict[str, Any]:
    t = p.table
    seats = [{"seat": s, "name": t.names[s], "bot": t.bots[s], "score": _score(t, s),
              "balance": t.balances[s], "tricks": t.tricks_total[s]}
             for s in range(t.players)]
    return {
        "id": table_id, "variant": t.opts.variant, "scoring": t.opts.scoring,
        "deal": t.opts.deal, "options": t.opts.to_dict(), "version": p.version,
        "status": t.status, "dealer": t.dealer, "pool": t.pool, "seats": seats,
        "winner": t.winner, "tied": list(t.tied),
        "hand": hand_view(t, viewer) if t.hand is not None else None,
        "legal_actions": legal_view(t, viewer),
        "to_complete": complete_view(t, viewer),
        "timers_idle": timers_idle(t),
        "viewer": {"role": viewer.role, "seat": viewer.seat},
    }


def _score(t: tb.Table, seat: int) -> int:
    """Points games: the running total; pool games: chips won and lost (the balance)."""
    return t.scores[seat] if t.opts.scoring == "points" else t.balances[seat]


def replay_state(t: tb.Table, number: int) -> dict[str, Any]:
    """A replay step's state: what table_view showed at that version, every tile open (the
    admin's view). Before hand n's first event (step 0) its `hand` is null."""
    return {"pool": t.pool,
            "balances": {str(s): t.balances[s] for s in range(t.players)},
            "scores": {str(s): _score(t, s) for s in range(t.players)},
            "dealer": t.dealer, "status": t.status,
            "hand": hand_view(t, Viewer(admin=True), full=True)
            if t.hand is not None and t.hand.number == number else None}


# ---- events -------------------------------------------------------------------------------

def _count(value: Any) -> dict[str, int]:
    return {"count": len(value) if value is not None else 0}


# Events of a hand written before its deal: they hide nothing, so their hashes may show.
_BEFORE_DEAL = frozenset({"hand_started", "stake_posted"})


@dataclass(frozen=True, slots=True)
class Live:
    """The hand whose hidden tiles are still secret, and the version of its hand_started:
    every event after its deal chains on the hidden tiles, whatever hand it belongs to (a
    spectator added or revoked meanwhile belongs to none)."""

    number: int
    since: int


def redact(s: StoredEvent, viewer: Viewer, live: Live | None) -> dict[str, Any]:
    """An event as the viewer may see it: hidden tiles removed while its hand is live.

    A hash commits to the whole event, hidden tiles included, and through the chain to every
    event before it; a recorded deal or a discard is one of a few thousand possibilities:
    given such a hash a seat could try them all and find it. So while a hand is live a seat
    gets no hash from its deal on, nor any `prev_hash` after the deal, the hand's own events
    and the table's (a spectator added mid-hand) alike; the chain is open again, and
    checkable end to end, once the hand is complete (§10). table_created keeps its token
    hashes: without them nobody could check the chain from version 1, and a SHA-256 digest
    of a 192-bit random token opens nothing.
    """
    data = dict(s.data)
    digest, prev = s.hash, s.prev_hash
    if live is not None:
        mine = s.hand == live.number
        if mine and s.type == "tiles_dealt":
            data.pop("seed", None)  # secret until seed_revealed, even for the admin
            if not viewer.admin:
                data["hands"] = {k: (v if viewer.seat == int(k) else _count(v))
                                 for k, v in data["hands"].items()}
                data["boneyard"] = _count(data["boneyard"])
        elif mine and s.type in ("miss_drawn", "tiles_discarded") \
                and not viewer.sees_seat(data["seat"]):
            data["tiles"] = _count(data["tiles"])
            if "put_out" in data:
                data["put_out"] = _count(data["put_out"])
        # table_closed can follow a live hand that was abandoned: it chains on its events.
        after_deal = s.version > live.since and s.type not in _BEFORE_DEAL
        if not viewer.admin and (after_deal or s.type == "table_closed"):
            digest = None
            if s.type != "tiles_dealt":
                prev = None
    return {"version": s.version, "position": s.position, "type": s.type, "hand": s.hand,
            "data": data, "recorded_at": s.recorded_at, "causation": s.causation,
            "hash": digest, "prev_hash": prev}


def live_hand(p: Projection) -> Live | None:
    """The hand whose hidden tiles are still secret; none once the table is closed."""
    t = p.table
    if t.hand is None or not t.live or t.status == "closed":
        return None
    return Live(t.hand.number, p.hand_starts[-1])  # the live hand is the last one begun
