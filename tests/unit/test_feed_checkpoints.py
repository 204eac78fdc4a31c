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


def test_corrections_a_void_and_a_close_carry_their_saved_checkpoint_in_the_feeds() -> None:
    """API.md Checkpoints: the hand_voided and table_closed carry the checkpoint saved with
    them (the one GET .../checkpoints lists), placed on the event it names (its position)."""
    led = make_ledger()
    tid, _tokens, _ = led.create_table(c.CreateTable("loo", "pool", bots(4), 0, "shuffled",
                                                     MANUAL))
    led.execute(tid, c.StartHand())
    led.execute(tid, c.VoidHand(number=1, reason="misdeal"))
    led.execute(tid, c.CloseTable())
    stored = led.store.load(tid)
    saved = {cp["version"]: cp for cp in led.checkpoints(tid)}
    key = public_key(led.signer.public()["public_key"])
    for viewer in (Viewer(admin=True), feed.SPECTATOR):
        out = feed.table_events(led, tid, stored, viewer)
        carried = {e["version"]: e["checkpoint"] for e in out if "checkpoint" in e}
        assert carried == saved
        for kind in ("hand_voided", "table_closed"):
            e = next(e for e in out if e["type"] == kind)
            cp = e["checkpoint"]
            assert (cp["version"], cp["hash"], cp["position"]) == (
                e["version"], stored[e["version"] - 1].hash, e["position"])
            assert verify(cp, key) is None


def test_an_older_releases_void_and_close_get_no_checkpoint_from_a_reader() -> None:
    """A void or close written before they were signed has none: a reader meeting it, however
    fresh, signs none (GET .../checkpoints and the audit would never see that one), and the
    table's audit passes as before."""
    from ledger.app.audit import audit
    from ledger.store.base import NewCheckpoints

    led = make_ledger()
    made = led.new_checkpoints

    def older(tid: str, new: Any) -> Any:  # an earlier release: settled hands only
        got = made(tid, new)
        keep = tuple(i for i in (got.indexes if got else ())
                     if new[i].type not in ("hand_voided", "table_closed"))
        return NewCheckpoints(keep, got.sign) if keep else None

    tid, _tokens, _ = led.create_table(c.CreateTable("loo", "pool", bots(4), 0, "shuffled",
                                                     MANUAL))
    led.execute(tid, c.StartHand())
    led.new_checkpoints = older  # type: ignore[method-assign]
    led.execute(tid, c.VoidHand(number=1, reason="misdeal"))
    led.execute(tid, c.CloseTable())
    del led.new_checkpoints
    stored = led.store.load(tid)
    assert [s.type for s in stored[-2:]] == ["hand_voided", "table_closed"]
    assert len(led.checkpoints(tid)) == 1  # the settled hand's
    out = feed.table_events(led, tid, stored, Viewer(admin=True))
    assert [e["type"] for e in out if "checkpoint" in e] == ["hand_settled"]
    assert led.checkpoints(tid) == [next(e for e in out if "checkpoint" in e)["checkpoint"]]
    result = audit(stored, led.load(tid), led.checkpoints(tid),
                   led.signer.private.public_key())
    assert result["ok"] and result["checks"]["checkpoints"] is True, result
