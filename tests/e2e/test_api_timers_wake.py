"""Turn timers wake (API.md "Bots, hints and turn timers"; README "Turn timers"): at a table
whose timers rest (`timers_idle`), the first move by a person or by the admin for a seat, or
the admin starting a hand, wakes them, with `auto_deal` as without, at a plain table (its
admin token) and at a club table (the club's scorer token), on SQLite and PostgreSQL with the
embedded default's in-process jobs. tests/integration/test_timers_rq.py runs the same paths
through RQ.

Time is driven by the ledger's clock and the timer job is called with the version it was
scheduled for (turn_seconds 600): nothing waits for real."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from ledger.app.service import Ledger
from tests.e2e.club import Club, Table
from tests.e2e.test_api_clubs import League
from workers import jobs

SEATS = [{"name": "Ann", "bot": "heuristic"}, {"name": "Bob"},
         {"name": "Cat", "bot": "heuristic"}, {"name": "Dan", "bot": "heuristic"}]
BOB = 1  # the one person: the timers act for him
DESKS = ["table admin", "club scorer"]  # whose token acts as the table's admin


@dataclass
class Rig:
    """The API, the ledger whose clock the test drives, and how its follow-up jobs run."""

    club: Club
    led: Ledger
    settle: Callable[[], None]  # runs pending follow-up jobs (in-process: already run)
    timer_scheduled: Callable[[Table, int], bool]  # the timer job of that version exists


def _table(rig: Rig, desk: str, scoring: str = "pool", first_dealer: int = 0,
           **options: Any) -> tuple[Table, str]:
    """A timed table (Bob the only person) and the token that acts as its admin."""
    body = {"seats": SEATS, "first_dealer": first_dealer, "scoring": scoring,
            "options": {"turn_seconds": 600, **options}}
    if desk == "table admin":
        t = rig.club.create(**body)
        return t, t.admin
    league = League(rig.club)
    return league.table([], **body), league.scorer


def _view(rig: Rig, t: Table) -> dict[str, Any]:
    rig.settle()
    return rig.club.view(t)


def _rest(rig: Rig, t: Table) -> dict[str, Any]:
    """Let Bob's every turn time out until the table's timers rest; its view then."""
    rig.led.clock = lambda: time.time() + 3600
    for _ in range(40):
        v = _view(rig, t)
        if v["timers_idle"]:
            assert not rig.timer_scheduled(t, v["version"])
            assert jobs.time_out(t.id, v["version"], ledger=rig.led) == "idle"
            return v
        assert v["hand"]["turn"] == BOB, v["hand"]
        assert jobs.time_out(t.id, v["version"], ledger=rig.led) == "acted"
    raise AssertionError("the timers never came to rest")


def _awake(rig: Rig, t: Table) -> None:
    """The timers act again: the view says so and Bob's turn is on the clock."""
    v = _view(rig, t)
    assert v["timers_idle"] is False
    assert v["status"] == "playing" and v["hand"]["turn"] == BOB, v["hand"]
    assert rig.timer_scheduled(t, v["version"])
    assert jobs.time_out(t.id, v["version"], ledger=rig.led) == "acted"


def _ok(r: Any) -> None:
    assert r.status_code == 200, r.get_json()


def wake_at_the_persons_move(rig: Rig, desk: str) -> None:
    t, _admin = _table(rig, desk)
    v = _rest(rig, t)
    assert v["hand"]["number"] >= 2 and v["hand"]["turn"] == BOB  # auto_deal dealt on
    move = rig.club.view(t, t.seats[BOB])["legal_actions"][0]
    rig.club.ok(t, {**move, "expected_version": v["version"]}, t.seats[BOB])
    _awake(rig, t)


def wake_at_the_admins_move_for_the_seat(rig: Rig, desk: str) -> None:
    t, admin = _table(rig, desk)
    v = _rest(rig, t)
    move = v["legal_actions"][0]
    assert move["seat"] == BOB
    _ok(rig.club.act(t, {**move, "expected_version": v["version"]}, admin))
    _awake(rig, t)


def wake_when_the_admin_starts_a_hand(rig: Rig, desk: str) -> None:
    t, admin = _table(rig, desk, auto_deal=False)
    _ok(rig.club.post(t, "/hands", {}, admin))
    v = _rest(rig, t)
    assert v["hand"]["number"] == 1 and v["hand"]["phase"] == "complete"
    _ok(rig.club.post(t, "/hands", {}, admin))
    _awake(rig, t)


def wake_when_the_admin_starts_a_hand_after_a_void_with_auto_deal(rig: Rig, desk: str) -> None:
    # With auto_deal the admin deals only after a void: a points game the timers' hand won
    # (target 1: hand 1 wins it), un-won by voiding that hand.
    t, admin = _table(rig, desk, scoring="points", target=1)
    v = _rest(rig, t)
    assert v["status"] == "finished" and v["hand"]["number"] == 1
    _ok(rig.club.post(t, "/hands/1/void", {"reason": "nobody was there"}, admin))
    _ok(rig.club.post(t, "/hands", {}, admin))
    _awake(rig, t)


def wake_when_the_admin_starts_the_hand_auto_deal_dealt(rig: Rig, desk: str) -> None:
    # With auto_deal the next hand is dealt already (hand 1 dealt by Dan: hand 2's first to
    # decide is Bob, nobody has acted in it). The admin's start names that hand and deals
    # nothing (tests/e2e/test_api_hands_dealt.py); at resting timers it wakes them as a deal
    # does, and records it: timers_woken, from which Bob's turn_seconds count.
    t, admin = _table(rig, desk, first_dealer=3)
    v = _rest(rig, t)
    assert v["hand"]["number"] == 2 and v["hand"]["phase"] == "deciding", v["hand"]
    r = rig.club.post(t, "/hands", {"expected_version": v["version"]}, admin)
    _ok(r)
    j = r.get_json()
    assert [e["type"] for e in j["events"]] == ["timers_woken"]
    assert j["version"] == v["version"] + 1 and j["table"]["hand"]["number"] == 2
    _awake(rig, t)


WAKES = [wake_at_the_persons_move, wake_at_the_admins_move_for_the_seat,
         wake_when_the_admin_starts_a_hand,
         wake_when_the_admin_starts_a_hand_after_a_void_with_auto_deal,
         wake_when_the_admin_starts_the_hand_auto_deal_dealt]


@pytest.mark.parametrize("desk", DESKS)
@pytest.mark.parametrize("wake", WAKES, ids=lambda f: f.__name__)
def test_turn_timers_resting_wake_at_a_person_or_the_admin(app, club: Club, wake, desk: str):
    led = app.extensions["loo_ledger"]

    def scheduled(t: Table, version: int) -> bool:
        return f"timeout:{t.id}:{version}" in [jid for _at, jid in led.dispatcher.pending()]

    wake(Rig(club, led, lambda: None, scheduled), desk)
