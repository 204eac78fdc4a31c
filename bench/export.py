"""`loo bench export`: loo-hh hands exported per second against reading the same events bare.

One all-bot table of `hands` hands is played into a fresh SQLite file (or a fresh
PostgreSQL schema with --database-url). Then, in the same run and over the same events:
- read: the table's events loaded page by page through the store (what any export must do);
- export: the same pages read as the export reads them (store.load_raw: each event's JSON
  text, parsed only where the file needs it) and turned into loo-hh 1.0 NDJSON lines (fold,
  build, JSON-encode), as `GET /v1/tables/{id}/history` streams them.
`ratio export_vs_read` = export hands/s ÷ read hands/s (target 0.5: building the files costs
at most as much again as reading the events).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from bench.scratch import scratch
from ledger.app.history import PAGE, table_history_ndjson
from ledger.app.service import Ledger
from ledger.core import commands as c


def _table(led: Ledger, hands: int) -> str:
    seats = tuple((f"bot{i}", "heuristic") for i in range(4))
    tid, _, _ = led.create_table(c.CreateTable("loo", "pool", seats, 0, "shuffled",
                                               {"auto_deal": False, "max_hands": hands}))
    for _ in range(hands):
        led.execute(tid, c.StartHand())
    return tid


def _best(fn: Callable[[], int], repeat: int) -> tuple[float, int]:
    best, count = float("inf"), 0
    for _ in range(repeat):
        start = time.perf_counter()
        count = fn()
        best = min(best, time.perf_counter() - start)
    return best, count


def run(database_url: str = "", hands: int = 300, repeat: int = 3,
        out: Callable[[str], None] = print) -> None:
    with scratch(database_url, "export") as (container, url):
        led = container.ledger
        store = container.store
        start = time.perf_counter()
        tid = _table(led, hands)
        events = store.version(tid)
        out(f"setup: {hands} hands, {events} events played in "
            f"{time.perf_counter() - start:.1f}s ({url.split('?')[0]})")
        checkpoints = led.checkpoints(tid)
        voided = led.load(tid).table.voided  # as GET .../history has it: its folded table

        def read() -> int:
            after, n = 0, 0
            while after < events:
                page = store.load(tid, after, min(after + PAGE, events))
                n += sum(1 for s in page if s.type == "hand_settled")
                after = page[-1].version
            return n

        def export() -> int:
            n = 0
            for _line in table_history_ndjson(tid, lambda a, b: store.load_raw(tid, a, b),
                                              events, checkpoints, voided=voided):
                n += 1
            return n

        read_s, read_n = _best(read, repeat)
        export_s, export_n = _best(export, repeat)
        assert read_n == export_n == hands, (read_n, export_n, hands)
        read_rate, export_rate = read_n / read_s, export_n / export_s
        out(f"read bare: {read_rate:,.0f} hands/s ({events / read_s:,.0f} events/s)")
        out(f"export loo-hh: {export_rate:,.0f} hands/s")
        out(f"ratio export_vs_read {export_rate / read_rate:.2f} target 0.5")


if __name__ == "__main__":
    run()
