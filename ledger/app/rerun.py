"""The audit's re-run of a table: one fold of its events serves replay_matches, plays_legal
and the settlements of chips_conserved (each used to fold the whole table on its own).

Each check keeps a cursor: the next event where it has something to check. The fold stops
at the nearest cursor, the check there looks at the table as the events before it left it
(and, as before, at the recorded events that follow), and the fold goes on. A check that
failed keeps its first failure and has no cursor any more. The verdicts are word for word
those of the checks run one after the other (tests/unit/test_audit_catches.py).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import Any

from ledger.app.projector import Projection
from ledger.core import events as ev
from ledger.core.errors import LedgerError
from ledger.core.rules import table as tb
from ledger.core.rules.actions import Action, Decide, Discard, Play
from ledger.core.rules.results import result_events
from ledger.store.base import StoredEvent

_SETTLEMENT = (ev.TricksPaid, ev.PlayerLooed, ev.PenaltyAssessed, ev.PointsScored,
               ev.HandSettled, ev.GameWon)
_ACTS = (ev.PlayerDecided, ev.TilesDiscarded, ev.TilePlayed)


def why(err: BaseException) -> str:
    detail = getattr(err, "detail", None) or " ".join(str(err).split())
    return f"{type(err).__name__}: {detail}" if detail else type(err).__name__


def rerun(stored: Sequence[StoredEvent], events: Sequence[ev.Event],
          ) -> tuple[Projection | str, Any, Any]:
    """(the table folded from its events or "replay failed: ...", the plays_legal verdict,
    the settlements' verdict); a verdict is True or a sentence naming the first failure."""
    n = len(events)
    legal, settle = _Legal(stored, events), _Settlements(stored, events)
    t = tb.replay([])
    i = 0
    while i < n:
        if legal.verdict is None and legal.at == i:
            legal.step(i, t)
        if settle.verdict is None and settle.at == i:
            settle.step(i, t)
        stop = min(n if legal.verdict else legal.at, n if settle.verdict else settle.at)
        try:
            t = tb.replay(events[i:stop], t)
        except Exception:  # noqa: BLE001 - which event, and why, as the fold one by one says
            for e in events[i:stop]:
                try:
                    t = tb.evolve(t, e)
                except Exception as err:  # noqa: BLE001 - a corrupt record is reported
                    if legal.verdict is None:  # it folds the same events up to here
                        legal.verdict = f"the record could not be checked ({why(err)})"
                    return f"replay failed: {err}", legal.verdict, settle.verdict
        i = stop
    if settle.verdict is None and settle.at == n:  # the stakes of a hand started last
        settle.step(n, t)
    starts: list[int] = []
    completed = None
    for s, e in zip(stored, events, strict=True):
        if isinstance(e, ev.HandStarted):
            starts.append(s.version)
            completed = None
        elif isinstance(e, ev.HandCompleted):
            completed = s.version
    rebuilt = Projection(table=t, version=stored[-1].version if stored else 0,
                         hand_starts=tuple(starts), completed_at=completed)
    return rebuilt, legal.verdict or True, settle.verdict or True


class _Check:
    """A check's cursor over the events: `at` is the next event it looks at (the fold skips
    every event between two of the kinds in `marks`: nothing there for it to check)."""

    marks: tuple[type, ...] = ()

    def __init__(self, stored: Sequence[StoredEvent], events: Sequence[ev.Event]) -> None:
        self.stored, self.events = stored, events
        self.verdict: str | None = None
        self.at = 0
        self._marks = [i for i, e in enumerate(events) if isinstance(e, self.marks)]

    def step(self, i: int, t: tb.Table) -> None:
        raise NotImplementedError

    def go_to(self, i: int) -> None:
        """On to event i, or past it to the next event this check looks at."""
        k = bisect_left(self._marks, i)
        self.at = self._marks[k] if k < len(self._marks) else len(self.events)


class _Legal(_Check):
    """plays_legal: each action, applied to the table before it, gives exactly its events;
    each results hand is a result the rules allow."""

    marks = (*_ACTS, ev.HandStarted)

    def step(self, i: int, t: tb.Table) -> None:
        try:
            self._step(i, t)
        except Exception as err:  # noqa: BLE001 - a corrupt record must be reported
            self.verdict = f"the record could not be checked ({why(err)})"

    def _step(self, i: int, t: tb.Table) -> None:
        events, version = self.events, self.stored[i].version
        e = events[i]
        hand = t.hand
        if hand is not None and t.live and hand.mode != "results":
            found = _action_of(events, i)
            if found is not None:
                action, _n = found
                if isinstance(action, Decide) and hand.ordered:
                    action = Decide(action.seat, action.choice, action.take_turn_up,
                                    action.discard, action.for_pool, None)
                try:
                    expected = tb.act(t, action)
                except LedgerError as err:
                    self.verdict = f"version {version}: illegal {e.type}: {err.detail}"
                    return
                if events[i : i + len(expected)] != expected:
                    self.verdict = f"version {version}: recorded events differ from the rules"
                    return
                self.go_to(i + max(len(expected), 1))
                return
        if isinstance(e, ev.HandStarted) and e.mode == "results":
            j = i + 1
            while j < len(events) and isinstance(events[j], ev.StakePosted):
                j += 1
            k = j
            while k < len(events) and not isinstance(events[k], ev.HandCompleted):
                k += 1
            problem = _check_result(t, events[i:j], events[j : k + 1], version)
            if problem:
                self.verdict = problem
                return
        self.go_to(i + 1)


class _Settlements(_Check):
    """§8/§9 (and §2's rotation): the stakes, payments, penalties and points the record shows
    are exactly what the rules make of it, so a rewritten (and re-hashed) sum is caught."""

    marks = (ev.HandStarted, ev.HandVoided, ev.StakePosted, *_SETTLEMENT)

    def __init__(self, stored: Sequence[StoredEvent], events: Sequence[ev.Event]) -> None:
        super().__init__(stored, events)
        self.stakes = False  # a hand has just started: its stakes come next

    def step(self, i: int, t: tb.Table) -> None:
        try:
            if self.stakes:  # `t` is the table the hand_started before `i` left
                self.stakes = False
                self._expect(i, tb.stakes(t) if t.opts.scoring == "pool" else [],
                             "the stakes differ from §8.1")
            if self.verdict is None and self.at == i < len(self.events):
                self._step(i, t)
        except Exception as err:  # noqa: BLE001 - a corrupt record must be reported
            self.verdict = f"settlements could not be recomputed: {err}"

    def _step(self, i: int, t: tb.Table) -> None:
        e, version = self.events[i], self.stored[i].version
        if isinstance(e, ev.HandStarted):
            if not t.settled or t.status != "playing" or e.dealer != t.dealer:
                self.verdict = (f"version {version}: hand {e.number} may not start here (the "
                                f"deal passes to seat {t.dealer}, after the last hand is "
                                "settled)")
                return
            self.stakes = True
            self.at = i + 1
        elif tb.needs_settlement(t) and isinstance(e, _SETTLEMENT):
            self._expect(i, tb.settle(t), "the settlement differs from "
                         + ("§8" if t.opts.scoring == "pool" else "§9"))
        elif isinstance(e, ev.HandVoided):
            try:
                expected = tb.void(t, e.number, e.reason)
            except LedgerError as err:
                self.verdict = (f"version {version}: hand {e.number} could not be voided here "
                                f"({err})")
                return
            self._expect(i, expected, "the void does not reverse exactly what its hand moved")
        elif isinstance(e, (ev.StakePosted, *_SETTLEMENT)):
            self.verdict = f"version {version}: {e.type} outside the stakes or a settlement"
        else:
            self.go_to(i + 1)

    def _expect(self, i: int, expected: list[ev.Event], what: str) -> None:
        """The events from i on must be `expected`, and no stake may follow them."""
        events, n = self.events, len(self.events)
        following = events[i + len(expected)] if i + len(expected) < n else None
        if events[i : i + len(expected)] != expected or isinstance(following, ev.StakePosted):
            self.verdict = f"version {self.stored[min(i, n - 1)].version}: {what}"
            return
        self.go_to(i + len(expected))


def _action_of(events: Sequence[ev.Event], i: int) -> tuple[Action, int] | None:
    """The action that produced events[i:] (and how many primary events it wrote)."""
    e = events[i]
    if isinstance(e, ev.PlayerDecided):
        take = e.take_turn_up
        discard: tuple[int, ...] = ()
        drawn = None
        n = 1
        if take:
            disc = events[i + 2]
            assert isinstance(disc, ev.TilesDiscarded)
            discard, n = disc.tiles, 3
        if e.choice == "miss" and i + 1 < len(events) and isinstance(events[i + 1], ev.MissDrawn):
            drawn = events[i + 1].tiles  # type: ignore[union-attr]
            n = 2
        return Decide(e.seat, e.choice, take, discard, e.for_pool, drawn), n
    if isinstance(e, ev.TilesDiscarded):
        return Discard(e.seat, e.tiles), 1
    if isinstance(e, ev.TilePlayed):
        return Play(e.seat, e.tile, e.suit), 1
    return None


def _check_result(t: tb.Table, start: Sequence[ev.Event], rest: Sequence[ev.Event],
                  version: int) -> str | None:
    decided = [e for e in rest if isinstance(e, ev.PlayerDecided)]
    done = rest[-1] if rest else None
    if not isinstance(done, ev.HandCompleted):
        return f"version {version}: results hand without hand_completed"
    result = {"decisions": {str(e.seat): e.choice for e in decided},
              "for_pool": done.for_pool,
              "tricks": {str(s): n for s, n in enumerate(done.tricks_won)}}
    h = tb.replay(list(start), t).hand
    assert h is not None
    try:
        expected = result_events(h, result)
    except LedgerError as err:
        return f"version {version}: impossible result: {err.detail}"
    if list(rest) != expected:
        return f"version {version}: results hand differs from the rules"
    return None
