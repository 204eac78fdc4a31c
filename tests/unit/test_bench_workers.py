"""bench/workers.py helpers that need no PostgreSQL or Redis."""

from __future__ import annotations

import itertools

from bench.workers import _closed
from ledger.app.service import Ledger
from ledger.core import commands as c
from ledger.store.memory import MemoryStore
from workers.queue import InlineDispatcher


def test_closed_reads_only_the_last_event_and_says_whether_it_closed_the_table():
    counter = itertools.count()
    inline = InlineDispatcher()
    led = Ledger(MemoryStore(), inline, seeds=lambda: next(counter).to_bytes(32, "big"))
    inline.bind(ledger=led)
    seats = tuple((f"Bot {i}", "heuristic") for i in range(4))
    done, _t, _p = led.create_table(c.CreateTable("loo", "pool", seats, 0, "shuffled",
                                                  {"auto_deal": True, "max_hands": 2}))
    waiting, _t, _p = led.create_table(c.CreateTable("loo", "pool", seats, 0, "shuffled",
                                                     {"auto_deal": False}))
    assert led.load(done).table.status == "closed"
    assert _closed(led.store, done)
    assert not _closed(led.store, waiting)
    assert not _closed(led.store, "no-such-table")
