"""Hints (API.md "Bots, hints and turn timers"): the expert's move for one seat, from that
seat's view only, with a short reason."""

from __future__ import annotations

import random
import threading
from collections import OrderedDict
from typing import Any

from ledger.app.projector import Projection
from ledger.core.errors import Forbidden, Invalid
from ledger.core.rules.actions import Action, Decide, Discard, Play
from ledger.core.rules.bots import expert_estimate
from ledger.core.rules.legal import legal_actions
from ledger.core.rules.options import Options
from ledger.core.rules.tiles import NAMES, SUIT_NAMES
from ledger.core.rules.view import seat_view

_CACHE: OrderedDict[tuple[str, int, int], dict[str, Any]] = OrderedDict()
_CACHE_SIZE = 1024
_CACHE_LOCK = threading.Lock()


def hint(p: Projection, seat: int, table_id: str | None = None) -> dict[str, Any]:
    """`{"seat", "action", "why", "version"}` for `seat`, whose turn it must be.

    The search costs up to 200 ms of CPU: with `table_id`, a hint asked again at the same
    version is answered from a small per-process cache (it would be the same answer: the
    guesses are seeded by the table version and seat).

    403 `hints_off` without options.hints; 422 `table_closed` / `table_finished` when the
    table takes no more moves (as an action would be refused); 422 `not_your_turn` when the
    seat is not to act.
    The expert sees the seat view (its own tiles and what is public) and nothing else, and
    the answer names only the seat's own tiles and expected results.
    """
    t = p.table
    if not t.opts.hints:
        raise Forbidden("hints_off", "this table was created without options.hints: true")
    if t.status != "playing":  # a closed table's abandoned hand still names a turn
        raise Invalid(f"table_{t.status}", f"the table is {t.status}: it takes no more moves, "
                      "so there is nothing to hint")
    h = t.hand
    legal = legal_actions(h, seat) if h is not None and t.live else []
    if not legal:
        raise Invalid("not_your_turn", f"seat {seat} is not to act now: a hint is for the seat "
                      "whose turn it is")
    assert h is not None
    key = (table_id, p.version, seat) if table_id is not None else None
    if key is not None:
        with _CACHE_LOCK:
            found = _CACHE.get(key)
        if found is not None:
            return dict(found)
    # Reproducible: the same table version and seat give the same guesses.
    rng = random.Random(f"hint:{h.commitment}:{p.version}:{seat}")
    est = expert_estimate(seat_view(h, seat), legal, rng)
    out = {"seat": seat, "action": est.action.body(), "why": _why(est, t.opts),
           "version": p.version}
    if key is not None:
        with _CACHE_LOCK:
            _CACHE[key] = out
            while len(_CACHE) > _CACHE_SIZE:
                _CACHE.popitem(last=False)
    return dict(out)


def _why(est: Any, opts: Options) -> str:
    """The move and what it is expected to bring, on the score as the table shows it. The
    search ranks by a result where more is better; a Rounce score counts down (RULES §9), so
    there its points are the search's negated: the best move's are the lowest."""
    unit = "chips" if opts.scoring == "pool" else "points"
    sign = -1 if opts.is_rounce else 1
    best = describe(est.action)
    if est.samples == 0:
        return f"{best}: the only legal action"
    mean = sign * est.means[0][1] + 0.0  # + 0.0: never a "-0.0"
    down = " (Rounce counts down: lower is better)" if opts.is_rounce else ""
    out = (f"{best}: {mean:+.1f} {unit} expected this hand{down} over {est.samples} guessed "
           f"deals of the tiles you cannot see")
    if len(est.means) > 1:
        other, value = est.means[1]
        out += f"; next best, {describe(other)}: {sign * value + 0.0:+.1f}"
    return out


def describe(a: Action) -> str:
    if isinstance(a, Play):
        lead = f", leading {SUIT_NAMES[a.suit]}" if a.suit is not None else ""
        return f"play {NAMES[a.tile]}{lead}"
    if isinstance(a, Discard):
        return "discard " + " and ".join(NAMES[x] for x in a.tiles)
    assert isinstance(a, Decide)
    if a.choice != "play":
        return a.choice
    out = "play (stand)"
    if a.take_turn_up:
        out += f", taking the turn-up and discarding {NAMES[a.discard[0]]}"
    if a.for_pool:
        out += ", for the pool"
    return out
