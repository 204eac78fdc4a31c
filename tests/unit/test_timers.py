"""Turn timers (API.md "Bots, hints and turn timers", issue 18) on the command path: time is
driven by an injected clock and the timer job is called with the version it was scheduled
for, so nothing sleeps for turn_seconds."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from ledger.app.audit import audit
from ledger.app.service import Ledger
from ledger.core import commands as c
from ledger.core.rules.actions import Decide, Discard, Play
from ledger.core.rules.legal import legal_actions
from ledger.core.rules.tiles import SORT_KEY
from ledger.core.rules.timers import timeout_action
from ledger.store.base import VersionConflict
from ledger.store.memory import MemoryStore
from workers import jobs
from workers.queue import Timers


class Clock:
    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.time() + self.offset


class Scheduler:
    """In-process follow-ups (as the embedded default) and a record of scheduled timers."""

    mode = "inline"

    def __init__(self) -> None:
        self.ledger: Ledger | None = None
        self.timers: list[tuple[float, str, tuple]] = []

    def enqueue(self, func_path: str, *args: object, job_id: str) -> None:
        jobs.advance(*args, ledger=self.ledger)  # type: ignore[arg-type]

    def schedule(self, func_path: str, *args: object, at: float, job_id: str) -> None:
        assert func_path == "workers.jobs.time_out"
        self.timers.append((at, job_id, args))


def make(seconds: int = 5, seats: int = 4, bots: tuple = (), scoring: str = "pool",
         bot: str = "heuristic", first_dealer: int = 0,
         **options) -> tuple[Ledger, str, Scheduler, Clock]:
    counter = itertools.count()
    d, clock = Scheduler(), Clock()
    led = Ledger(MemoryStore(), d, seeds=lambda: next(counter).to_bytes(32, "big"), clock=clock)
    d.ledger = led
    names = tuple((f"P{i}", bot if i in bots else None) for i in range(seats))
    table_id, _tokens, _p = led.create_table(c.CreateTable(
        variant="loo", scoring=scoring, seats=names, first_dealer=first_dealer, deal="shuffled",
        options={"turn_seconds": seconds, **options}))
    return led, table_id, d, clock


def test_a_timer_is_scheduled_for_the_seat_to_act_at_its_version():
    led, table_id, d, _clock = make()
    p = led.load(table_id)
    at, job_id, args = d.timers[-1]
    assert job_id == f"timeout:{table_id}:{p.version}" and args == (table_id, p.version)
    assert at == pytest.approx(led.turn_started(table_id, p) + 5)
    assert abs(at - (time.time() + 5)) < 2


def test_the_timer_acts_after_turn_seconds_and_only_then():
    led, table_id, d, clock = make()
    p = led.load(table_id)
    seat = p.table.hand.turn
    assert jobs.time_out(table_id, p.version, ledger=led) == "early"  # not due yet
    assert led.load(table_id).version == p.version
    clock.offset = 5.0
    assert jobs.time_out(table_id, p.version, ledger=led) == "acted"
    stored = led.store.load(table_id, after_version=p.version)
    assert stored[0].type == "turn_timed_out" and stored[0].data == {"seat": seat, "seconds": 5}
    assert stored[0].causation == f"timer:{seat}" and stored[0].hand == 1
    assert stored[1].type == "player_decided"
    assert stored[1].data["seat"] == seat and stored[1].data["choice"] == "drop"  # §4: 4 seats
    # never twice: the same job again finds another version
    assert jobs.time_out(table_id, p.version, ledger=led) == "stale"
    assert len([s for s in led.store.load(table_id) if s.type == "turn_timed_out"]) == 1
    # the next seat is on the clock now, from the new version
    after = led.load(table_id)
    assert d.timers[-1][1] == f"timeout:{table_id}:{after.version}"
    assert audit(led.store.load(table_id))["ok"]


def test_a_move_made_first_wins_and_the_timer_does_nothing():
    led, table_id, _d, clock = make()
    p = led.load(table_id)
    seat = p.table.hand.turn
    led.execute(table_id, c.Act(Decide(seat, "play")), expected_version=p.version)
    clock.offset = 60.0
    assert jobs.time_out(table_id, p.version, ledger=led) == "stale"
    assert not [s for s in led.store.load(table_id) if s.type == "turn_timed_out"]


def race(led: Ledger, table_id: str, action: object) -> dict[str, object]:
    """A move and the timer job for the same version, released at once."""
    p = led.load(table_id)
    start = threading.Barrier(2)
    results: dict[str, object] = {}

    def move() -> None:
        start.wait()
        try:
            led.execute(table_id, c.Act(action), expected_version=p.version)  # type: ignore[arg-type]
            results["move"] = "won"
        except VersionConflict:
            results["move"] = "lost"

    def timer() -> None:
        start.wait()
        results["timer"] = jobs.time_out(table_id, p.version, ledger=led)

    threads = [threading.Thread(target=move), threading.Thread(target=timer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    return results


def test_race_between_a_move_and_the_timer_exactly_one_wins():
    outcomes = set()
    for _round in range(10):
        led, table_id, _d, clock = make()
        clock.offset = 5.0
        p = led.load(table_id)
        seat = p.table.hand.turn
        results = race(led, table_id, Decide(seat, "play"))
        assert (results["move"], results["timer"]) in {("won", "stale"), ("lost", "acted")}
        outcomes.add(results["timer"])
        stored = led.store.load(table_id, after_version=p.version)
        decided = [s for s in stored if s.type == "player_decided" and s.data["seat"] == seat]
        timed = [s for s in stored if s.type == "turn_timed_out"]
        assert len(decided) == 1
        assert len(timed) == (1 if results["timer"] == "acted" else 0)


def test_no_timer_for_a_bot_nor_without_the_option():
    led, table_id, d, _clock = make(bots=(1, 2, 3))
    p = led.load(table_id)
    assert p.table.hand.turn == 0  # the bots decided in-process; the person deals
    assert d.timers and d.timers[-1][1] == f"timeout:{table_id}:{p.version}"
    counter = itertools.count()
    d2 = Scheduler()
    led2 = Ledger(MemoryStore(), d2, seeds=lambda: next(counter).to_bytes(32, "big"))
    d2.ledger = led2
    led2.create_table(c.CreateTable(variant="loo", scoring="pool",
                                    seats=(("A", None), ("B", None)), first_dealer=0,
                                    deal="shuffled", options={}))
    assert d2.timers == []


def test_timed_out_actions_drop_else_lowest_play_and_discard_the_lowest_tiles():
    led, table_id, _d, clock = make(seats=3, seconds=30)
    p = led.load(table_id)
    first = p.table.hand.turn
    led.execute(table_id, c.Act(Decide(first, "miss")), expected_version=p.version)
    p = led.load(table_id)
    assert p.table.hand.phase == "discarding"
    held = p.table.hand.hands[first]
    clock.offset = 30.0
    assert jobs.time_out(table_id, p.version, ledger=led) == "acted"
    discarded = [s for s in led.store.load(table_id, after_version=p.version)
                 if s.type == "tiles_discarded"]
    lowest = sorted(held, key=SORT_KEY.__getitem__)[:1]
    from ledger.core.rules.tiles import NAMES
    assert discarded[0].data["tiles"] == [NAMES[t] for t in lowest]


def test_timeout_action_rules():
    from ledger.core.rules.options import make_options
    from tests.unit.rules_support import Game

    g = Game(players=2, deal="shuffled")
    g.shuffled(bytes(32))
    legal = legal_actions(g.h, g.h.turn)
    assert not make_options("loo", "pool", 2, {}).drop_allowed
    assert timeout_action(legal) == Decide(g.h.turn, "play")  # no drop with 2: stand
    plays = [Play(0, 5, 1), Play(0, 3, 0), Play(0, 3, 3), Play(0, 20)]
    assert timeout_action(plays) == Play(0, 3, 0)  # the lowest tile, first listed suit
    discards = [Discard(0, (27, 20)), Discard(0, (20, 3)), Discard(0, (27, 3))]
    assert timeout_action(discards) == Discard(0, (20, 3))


def test_timer_thread_runs_jobs_when_due_once_each_in_order():
    ran: list[str] = []
    done = threading.Event()

    def run(path, args, job_id):
        ran.append(job_id)
        if len(ran) == 3:
            done.set()

    timers = Timers(run)
    now = time.time()
    timers.add(now + 0.2, "b", "x", ())
    timers.add(now + 0.1, "a", "x", ())
    timers.add(now + 0.1, "a", "x", ())  # the same id once
    timers.add(now - 1, "first", "x", ())
    assert done.wait(5)
    assert ran == ["first", "a", "b"] and timers.pending() == []
    timers.stop()


def test_a_hand_with_timeouts_audits_exports_and_verifies_offline():
    import json

    from ledger.app.history import table_history
    from ledger.app.verify import verify_document

    led, table_id, _d, clock = make(seconds=10, auto_deal=False)
    led.execute(table_id, c.StartHand())
    timed = 0
    while (p := led.load(table_id)).table.live:
        clock.offset += 10
        assert jobs.time_out(table_id, p.version, ledger=led) == "acted"
        timed += 1
    p = led.load(table_id)
    assert p.table.settled and timed >= 2
    stored = led.store.load(table_id)
    assert len([s for s in stored if s.type == "turn_timed_out"]) == timed
    assert audit(stored)["ok"]
    docs = list(table_history(table_id, lambda a, b: led.store.load_raw(table_id, a, b),
                              led.store.version(table_id), led.checkpoints(table_id)))
    assert len(docs) == 1
    assert any(e["type"] == "turn_timed_out" for e in docs[0]["events"])
    verify_document(json.loads(json.dumps(docs[0])), led.signer.private.public_key())


def test_a_timer_run_slightly_early_waits_for_its_time_rather_than_rescheduling():
    # With rq the scheduler (one worker's clock) and the job (another worker's) may disagree
    # by a fraction of a second. Rescheduled under `timeout:<t>:<v>:again`, an early run
    # that found itself early again would schedule its own, still running, id: a no-op, and
    # the timer was lost until a reconciler pass (60 s). A run less than TIMER_WAIT early
    # waits for its time in the job instead, and acts, unless a move comes first.
    led, table_id, d, clock = make()
    p = led.load(table_id)
    due = led.timer_due(table_id, p)[1]
    clock.offset = due - time.time() - 0.4  # the job's clock: 0.4 s before the deadline
    scheduled = len(d.timers)
    started = time.monotonic()
    assert jobs.time_out(table_id, p.version, ledger=led) == "acted"
    assert 0.2 < time.monotonic() - started < 3
    stored = led.store.load(table_id, after_version=p.version)
    assert stored[0].type == "turn_timed_out"
    assert not [jid for _at, jid, _a in d.timers[scheduled:] if jid.endswith(":again")]

    # a move made while the early run waits wins; the timer then finds a stale version
    p = led.load(table_id)
    due = led.timer_due(table_id, p)[1]
    clock.offset = due - time.time() - 0.5
    got: list[str] = []
    th = threading.Thread(target=lambda: got.append(jobs.time_out(table_id, p.version,
                                                                   ledger=led)))
    th.start()
    led.execute(table_id, c.Act(Decide(p.table.hand.turn, "play")), expected_version=p.version)
    th.join(10)
    assert got == ["stale"]
    assert len([s for s in led.store.load(table_id) if s.type == "turn_timed_out"]) == 1
