"""The command path with the memory store: causation, replay == live, views, idempotency."""

from __future__ import annotations

import itertools

import pytest

from ledger.app.audit import audit
from ledger.app.projector import project
from ledger.app.service import Ledger
from ledger.app.views import Viewer, live_hand, redact, table_view
from ledger.core import commands as c
from ledger.core.errors import RuleViolation
from ledger.core.rules.actions import Play
from ledger.core.rules.legal import legal_actions
from ledger.store.base import AlreadyApplied, IdempotencyConflict, VersionConflict
from ledger.store.memory import MemoryStore


class Inline:
    """Runs the follow-up job in-process, as the embedded default does."""

    mode = "inline"

    def __init__(self) -> None:
        self.ledger: Ledger | None = None
        self.jobs: list[str] = []

    def enqueue(self, func_path: str, *args: object, job_id: str) -> None:
        from workers.jobs import advance

        self.jobs.append(job_id)
        advance(*args, ledger=self.ledger)  # type: ignore[arg-type]


class JobPath(Inline):
    """Runs each follow-up job the moment it is enqueued, as an append of its own after the
    command's (the job path, as an RQ worker with no delay would)."""

    mode = "queued"


def make_ledger(dispatcher: type[Inline] = Inline) -> Ledger:
    counter = itertools.count()
    d = dispatcher()
    led = Ledger(MemoryStore(), d, seeds=lambda: next(counter).to_bytes(32, "big"))
    d.ledger = led
    return led


MANUAL = {"auto_deal": False}  # the test starts each hand itself


def bots(n: int, person: bool = False) -> tuple[tuple[str, str | None], ...]:
    seats = tuple((f"bot{i}", "heuristic") for i in range(n))
    return ((("Ann", None),) + seats[1:]) if person else seats


def test_all_bot_table_plays_its_first_hand_and_settles():
    led = make_ledger()
    tid, _tokens, _ = led.create_table(c.CreateTable("loo", "pool", bots(4), 0, "shuffled", MANUAL))
    p = led.execute(tid, c.StartHand()).projection
    p = led.load(tid)
    t = p.table
    assert t.hand is not None and t.hand.phase == "complete" and t.settled
    assert t.hand.number == 1 and t.status == "playing"  # no auto_deal: the scorer deals next
    assert sum(t.balances) + t.pool == 0
    result = audit(led.store.load(tid), p)
    assert result["ok"], result


@pytest.mark.parametrize("max_hands", [1, 3])
def test_all_bot_pool_table_with_auto_deal_plays_to_max_hands_and_closes_itself(max_hands):
    """API.md, Tables: auto_deal means the same whoever sits; max_hands closes the table."""
    led = make_ledger()
    tid, _, p = led.create_table(c.CreateTable("loo", "pool", bots(4), 0, "shuffled",
                                               {"max_hands": max_hands}))
    t = p.table
    assert t.status == "closed" and t.hand is not None and t.hand.number == max_hands
    stored = led.store.load(tid)
    closed = [e for e in stored if e.type == "table_closed"]
    assert len(closed) == 1 and closed[0].data["reason"] == "max_hands"
    assert closed[0].data["abandoned_hand"] is None
    assert sum(t.balances) + t.pool == 0 and audit(stored, p)["ok"]


def test_all_bot_pool_table_without_max_hands_stops_after_100_hands():
    led = make_ledger()
    tid, _, p = led.create_table(c.CreateTable("loo", "pool", bots(3), 0, "shuffled"))
    assert p.table.opts.max_hands == 100
    assert p.table.status == "closed" and p.table.hand.number == 100
    assert audit(led.store.load(tid), p)["ok"]


@pytest.mark.parametrize("variant", ["loo", "rounce"])
def test_all_bot_points_game_with_auto_deal_plays_to_the_target(variant):
    """§9: the game ends after the hand in which somebody reaches the target (or zero)."""
    led = make_ledger()
    tid, _, p = led.create_table(c.CreateTable(variant, "points", bots(2), 0, "shuffled",
                                               {"target": 5}))
    t = p.table
    assert t.status == "finished" and t.winner is not None and t.opts.max_hands is None
    assert audit(led.store.load(tid), p)["ok"]


def test_max_hands_closes_a_table_with_people_too():
    led = make_ledger()
    tid, _, p = led.create_table(c.CreateTable("loo", "pool", bots(4, person=True), 1,
                                               "shuffled", {"max_hands": 1}))
    while p.table.status == "playing":
        h = p.table.hand
        p = led.execute(tid, c.Act(legal_actions(h, h.turn)[0])).projection
        p = led.load(tid)
    assert p.table.status == "closed" and p.table.hand.number == 1


def test_replay_from_scratch_equals_live_state():
    led = make_ledger()
    tid, _, _ = led.create_table(c.CreateTable("loo", "pool", bots(3), "lots", "shuffled", MANUAL))
    for _ in range(3):
        led.execute(tid, c.StartHand())
    live = led.load(tid)
    assert project(led.store.load(tid)) == live


def test_causation_links_tricks_to_plays_and_penalties_to_the_loo():
    led = make_ledger()
    tid, _, _ = led.create_table(c.CreateTable("loo", "pool", bots(4), 0, "shuffled", MANUAL))
    for _ in range(4):
        led.execute(tid, c.StartHand())
    stored = led.store.load(tid)
    by_version = {s.version: s for s in stored}
    for s in stored:
        if s.type == "trick_won":
            assert by_version[int(s.causation.split(":")[1])].type == "tile_played"
        if s.type == "penalty_assessed":
            assert by_version[int(s.causation.split(":")[1])].type == "player_looed"
        if s.type in ("tricks_paid", "hand_settled", "player_looed"):
            assert by_version[int(s.causation.split(":")[1])].type == "hand_completed"
        if s.type == "tile_played":
            assert s.causation.startswith("bot:heuristic@")


def test_seat_view_never_shows_other_hands_while_live():
    led = make_ledger()
    tid, _, p = led.create_table(c.CreateTable("loo", "pool", bots(4, person=True), 1,
                                               "shuffled"))
    assert p.table.live
    view = table_view(tid, p, Viewer(admin=False, seat=0))
    for seat, held in view["hand"]["hands"].items():
        assert isinstance(held, list) == (seat == "0")
    assert "boneyard" not in view["hand"]
    for s in led.store.load(tid):
        data = redact(s, Viewer(admin=False, seat=0), live_hand(p))["data"]
        if s.type == "tiles_dealt":
            assert data["boneyard"] == {"count": len(s.data["boneyard"])}
            assert "seed" not in data
            assert all(isinstance(v, dict) for k, v in data["hands"].items() if k != "0")


def test_stale_expected_version_is_refused_and_appends_nothing():
    led = make_ledger()
    tid, _, p = led.create_table(c.CreateTable("loo", "pool", bots(4, person=True), 1,
                                               "shuffled"))
    before = led.store.version(tid)
    with pytest.raises(VersionConflict):
        led.execute(tid, c.StartHand(), expected_version=before - 1)
    assert led.store.version(tid) == before


def test_idempotency_key_applies_once():
    led = make_ledger()
    tid, _, p = led.create_table(c.CreateTable("loo", "pool", bots(4, person=True), 0,
                                               "shuffled"))
    # Seat 0 is the dealer: the three bots decided; find a legal decision for seat 0.
    from ledger.core.rules.legal import legal_actions

    hand = led.load(tid).table.hand
    action = legal_actions(hand, 0)[0]
    led.execute(tid, c.Act(action), idempotency_key="k1", request_hash="h")
    version = led.store.version(tid)
    with pytest.raises(AlreadyApplied):
        led.execute(tid, c.Act(action), idempotency_key="k1", request_hash="h")
    with pytest.raises((IdempotencyConflict, RuleViolation)):
        led.execute(tid, c.Act(action), idempotency_key="k1", request_hash="other")
    assert led.store.version(tid) == version


def test_illegal_play_is_a_rule_violation_and_changes_nothing():
    led = make_ledger()
    tid, _, p = led.create_table(c.CreateTable("loo", "pool", bots(4, person=True), 3,
                                               "shuffled"))
    before = led.store.version(tid)
    with pytest.raises(RuleViolation) as err:
        led.execute(tid, c.Act(Play(0, 0)))
    assert err.value.code in ("wrong_phase", "not_your_turn", "tile_not_in_hand")
    assert led.store.version(tid) == before


# ---- in-process jobs: follow-ups in the command's own append -----------------------------

def _inline_ledger(seed_base: int = 0) -> Ledger:
    """The embedded default: InlineDispatcher, whose jobs the ledger folds into the append."""
    from workers.queue import InlineDispatcher

    counter = itertools.count(seed_base)
    d = InlineDispatcher()
    led = Ledger(MemoryStore(), d, seeds=lambda: next(counter).to_bytes(32, "big"))
    d.bind(ledger=led)
    return led


def _play(led: Ledger, seats: tuple[tuple[str, str | None], ...], hands: int) -> tuple[str, int]:
    """Play `hands` hands taking each person's first legal action; returns (table, appends)."""
    from ledger.core.rules.legal import legal_actions

    appends = 0
    real_append = led.store.append

    def counting(*args, **kwargs):
        nonlocal appends
        appends += 1
        return real_append(*args, **kwargs)

    led.store.append = counting  # type: ignore[method-assign]
    tid, _, _ = led.create_table(c.CreateTable("loo", "pool", seats, 0, "shuffled"))
    p = led.load(tid)  # with the jobs' moves
    while p.table.hand is None or p.table.hand.number <= hands:
        h = p.table.hand
        assert h is not None and h.turn is not None and p.table.bots[h.turn] is None
        led.execute(tid, c.Act(legal_actions(h, h.turn)[0]), expected_version=p.version)
        p = led.load(tid)  # with the jobs' moves
    return tid, appends


def _normalised(led: Ledger, tid: str) -> list[tuple]:
    """The event log without what differs between two runs: times, hashes, command ids,
    the hashes of the (random) tokens."""
    names: dict[str, str] = {}
    out = []
    for s in led.store.load(tid):
        cause = s.causation or ""
        if cause.startswith("command:"):
            cause = names.setdefault(cause, f"command:{len(names)}")
        data = {k: v for k, v in s.data.items() if s.type != "table_created" or k != "tokens"}
        out.append((s.version, s.type, s.hand, data, cause))
    return out


@pytest.mark.parametrize("seats", [
    tuple((n, None) for n in ("Ann", "Bob", "Cat", "Dan")),
    (("Ann", None), ("bot1", "heuristic"), ("bot2", "heuristic")),
], ids=["people", "person-and-bots"])
def test_in_process_follow_ups_join_the_commands_append_with_the_jobs_events(seats):
    # The job path (settle, deal, bots as appends of their own after the commit) and the
    # embedded default (decided before it, one append) write the same log, event for event.
    job_path, batched = make_ledger(JobPath), _inline_ledger()
    tid_jobs, appends_jobs = _play(job_path, seats, hands=3)
    tid, appends = _play(batched, seats, hands=3)
    assert _normalised(batched, tid) == _normalised(job_path, tid_jobs)
    assert appends < appends_jobs
    live = batched.load(tid)
    assert project(batched.store.load(tid)) == live
    assert audit(batched.store.load(tid), live)["ok"]


def test_in_process_settlement_and_next_deal_commit_with_the_last_play():
    led = _inline_ledger()
    seats = tuple((n, None) for n in ("Ann", "Bob", "Cat", "Dan"))
    tid, appends = _play(led, seats, hands=2)
    # One append to create the table (and deal hand 1), then exactly one per action.
    actions = sum(1 for s in led.store.load(tid)
                  if s.causation and s.causation.startswith("command:")
                  and s.type in ("player_decided", "tiles_discarded", "tile_played"))
    assert appends == 1 + actions
    p = led.load(tid)
    assert p.table.hand is not None and p.table.hand.number == 3 and not p.table.hand.tricks


def test_a_failing_follow_up_leaves_the_command_standing(monkeypatch):
    led = _inline_ledger()
    seats = tuple((n, None) for n in ("Ann", "Bob", "Cat", "Dan"))
    tid, _ = _play(led, seats, hands=1)  # now at hand 2, dealt in the batch of the last play

    def broken(p, seeds):
        raise RuntimeError("settlement bug")

    monkeypatch.setattr("ledger.app.handlers.settle", broken)
    from ledger.core.rules.legal import legal_actions

    p = led.load(tid)
    h = p.table.hand
    while h is not None and h.number == 2 and h.phase != "complete":
        p = led.execute(tid, c.Act(legal_actions(h, h.turn)[0])).projection
        h = p.table.hand
    assert p.table.hand is not None and p.table.hand.phase == "complete"
    assert not p.table.settled  # the action committed; the settlement waits for a job


@pytest.mark.parametrize(("variant", "scoring", "players"), [
    ("loo", "pool", 2), ("loo", "pool", 4), ("loo", "points", 3), ("rounce", "points", 4),
])
def test_the_state_kept_after_a_write_is_the_state_its_stored_events_replay_to(
        variant, scoring, players):
    # The ledger keeps the table folded from the events it appended, not read back.
    led = _inline_ledger()
    tid, _, _ = led.create_table(c.CreateTable(variant, scoring, bots(players), 0, "shuffled",
                                               MANUAL))
    for _ in range(4):
        if led.load(tid).table.status != "playing":
            break
        led.execute(tid, c.StartHand())
    assert led.cached(tid) == project(led.store.load(tid))


class Queued:
    """A queue that keeps the jobs (as RQ would) for the test to run by hand."""

    def __init__(self) -> None:
        self.jobs: list[tuple] = []

    mode = "queued"

    def enqueue(self, func_path: str, *args: object, job_id: str) -> None:
        self.jobs.append(args)


def test_a_job_appends_all_its_moves_in_one_transaction():
    # Settlement, the next deal and every bot turn up to a person's: one append, so a job
    # killed or beaten by another writer leaves all of its moves or none.
    counter = itertools.count()
    led = Ledger(MemoryStore(), Queued(), seeds=lambda: next(counter).to_bytes(32, "big"))
    appends: list[int] = []
    real = led.store.append

    def counting(table_id, events, expected_version, **kwargs):
        appends.append(len(events))
        return real(table_id, events, expected_version, **kwargs)

    led.store.append = counting  # type: ignore[method-assign]
    tid, _, p = led.create_table(c.CreateTable("loo", "pool", bots(4, person=True), 1,
                                               "shuffled"))
    assert handlers_next(p) and led.dispatcher.jobs == [(tid, p.version)]
    appends.clear()
    assert led.advance(tid, p.version) == "idle"  # the bots played up to Ann's turn
    after = led.load(tid)
    assert len(appends) == 1 and appends[0] == after.version - p.version > 1
    h = after.table.hand
    assert h is not None and h.turn == 0 and after.table.bots[0] is None
    assert led.advance(tid, p.version) == "stale"  # a second run of the same job: no-op
    assert len(appends) == 1
    assert project(led.store.load(tid)) == led.load(tid)
    assert audit(led.store.load(tid), after)["ok"]


def handlers_next(p) -> bool:
    from ledger.app import handlers

    return handlers.next_command(p) is not None


def test_a_heuristic_bot_move_seeds_no_random_generator(monkeypatch):
    # Seeding random.Random from a string per move was a twentieth of a bot job's CPU; the
    # heuristic never draws, so it plays without one (and the same moves: test_rules_bots).
    import ledger.app.handlers as h

    led = make_ledger()
    table_id, _tokens, _p = led.create_table(c.CreateTable("loo", "pool", bots(4), 0,
                                                           "shuffled", MANUAL))

    class Refused:
        def __init__(self, *_a: object) -> None:
            raise AssertionError("a heuristic bot seeded a random.Random")

    monkeypatch.setattr(h.random, "Random", Refused)
    out = led.execute(table_id, c.StartHand())
    assert out.projection.table.settled
