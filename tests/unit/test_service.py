"""The command path with the memory store: causation, replay == live, views, idempotency."""

from __future__ import annotations

import itertools

import pytest

from ledger import commands as c
from ledger.audit import audit
from ledger.errors import RuleViolation
from ledger.projector import project
from ledger.rules.actions import Play
from ledger.service import Ledger
from ledger.store.base import AlreadyApplied, IdempotencyConflict, VersionConflict
from ledger.store.memory import MemoryStore
from ledger.views import Viewer, redact, table_view


class Inline:
    """Runs the follow-up job in-process, as the embedded default does."""

    def __init__(self) -> None:
        self.ledger: Ledger | None = None
        self.jobs: list[str] = []

    def enqueue(self, func_path: str, *args: object, job_id: str) -> None:
        from workers.jobs import advance

        self.jobs.append(job_id)
        advance(*args, ledger=self.ledger)  # type: ignore[arg-type]


def make_ledger() -> Ledger:
    counter = itertools.count()
    d = Inline()
    led = Ledger(MemoryStore(), d, seeds=lambda: next(counter).to_bytes(32, "big"))
    d.ledger = led
    return led


def bots(n: int, person: bool = False) -> tuple[tuple[str, str | None], ...]:
    seats = tuple((f"bot{i}", "heuristic") for i in range(n))
    return ((("Ann", None),) + seats[1:]) if person else seats


def test_all_bot_table_plays_its_first_hand_and_settles():
    led = make_ledger()
    tid, _tokens, p = led.create_table(c.CreateTable("loo", "pool", bots(4), 0, "shuffled"))
    t = p.table
    assert t.hand is not None and t.hand.phase == "complete" and t.settled
    assert sum(t.balances) + t.pool == 0
    result = audit(led.store.load(tid), p)
    assert result["ok"], result


def test_replay_from_scratch_equals_live_state():
    led = make_ledger()
    tid, _, _ = led.create_table(c.CreateTable("loo", "pool", bots(3), "lots", "shuffled"))
    for _ in range(3):
        led.execute(tid, c.StartHand())
    live = led.load(tid)
    assert project(led.store.load(tid)) == live


def test_causation_links_tricks_to_plays_and_penalties_to_the_loo():
    led = make_ledger()
    tid, _, _ = led.create_table(c.CreateTable("loo", "pool", bots(4), 0, "shuffled"))
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
        data = redact(s, Viewer(admin=False, seat=0), p.table.hand.number)["data"]
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
    from ledger.rules.legal import legal_actions

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
