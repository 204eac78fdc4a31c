"""API.md Audit: each check catches what it is there to catch, by the sentence it names the
first failure with. Most records here are rewritten by an insider who re-hashes the chain
(so hash_chain holds and the check itself must find the change); some are left unreadable
or with a broken chain. The audit decodes once and folds once for all its checks
(ledger/app/rerun.py): these pin what each check says, whichever way it is computed."""

from __future__ import annotations

import copy
import dataclasses
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from ledger.app.audit import audit
from ledger.app.projector import project
from ledger.app.service import Ledger
from ledger.core import commands as c
from ledger.core.rules.tiles import NAMES
from ledger.store.base import NewEvent, StoredEvent
from ledger.store.memory import MemoryStore


class Inline:
    mode = "inline"

    def __init__(self) -> None:
        self.ledger: Ledger | None = None

    def enqueue(self, func_path: str, *args: object, job_id: str) -> None:
        from workers.jobs import advance

        advance(*args, ledger=self.ledger)  # type: ignore[arg-type]


def _ledger() -> Ledger:
    counter = itertools.count()
    d = Inline()
    led = Ledger(MemoryStore(), d, seeds=lambda: next(counter).to_bytes(32, "big"))
    d.ledger = led
    return led


@pytest.fixture(scope="module")
def played() -> list[StoredEvent]:
    """Four bots, four hands of Loo for the pool (the third voided and entered again)."""
    led = _ledger()
    seats = tuple((f"bot{i}", "heuristic") for i in range(4))
    tid, _, _ = led.create_table(c.CreateTable("loo", "pool", seats, 0, "shuffled",
                                               {"auto_deal": False}))
    for n in range(4):
        led.execute(tid, c.StartHand())
        if n == 2:
            led.execute(tid, c.VoidHand(number=3, reason="entered twice"))
            led.execute(tid, c.StartHand())
    return led.store.load(tid)


RESULTS = ({"decisions": {"0": "play", "1": "play", "2": "drop", "3": "play"},
            "tricks": {"0": 3, "1": 2, "2": 0, "3": 0}},
           {"decisions": {"0": "play", "1": "miss", "2": "play", "3": "play"},
            "tricks": {"0": 0, "1": 1, "2": 1, "3": 3}})


@pytest.fixture(scope="module")
def results() -> list[StoredEvent]:
    led = _ledger()
    seats = tuple((f"P{i}", None) for i in range(4))
    tid, _, _ = led.create_table(c.CreateTable("loo", "pool", seats, 0, "results", {}))
    for n in range(3):
        led.execute(tid, c.StartHand(result=RESULTS[n % 2]))
    return led.store.load(tid)


Change = Callable[[int, StoredEvent], list[tuple[str, int | None, Any]] | None]


def rewrite(stored: list[StoredEvent], change: Change) -> list[StoredEvent]:
    """The record as an insider would write it again: each event as `change` gives it (a
    list of (type, hand, data); None drops it), every hash redone."""
    again = []
    for i, s in enumerate(stored):
        for type_, hand, data in change(i, s) or []:
            again.append(NewEvent(type_, hand, data, s.causation, s.recorded_at))
    store = MemoryStore()
    store.append(stored[0].table_id, again, 0)
    return store.load(stored[0].table_id)


def same(i: int, s: StoredEvent) -> list[tuple[str, int | None, Any]]:
    return [(s.type, s.hand, copy.deepcopy(s.data))]


def first(stored: list[StoredEvent], type_: str, after: int = 0) -> int:
    return next(i for i, s in enumerate(stored) if s.type == type_ and i >= after)


def checks(stored: list[StoredEvent], live: Any = None) -> dict[str, Any]:
    out = audit(stored, live)
    assert out["ok"] is (all(v is True for v in out["checks"].values()))
    return out["checks"]


def failing(stored: list[StoredEvent]) -> dict[str, Any]:
    return {k: v for k, v in checks(stored).items() if v is not True}


def test_audit_a_played_record_passes_every_check(played, results):
    for stored in (played, results):
        assert audit(stored, project(stored))["ok"] is True
        assert audit(rewrite(stored, same))["ok"] is True


def test_audit_hash_chain_names_the_first_row_edited_without_rehashing(played):
    k = first(played, "stake_posted")
    edited = list(played)
    edited[k] = dataclasses.replace(played[k], data=played[k].data | {"amount": 500})
    assert checks(edited)["hash_chain"] == (f"version {k + 1}: hash does not match its "
                                            "content (tampered)")


def test_audit_plays_legal_catches_a_play_of_a_tile_the_seat_does_not_hold(played):
    k = first(played, "tile_played")
    seat = played[k].data["seat"]
    dealt = played[first(played, "tiles_dealt")].data["hands"][str(seat)]
    other = next(n for n in NAMES if n not in dealt)

    def play_another(i: int, s: StoredEvent) -> Any:
        return [(s.type, s.hand, s.data | {"tile": other})] if i == k else same(i, s)

    got = failing(rewrite(played, play_another))
    assert got["plays_legal"] == f"version {k + 1}: illegal tile_played: you do not hold {other}"
    assert "hash_chain" not in got


def test_audit_plays_legal_catches_events_the_rules_would_not_write(played):
    k = first(played, "trick_won")

    def other_winner(i: int, s: StoredEvent) -> Any:
        if i != k:
            return same(i, s)
        return [(s.type, s.hand, s.data | {"seat": (s.data["seat"] + 1) % 4})]

    got = failing(rewrite(played, other_winner))
    play = max(i for i in range(k) if played[i].type == "tile_played")
    assert got["plays_legal"] == f"version {play + 1}: recorded events differ from the rules"


def test_audit_chips_conserved_catches_a_stake_the_rules_did_not_ask(played):
    k = first(played, "stake_posted")

    def dearer(i: int, s: StoredEvent) -> Any:
        return [(s.type, s.hand, s.data | {"amount": s.data["amount"] + 1})] if i == k \
            else same(i, s)

    got = failing(rewrite(played, dearer))
    settled = first(played, "hand_settled")
    pool = played[settled].data["pool"]
    assert got["chips_conserved"] == (f"version {settled + 1}: pool {pool} but transfers "
                                      f"give {pool + 1}")


def test_audit_chips_conserved_catches_a_stake_outside_the_stakes(played):
    """A chip staked in mid-hand, every later settlement's pool made to agree with it."""
    k = first(played, "tile_played")

    def extra_stake(i: int, s: StoredEvent) -> Any:
        if i == k:
            return [("stake_posted", s.hand, {"seat": 1, "amount": 1, "reason": "ante"})] \
                + same(i, s)
        if i > k and s.type == "hand_settled":
            return [(s.type, s.hand, s.data | {"pool": s.data["pool"] + 1})]
        return same(i, s)

    got = failing(rewrite(played, extra_stake))
    assert got["chips_conserved"] == (f"version {k + 1}: stake_posted outside the stakes or "
                                      "a settlement")


def test_audit_chips_conserved_catches_a_hand_dealt_by_the_wrong_seat(played):
    k = first(played, "hand_started", first(played, "hand_settled"))

    def other_dealer(i: int, s: StoredEvent) -> Any:
        if i != k:
            return same(i, s)
        return [(s.type, s.hand, s.data | {"dealer": (s.data["dealer"] + 2) % 4})]

    got = failing(rewrite(played, other_dealer))
    dealer = played[k].data["dealer"]
    assert got["chips_conserved"] == (
        f"version {k + 1}: hand 2 may not start here (the deal passes to seat {dealer}, "
        "after the last hand is settled)")


def test_audit_chips_conserved_catches_a_hand_started_without_its_stakes(played):
    """The last event of the record a hand_started: the stakes it needs never came."""
    k = first(played, "hand_started", first(played, "hand_settled"))
    cut = rewrite(played, lambda i, s: same(i, s) if i <= k else None)
    assert failing(cut) == {"chips_conserved": f"version {k + 1}: the stakes differ from §8.1"}


def test_audit_chips_conserved_catches_a_settlement_paid_otherwise(played):
    k = first(played, "tricks_paid")

    def paid_otherwise(i: int, s: StoredEvent) -> Any:
        if i != k:
            return same(i, s)
        pay = dict(s.data["payments"])
        a, b = (x for x in pay if pay[x] > 0) if sum(v > 0 for v in pay.values()) > 1 else (
            next(x for x in pay if pay[x] > 0), next(x for x in pay if pay[x] == 0))
        pay[a], pay[b] = pay[a] - 1, pay[b] + 1
        return [(s.type, s.hand, s.data | {"payments": pay})]

    got = failing(rewrite(played, paid_otherwise))
    assert got["chips_conserved"] == f"version {k + 1}: the settlement differs from §8"


def test_audit_chips_conserved_catches_a_void_that_gives_back_otherwise(played):
    """A void that gives a seat's chips back to another seat (the pool as it should be)."""
    k = first(played, "hand_voided")

    def void_otherwise(i: int, s: StoredEvent) -> Any:
        if i != k:
            return same(i, s)
        data = copy.deepcopy(s.data)
        x = next(x for x in data["transfers"] if x["to"] != "pool")
        x["to"] = "seat:3" if x["to"] != "seat:3" else "seat:2"
        return [(s.type, s.hand, data)]

    got = failing(rewrite(played, void_otherwise))
    assert got["chips_conserved"] == (f"version {k + 1}: the void does not reverse exactly "
                                      "what its hand moved")


def test_audit_deals_match_commitments_catches_a_seed_or_a_deal_changed(played):
    k = first(played, "seed_revealed")

    def other_seed(i: int, s: StoredEvent) -> Any:
        return [(s.type, s.hand, s.data | {"seed": "00" * 32})] if i == k else same(i, s)

    assert checks(rewrite(played, other_seed))["deals_match_commitments"] == (
        "hand 1: the revealed seed does not match its commitment")
    d = first(played, "tiles_dealt")

    def other_deal(i: int, s: StoredEvent) -> Any:
        if i != d:
            return same(i, s)
        data = copy.deepcopy(s.data)
        data["hands"]["0"][0], data["boneyard"][0] = data["boneyard"][0], data["hands"]["0"][0]
        return [(s.type, s.hand, data)]

    assert checks(rewrite(played, other_deal))["deals_match_commitments"] == (
        "hand 1: the seed does not re-deal the recorded deal")


def test_audit_replay_matches_compares_the_fold_with_the_live_state(played):
    assert checks(played, project(played))["replay_matches"] is True
    earlier = project(played[:-1])
    assert checks(played, earlier)["replay_matches"] == (
        f"replayed state at version {len(played)} differs from the live state")


def test_audit_an_unreadable_event_fails_the_checks_that_read_it(played):
    k = first(played, "tile_played")
    broken = list(played)
    broken[k] = dataclasses.replace(played[k], data={})
    got = failing(rewrite(broken, same))
    unreadable = f"version {k + 1}: 'tile_played' event cannot be read (KeyError: 'seat')"
    assert got == {"replay_matches": "replay failed: 'seat'",
                   "chips_conserved": "replay failed: 'seat'",
                   "plays_legal": unreadable}


def test_audit_a_record_the_fold_cannot_take_fails_replay_and_legality(played):
    """A play by a seat the table does not have: plays_legal names it, and the fold, which
    cannot take it, fails replay_matches and chips_conserved with what stopped it."""
    k = first(played, "tile_played")

    def seat_9(i: int, s: StoredEvent) -> Any:
        return [(s.type, s.hand, s.data | {"seat": 9})] if i == k else same(i, s)

    got = failing(rewrite(played, seat_9))
    assert got == {"replay_matches": "replay failed: tuple index out of range",
                   "chips_conserved": "replay failed: tuple index out of range",
                   "plays_legal": f"version {k + 1}: illegal tile_played: there is no seat 9 "
                                  "at this table"}


def test_audit_plays_legal_catches_an_impossible_or_a_changed_result(results):
    k = first(results, "hand_completed")

    def six_tricks(i: int, s: StoredEvent) -> Any:
        if i != k:
            return same(i, s)
        return [(s.type, s.hand, s.data | {"tricks_won": s.data["tricks_won"] | {"0": 4}})]

    start = first(results, "hand_started")
    got = failing(rewrite(results, six_tricks))
    assert got["plays_legal"] == (f"version {start + 1}: impossible result: tricks must add "
                                  "up to 5 (got 6)")

    def nobody_looed(i: int, s: StoredEvent) -> Any:
        return [(s.type, s.hand, s.data | {"looed": []})] if i == k else same(i, s)

    got = failing(rewrite(results, nobody_looed))
    assert got["plays_legal"] == f"version {start + 1}: results hand differs from the rules"
