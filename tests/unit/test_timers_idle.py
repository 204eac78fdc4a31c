"""Turn timers rest at an abandoned table (API.md "Bots, hints and turn timers"): once a whole
hand was played by the timers alone (every person's every turn timed out), the next hand is
dealt as usual but no timer acts in it until a person acts or the admin starts a hand.
Time is driven by the injected clock; the timer job is called with its scheduled version."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime

import pytest

from ledger.app import handlers
from ledger.app.audit import audit
from ledger.app.history import table_history
from ledger.app.projector import project
from ledger.app.service import Ledger
from ledger.app.verify import verify_document
from ledger.app.views import Viewer, table_view
from ledger.core import commands as c
from ledger.core.rules.actions import Decide
from ledger.core.rules.bots import POLICIES
from ledger.core.rules.legal import legal_actions
from ledger.core.rules.table import dealt_untouched
from ledger.core.rules.timers import timers_idle
from ledger.store import hashing
from tests.unit.test_timers import Clock, Scheduler, make
from workers import jobs


def _time_out_hand(led: Ledger, table_id: str, clock: Clock, acts_first: bool = False) -> int:
    """Let the timers play the live hand to its end (the first person to act moves
    themself when `acts_first`); returns the number of timeouts."""
    number = led.load(table_id).table.hand.number
    timed = 0
    while (p := led.load(table_id)).table.hand.number == number and p.table.live:
        if acts_first:
            seat = p.table.hand.turn
            led.execute(table_id, c.Act(legal_actions(p.table.hand, seat)[0]),
                        expected_version=p.version)
            acts_first = False
            continue
        assert handlers.timer_owed(p) is not None
        clock.offset += 60
        assert jobs.time_out(table_id, p.version, ledger=led) == "acted"
        timed += 1
    return timed


def _scheduled_at(d: Scheduler, table_id: str, version: int) -> bool:
    return any(job_id == f"timeout:{table_id}:{version}" for _at, job_id, _a in d.timers)


def test_turn_timers_rest_after_a_hand_nobody_played_and_nothing_is_appended():
    led, table_id, d, clock = make(seconds=8, bots=(2, 3))
    assert _time_out_hand(led, table_id, clock) >= 2
    p = led.load(table_id)
    assert p.table.hand.number == 2 and p.table.live  # auto_deal dealt the next hand
    assert p.table.bots[p.table.hand.turn] is None  # the bots played up to a person's turn
    assert timers_idle(p.table) and handlers.timer_owed(p) is None
    assert not _scheduled_at(d, table_id, p.version)
    view = table_view(table_id, p, Viewer(admin=True))
    assert view["timers_idle"] is True
    # several timer periods pass: no timer acts, the table appends nothing
    for _ in range(5):
        clock.offset += 60
        assert jobs.time_out(table_id, p.version, ledger=led) == "idle"
    assert led.store.version(table_id) == p.version
    # event-sourced: a fold from scratch says the same
    assert timers_idle(project(led.store.load(table_id)).table)


def test_turn_timers_wake_at_a_persons_move_after_resting():
    led, table_id, d, clock = make(seconds=8, bots=(2, 3))
    _time_out_hand(led, table_id, clock)
    p = led.load(table_id)
    seat = p.table.hand.turn
    led.execute(table_id, c.Act(legal_actions(p.table.hand, seat)[0]),
                expected_version=p.version)
    p = led.load(table_id)
    assert not timers_idle(p.table)
    assert table_view(table_id, p, Viewer(admin=True))["timers_idle"] is False
    # from then on the timers act again: for the rest of this hand, and in the next
    _time_out_hand(led, table_id, clock)
    p = led.load(table_id)
    assert p.table.hand.number == 3 and not timers_idle(p.table)  # hand 2: a person acted
    assert p.table.bots[p.table.hand.turn] is None and handlers.timer_owed(p) is not None
    assert _scheduled_at(d, table_id, p.version)


def test_a_hand_in_which_a_person_acted_once_does_not_rest_the_timers():
    led, table_id, d, clock = make(seconds=8, bots=(2, 3))
    assert _time_out_hand(led, table_id, clock, acts_first=True) >= 1
    p = led.load(table_id)
    assert p.table.hand.number == 2 and not timers_idle(p.table)
    assert handlers.timer_owed(p) is not None and _scheduled_at(d, table_id, p.version)
    clock.offset += 60
    assert jobs.time_out(table_id, p.version, ledger=led) == "acted"


def test_the_admin_starting_a_hand_wakes_the_timers():
    led, table_id, d, clock = make(seconds=8, bots=(2, 3), auto_deal=False)
    led.execute(table_id, c.StartHand())
    _time_out_hand(led, table_id, clock)
    assert led.load(table_id).table.unattended  # the hand the timers played alone
    led.execute(table_id, c.StartHand())
    p = led.load(table_id)
    assert not timers_idle(p.table)
    if p.table.bots[p.table.hand.turn] is None:
        assert handlers.timer_owed(p) is not None


def test_the_admin_starting_a_hand_wakes_the_timers_with_auto_deal_too():
    # With auto_deal the admin deals only after a void: here of the hand the timers played
    # alone, which won a points game (target 1). The deal is the admin's: it wakes them.
    led, table_id, d, clock = make(seconds=8, bots=(0, 2, 3), scoring="points", target=1)
    _time_out_hand(led, table_id, clock)
    p = led.load(table_id)
    assert p.table.status == "finished" and timers_idle(p.table)
    led.execute(table_id, c.VoidHand(1, "nobody was there"))
    led.execute(table_id, c.StartHand())
    p = led.load(table_id)
    assert p.table.hand.number == 2 and p.table.bots[p.table.hand.turn] is None
    assert not timers_idle(p.table) and handlers.timer_owed(p) is not None
    assert _scheduled_at(d, table_id, p.version)
    assert not timers_idle(project(led.store.load(table_id)).table)  # a fold from scratch


def test_the_admin_starting_the_hand_auto_deal_dealt_wakes_the_timers_from_then(monkeypatch):
    # With auto_deal hand 2 is dealt already, P1 first to decide (hand 1 dealt by P3) and
    # nobody has acted in it: the admin's start names it and deals nothing. At resting timers
    # it wakes them as a deal does, recorded (timers_woken): the fold says so, and P1's
    # turn_seconds count from the wake, not from the deal.
    led, table_id, d, clock = make(seconds=8, bots=(0, 2, 3), first_dealer=3)
    assert _time_out_hand(led, table_id, clock) >= 1
    p = led.load(table_id)
    assert p.table.hand.number == 2 and p.table.hand.turn == 1 and dealt_untouched(p.table)
    assert timers_idle(p.table) and not _scheduled_at(d, table_id, p.version)
    woken = time.time() + 1000  # the admin comes back long after the deal
    monkeypatch.setattr(hashing, "utc_now", lambda: datetime.fromtimestamp(woken, UTC)
                        .isoformat(timespec="microseconds"))
    out = led.execute(table_id, c.StartHand(), expected_version=p.version)
    assert [s.type for s in out.stored] == ["timers_woken"] and out.stored[0].hand == 2
    p = led.load(table_id)
    assert p.version == out.stored[0].version and p.table.hand.turn == 1
    assert not timers_idle(p.table) and handlers.timer_owed(p) == (1, 8)
    at, job_id, _args = d.timers[-1]
    assert job_id == f"timeout:{table_id}:{p.version}" and at == pytest.approx(woken + 8, abs=1e-3)
    assert not timers_idle(project(led.store.load(table_id)).table)  # a fold from scratch
    assert led.execute(table_id, c.StartHand()).stored == []  # awake: nothing more to wake
    clock.offset = 1000 + 5  # 3 s before the deadline the wake set
    assert jobs.time_out(table_id, p.version, ledger=led) == "early"
    clock.offset = 1000 + 8
    assert jobs.time_out(table_id, p.version, ledger=led) == "acted"
    assert audit(led.store.load(table_id), led.load(table_id))["ok"]
    # hand 2's file carries the wake in its chain, and `loo verify` passes it (a notice: the
    # rules of the hand give no such event)
    if led.load(table_id).table.hand.number == 2:  # the timer dropped for P1: the bots ended it
        _time_out_hand(led, table_id, clock)
    docs = list(table_history(table_id, lambda a, b: led.store.load_raw(table_id, a, b),
                              led.store.version(table_id), led.checkpoints(table_id)))
    (doc,) = [x for x in docs if x["hand"]["number"] == 2]
    assert "timers_woken" in [e["type"] for e in doc["events"]]
    verify_document(json.loads(json.dumps(doc)), led.signer.private.public_key())


def test_all_bot_tables_play_on_with_turn_timers():
    led, table_id, _d, _clock = make(seconds=8, bots=(0, 1, 2, 3), max_hands=3)
    p = led.load(table_id)
    assert p.table.status == "closed" and p.table.hand.number == 3
    assert not p.table.unattended and not timers_idle(p.table)
    assert not [s for s in led.store.load(table_id) if s.type == "turn_timed_out"]


def _drops(view, legal, rng):
    """A bot that drops whenever it may: with every bot out the dealer wins without play."""
    return next((a for a in legal if isinstance(a, Decide) and a.choice == "drop"), legal[0])


@pytest.fixture
def droppers(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(POLICIES, "dropper", (_drops, "1"))
    return "dropper"


def _without_the_person(led: Ledger, table_id: str, number: int) -> None:
    """Hand `number` was played without a turn for the table's person (P0): its dealer, who
    won it without play when every bot dropped (RULES.md §4)."""
    events = [s for s in led.store.load(table_id) if s.hand == number]
    assert [s for s in events if s.type == "hand_completed"]
    assert not [s for s in events if s.type == "turn_timed_out"]
    assert not [s for s in events if s.data.get("seat") == 0
                and s.type in ("player_decided", "tiles_discarded", "tile_played")]


def test_a_hand_with_no_person_turn_leaves_resting_timers_resting(droppers):
    # Hand 1 (dealer P3): P0's turn times out; hand 2 (dealer P0): every bot drops and P0
    # wins without play, no person's turn in it; hand 3: P0's turn, the timers still rest.
    led, table_id, d, clock = make(seconds=8, bots=(1, 2, 3), bot=droppers, first_dealer=3)
    assert _time_out_hand(led, table_id, clock) == 1
    p = led.load(table_id)
    assert p.table.hand.number == 3 and p.table.hand.turn == 0
    _without_the_person(led, table_id, 2)
    assert timers_idle(p.table) and handlers.timer_owed(p) is None
    assert not _scheduled_at(d, table_id, p.version)
    assert timers_idle(project(led.store.load(table_id)).table)


def test_a_hand_with_no_person_turn_leaves_awake_timers_awake(droppers):
    # Hand 1 (dealer P0): every bot drops, P0 wins without play; hand 2: P0 is on the clock.
    led, table_id, d, _clock = make(seconds=8, bots=(1, 2, 3), bot=droppers, first_dealer=0)
    p = led.load(table_id)
    assert p.table.hand.number == 2 and p.table.hand.turn == 0
    _without_the_person(led, table_id, 1)
    assert not timers_idle(p.table) and handlers.timer_owed(p) == (0, 8)
    assert _scheduled_at(d, table_id, p.version)
    assert not timers_idle(project(led.store.load(table_id)).table)
