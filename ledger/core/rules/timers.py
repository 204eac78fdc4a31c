"""Turn timers (API.md "Bots, hints and turn timers"): what the service does for a seat that
lets `options.turn_seconds` pass. Pure: the clock and the scheduling live in the app layer."""

from __future__ import annotations

from ledger.core import events as ev
from ledger.core.errors import Conflict
from ledger.core.rules import table as tb
from ledger.core.rules.actions import Action, Decide, Discard, Play
from ledger.core.rules.legal import legal_actions
from ledger.core.rules.tiles import SORT_KEY


def timers_idle(t: tb.Table) -> bool:
    """The table's people have left it to the timers (API.md "Bots, hints and turn timers"):
    in the last complete hand every person's turn timed out, and no person (nor an admin for
    a seat) has acted since, nor has an admin started a hand (`wake`). No timer acts until
    one does."""
    if not t.unattended:
        return False
    h = t.hand
    return h is None or h.phase == "complete" or all(t.bots[s] is not None for s in h.acted)


def wake(t: tb.Table) -> list[ev.Event]:
    """An admin's start of the hand auto_deal dealt, which deals nothing: resting timers wake
    as at a deal, and the event records it (the table's state is the fold of its events), so
    the seat to act has its whole turn_seconds from now, not from the deal long before."""
    return [ev.TimersWoken()] if timers_idle(t) else []


def seat_on_the_clock(t: tb.Table) -> int | None:
    """The person (not a bot) to act at a timed shuffled table, if any (none while idle)."""
    h = t.hand
    if (t.opts.turn_seconds is None or t.status != "playing" or h is None or not t.live
            or h.turn is None or h.mode != "shuffled" or t.bots[h.turn] is not None
            or timers_idle(t)):
        return None
    return h.turn


def timeout_action(legal: list[Action]) -> Action:
    """Drop where allowed, else the lowest legal play (the plain stand when deciding); a
    discard puts out the lowest tiles. Ties (a lead declared as either suit): the first listed."""
    first = legal[0]
    if isinstance(first, Decide):
        for a in legal:
            if isinstance(a, Decide) and a.choice == "drop":
                return a
        for a in legal:  # stand: keep the hand, no turn-up taken, not for the pool
            if (isinstance(a, Decide) and a.choice == "play" and not a.take_turn_up
                    and not a.for_pool):
                return a
        return first
    if isinstance(first, Discard):
        return min(legal, key=lambda a: sorted(SORT_KEY[t] for t in a.tiles))  # type: ignore[union-attr]
    return min(legal, key=lambda a: SORT_KEY[a.tile])  # type: ignore[union-attr]


def time_out(t: tb.Table, seat: int) -> list[ev.Event]:
    """`turn_timed_out`, then the action taken for the seat and what follows from it."""
    if seat_on_the_clock(t) != seat:
        raise Conflict("turn_not_timed", f"seat {seat} is not on the clock at this table")
    h = t.hand
    assert h is not None and t.opts.turn_seconds is not None
    action = timeout_action(legal_actions(h, seat))
    assert isinstance(action, Decide | Discard | Play)
    return [ev.TurnTimedOut(seat=seat, seconds=t.opts.turn_seconds), *tb.act(t, action)]
