"""A settled hand's checkpoint is saved by the append that settles it, in its transaction
(API.md Checkpoints): never by a write of its own after the commit. So are a void's (its
hand_voided) and the table's close's (table_closed)."""

from __future__ import annotations

from typing import Any

import pytest

from ledger.app.audit import audit
from ledger.app.checkpoints import SETTLEMENT_ENDS, signed_heads
from ledger.core import commands as c
from ledger.store.base import NewEvent, VersionConflict
from tests.unit.test_service import MANUAL, Inline, JobPath, bots, make_ledger


def _no_separate_save(*args: Any) -> None:
    raise AssertionError("a checkpoint saved in a write of its own")


@pytest.mark.parametrize("dispatcher", [Inline, JobPath])
def test_every_settled_hand_is_checkpointed_by_the_append_that_settles_it(dispatcher) -> None:
    led = make_ledger(dispatcher)
    led.store.save_checkpoint = _no_separate_save  # type: ignore[method-assign]
    tid, _, _ = led.create_table(c.CreateTable("loo", "pool", bots(4), 0, "shuffled",
                                               {"max_hands": 3}))
    p, stored = led.load(tid), led.store.load(tid)
    heads = [s for i, s in enumerate(stored) if s.type in SETTLEMENT_ENDS
             and (i + 1 == len(stored) or stored[i + 1].type != "game_won")]
    assert len(heads) == 3
    # max_hands closes the table after the third: its table_closed is signed too.
    assert stored[-1].type == "table_closed"
    heads.append(stored[-1])
    assert [stored[i] for i in signed_heads(stored)] == heads
    # The same contents as before: signed over the head, `at` its recorded_at, its position.
    assert led.checkpoints(tid) == [led.checkpoint(tid, h) for h in heads]
    assert [cp["at"] for cp in led.checkpoints(tid)] == [h.recorded_at for h in heads]
    result = audit(stored, p, led.checkpoints(tid), led.signer.private.public_key())
    assert result["ok"] and result["checks"]["checkpoints"] is True, result


def test_a_settlement_whose_append_loses_a_race_saves_no_checkpoint() -> None:
    led = make_ledger()
    tid, _, _ = led.create_table(c.CreateTable("loo", "pool", bots(4), 0, "shuffled", MANUAL))
    append = led.store.append

    def racing(table_id: str, events: Any, expected: int, **kw: Any) -> Any:
        if kw.get("checkpoints") is not None:  # another writer commits first
            append(table_id, [NewEvent("rival", None, {})], expected)
        return append(table_id, events, expected, **kw)

    led.store.append = racing  # type: ignore[method-assign]
    with pytest.raises(VersionConflict):
        led.execute(tid, c.StartHand())  # the bots play the hand out, settled: one append
    assert led.store.checkpoints(tid) == []
    assert [e.type for e in led.store.load(tid)][-1] == "rival"


@pytest.mark.parametrize("dispatcher", [Inline, JobPath])
def test_corrections_a_void_and_a_close_are_checkpointed_by_the_append_that_writes_them(
        dispatcher) -> None:
    """API.md Checkpoints and Corrections: the hand_voided (its compensating transfers are
    its data) and table_closed each get a checkpoint, in their own append's transaction;
    before, nothing signed what came after a table's last settled hand."""
    led = make_ledger(dispatcher)
    led.store.save_checkpoint = _no_separate_save  # type: ignore[method-assign]
    tid, _, _ = led.create_table(c.CreateTable("loo", "pool", bots(4), 0, "shuffled", MANUAL))
    led.execute(tid, c.StartHand())
    settled = led.checkpoints(tid)
    assert len(settled) == 1
    led.execute(tid, c.VoidHand(number=1, reason="misdeal"))
    void = led.store.load(tid)[-1]
    assert void.type == "hand_voided"
    assert led.checkpoints(tid) == [*settled, led.checkpoint(tid, void)]
    led.execute(tid, c.CloseTable())
    closed = led.store.load(tid)[-1]
    assert closed.type == "table_closed"
    assert led.checkpoints(tid) == [*settled, led.checkpoint(tid, void),
                                    led.checkpoint(tid, closed)]
    result = audit(led.store.load(tid), led.load(tid), led.checkpoints(tid),
                   led.signer.private.public_key())
    assert result["ok"] and result["checks"]["checkpoints"] is True, result
