"""`loo bench standings`: a club's league table from the read model against the fold of
every table it replaced, measured in one run on the same store.

A club with `tables` results tables of `hands` hands each (8 members rotating through the
seats, a quarter of the hands voided and entered again) is entered into a fresh SQLite
file (or a fresh PostgreSQL schema with --database-url). Then, over the same events:
- scan: every matching table loaded and folded per request (the way before the read model);
- read model: `GET .../standings` as served: catch up (nothing new) and sum the club's rows;
- one new hand: the same after another hand was entered (the catch-up folds its events);
- rebuild: the whole model folded again from the first event (events/s).
`ratio standings_vs_scan` = read-model requests/s ÷ scan requests/s (target 10).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bench.scratch import scratch
from ledger.app.clubs import Clubs
from ledger.core import club as cl
from ledger.core import commands as c

RESULTS = ({"decisions": {"0": "play", "1": "play", "2": "drop", "3": "play"},
            "tricks": {"0": 3, "1": 2, "2": 0, "3": 0}},
           {"decisions": {"0": "play", "1": "play", "2": "play", "3": "play"},
            "tricks": {"0": 0, "1": 1, "2": 1, "3": 3}})


def _club(clubs: Clubs, tables: int, hands: int) -> tuple[str, list[str]]:
    led = clubs.ledger
    loaded, _ = clubs.create("Bench club", None, None)
    mids = [f"mem_{i:016x}" for i in range(8)]
    for i, mid in enumerate(mids):
        clubs.execute(loaded.id, lambda club, mid=mid, i=i: cl.join(club, mid, f"M{i}", None))
    tids = []
    for n in range(tables):
        members = tuple(mids[(n + k) % len(mids)] for k in range(4))
        cmd = c.CreateTable("loo", "pool", tuple((f"P{k}", None) for k in range(4)), 0,
                            "results", {}, club=loaded.id, members=members)
        tid, _, p = led.create_table(cmd)
        clubs.link_table(loaded.id, tid, None, members, "loo", "pool")
        for h in range(hands):
            led.execute(tid, c.StartHand(result=RESULTS[h % 2]))
            if h % 4 == 3:
                led.execute(tid, c.VoidHand(number=h + 1 + h // 4, reason="bench"))
                led.execute(tid, c.StartHand(result=RESULTS[0]))
        tids.append(tid)
    return loaded.id, tids


def _rate(fn: Callable[[], Any], seconds: float) -> float:
    """Calls per second of `fn` over about `seconds` (at least 3 calls)."""
    n, start = 0, time.perf_counter()
    while n < 3 or time.perf_counter() - start < seconds:
        fn()
        n += 1
    return n / (time.perf_counter() - start)


def run(database_url: str = "", tables: int = 40, hands: int = 25, seconds: float = 2.0,
        out: Callable[[str], None] = print) -> None:
    with scratch(database_url, "standings") as (container, url):
        clubs = Clubs(container.ledger)
        start = time.perf_counter()
        club_id, tids = _club(clubs, tables, hands)
        events = len(container.store.read_all(0, 10**9))
        out(f"setup: {tables} tables x {hands} hands, {events} events in "
            f"{time.perf_counter() - start:.1f}s ({url.split('?')[0]})")
        loaded = clubs.load(club_id)
        start = time.perf_counter()
        clubs.projector.rebuild()
        rebuild_s = time.perf_counter() - start
        model = clubs.standings(loaded)["rows"]
        scan = clubs.standings_by_scan(loaded)["rows"]
        assert [(r["member"], r["chips"], r["hands"]) for r in model] == [
            (r["member"], r["chips"], r["hands"]) for r in scan], "the model disagrees"
        scan_rate = _rate(lambda: clubs.standings_by_scan(loaded), seconds)
        model_rate = _rate(lambda: clubs.standings(loaded), seconds)

        def one_more_hand() -> None:
            container.ledger.execute(tids[0], c.StartHand(result=RESULTS[1]))
            clubs.standings(loaded)

        entry_rate = _rate(lambda: container.ledger.execute(tids[1],
                                                            c.StartHand(result=RESULTS[1])),
                           seconds / 2)
        catch_rate = _rate(one_more_hand, seconds / 2)
        out(f"scan (fold every table): {scan_rate:,.1f} requests/s")
        out(f"read model: {model_rate:,.1f} requests/s")
        out(f"after each new hand: {catch_rate:,.1f} hands+requests/s "
            f"(entering a hand alone: {entry_rate:,.1f}/s)")
        out(f"rebuild from zero: {events / rebuild_s:,.0f} events/s ({rebuild_s:.2f}s)")
        out(f"ratio standings_vs_scan {model_rate / scan_rate:.2f} target 10")


if __name__ == "__main__":
    run()
