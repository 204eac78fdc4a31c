"""The event ending a settled hand carries its checkpoint in the feeds (API.md Checkpoints),
even when a reader meets it before a checkpoint is saved (a writer now saves it in the
append's transaction; one of an earlier release saved it after its commit): the reader gets
the very checkpoint the writer saves (a checkpoint's `at` is its head's recorded_at, and
Ed25519 is deterministic), without waiting for it; an old head without one is never signed
by a reader."""

from __future__ import annotations

import time
from typing import Any

import pytest

from ledger.app import feed
from ledger.app.checkpoints import public_key, verify
from ledger.app.views import Viewer
from ledger.core import commands as c
from tests.unit.test_service import MANUAL, bots, make_ledger


def _settled_before_its_checkpoint() -> tuple[Any, str, list[Any], list[Any]]:
    """A ledger whose table's first hand is settled, its writer's checkpoint not saved yet
    (held back, as a writer of an earlier release did until after its commit; the last item
    is what it saves)."""
    led = make_ledger()
    held: list[Any] = []
    made = led.new_checkpoints
    led.new_checkpoints = lambda tid, new: held.append(made(tid, new))  # type: ignore[method-assign]
    tid, _tokens, _ = led.create_table(c.CreateTable("loo", "pool", bots(4), 0, "shuffled",
                                                     MANUAL))
    led.execute(tid, c.StartHand())
    del led.new_checkpoints
    stored = led.store.load(tid)
    assert stored[-1].type == "hand_settled" and led.checkpoints(tid) == []
    assert held[-1] is not None and held[-1].indexes
    head = stored[-1]
    return led, tid, stored, [(tid, head.version, held[-1].data(head))]


def test_a_fresh_settled_head_gets_the_checkpoint_its_writer_is_saving() -> None:
    led, tid, stored, held = _settled_before_its_checkpoint()
    out = feed.table_events(led, tid, stored, Viewer(admin=True))
    cp = out[-1]["checkpoint"]
    assert (cp["table"], cp["version"], cp["hash"], cp["at"]) == (
        tid, stored[-1].version, stored[-1].hash, stored[-1].recorded_at)
    assert verify(cp, public_key(led.signer.public()["public_key"])) is None
    assert all("checkpoint" not in e for e in out[:-1])
    assert led.checkpoints(tid) == []  # a reader saves nothing
    led.store.save_checkpoint(*held[-1])  # the writer's save comes: the same checkpoint
    assert led.checkpoints(tid) == [cp]
    assert feed.table_events(led, tid, stored, Viewer(admin=True))[-1]["checkpoint"] == cp


def test_an_old_settled_head_without_its_checkpoint_is_never_signed_by_a_reader(
        monkeypatch: pytest.MonkeyPatch) -> None:
    led, tid, stored, _held = _settled_before_its_checkpoint()
    later = time.time() + feed.CHECKPOINT_FRESH + 1
    monkeypatch.setattr(feed.time, "time", lambda: later)
    out = feed.table_events(led, tid, stored, Viewer(admin=True))
    assert "checkpoint" not in out[-1] and led.checkpoints(tid) == []
