"""`loo bench audit`: GET /v1/tables/{id}/audit and .../ledger of a long table, against
reading the same table's events bare.

One all-bot table of `hands` hands (four heuristic bots, shuffled deals, pool scoring) is
played into a fresh SQLite file (or a fresh PostgreSQL schema with --database-url). Then, in
the same run, over the same table and through the app's own HTTP handling (Flask's test
client, in this process):
- read: the table's events loaded through the Ledger (what a full audit must read at least);
- audit: GET .../audit with the admin token, the first call and the best of the others;
- ledger: GET .../ledger whole (its size), and one page of it (?limit=50).
`ratio audit_vs_read` = read seconds ÷ audit seconds (the first call; target 0.5: the audit
costs at most as much again as reading the events); `ratio ledger_vs_read` = read seconds ÷
the whole ledger's seconds (target 3: the ledger reads only the events that move chips).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bench.scratch import scratch
from ledger.app.service import Ledger
from ledger.core import commands as c


def _table(led: Ledger, hands: int) -> tuple[str, str]:
    """(table id, admin token) of a table of `hands` hands played by four bots."""
    seats = tuple((f"bot{i}", "heuristic") for i in range(4))
    tid, tokens, _ = led.create_table(c.CreateTable("loo", "pool", seats, 0, "shuffled",
                                                    {"auto_deal": False, "max_hands": hands}))
    for _ in range(hands):
        led.execute(tid, c.StartHand())
    return tid, tokens["admin"]


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def run(database_url: str = "", hands: int = 3000, repeat: int = 3,
        out: Callable[[str], None] = print) -> None:
    from ledger.api.app import create_app

    with scratch(database_url, "audit") as (container, url):
        led = container.ledger
        start = time.perf_counter()
        tid, admin = _table(led, hands)
        events = led.version(tid)
        out(f"setup: {hands} hands, {events} events played in "
            f"{time.perf_counter() - start:.1f}s ({url.split('?')[0]})")
        client = create_app(container).test_client()
        auth = {"Authorization": f"Bearer {admin}"}

        def get(path: str) -> Any:
            r = client.get(f"/v1/tables/{tid}{path}", headers=auth)
            assert r.status_code == 200, (path, r.status_code, r.get_data(as_text=True)[:300])
            return r

        read_s = min(_timed(lambda: led.events(tid))[0] for _ in range(repeat))
        out(f"read bare: {read_s:.3f}s ({events / read_s:,.0f} events/s)")
        first, answer = _timed(lambda: get("/audit"))
        assert answer.get_json()["ok"] is True, answer.get_json()
        again = min(_timed(lambda: get("/audit"))[0] for _ in range(max(repeat - 1, 1)))
        out(f"audit: first {first:.3f}s, again {again:.3f}s")
        ledger_s, whole = min((_timed(lambda: get("/ledger")) for _ in range(repeat)),
                              key=lambda x: x[0])
        book = whole.get_json()
        out(f"ledger whole: {ledger_s:.3f}s, {len(whole.get_data()):,} bytes, "
            f"{len(book['transfers']):,} transfers")
        page_s, page = min((_timed(lambda: get("/ledger?limit=50")) for _ in range(repeat)),
                           key=lambda x: x[0])
        out(f"ledger page (?limit=50): {page_s:.3f}s, {len(page.get_data()):,} bytes")
        out(f"ratio audit_vs_read {read_s / first:.2f} target 0.5")
        out(f"ratio ledger_vs_read {read_s / ledger_s:.2f} target 3")


if __name__ == "__main__":
    run()
