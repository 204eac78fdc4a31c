"""`loo bench standings`: a club's league table from the read model, measured in one run on
the same store against a bare read of the same rows and against the fold it replaced.

A club of `members` members with `tables` results tables of `hands` hands each (members
rotating through the seats; every fourth hand voided and entered again) is entered into
a fresh SQLite file (or a fresh PostgreSQL schema with --database-url). Then:
- rebuild: the whole model folded again from the first event (seconds, events/s);
- standings: `Clubs.standings` as `GET .../standings` serves it (catch up, read the club's
  rows, rank), called by `clients` threads at once; its p99;
- bare: one SELECT of the same rows (`read_model_rows` of the club's member rows), called
  the same way; its p99;
- scan (up to 200 tables): every table loaded and folded, as before the read model.
`ratio standings_read_vs_bare` = bare p99 ÷ standings p99 (target 0.5).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from bench.scratch import scratch
from ledger.app.clubs import Clubs
from ledger.app.standings import AGG
from ledger.core import club as cl
from ledger.core import commands as c

RESULTS = ({"decisions": {"0": "play", "1": "play", "2": "drop", "3": "play"},
            "tricks": {"0": 3, "1": 2, "2": 0, "3": 0}},
           {"decisions": {"0": "play", "1": "play", "2": "play", "3": "play"},
            "tricks": {"0": 0, "1": 1, "2": 1, "3": 3}})


def _club(clubs: Clubs, tables: int, hands: int, members: int) -> tuple[str, list[str]]:
    led = clubs.ledger
    loaded, _ = clubs.create("Bench club", None, None)
    mids = [f"mem_{i:016x}" for i in range(members)]
    for i, mid in enumerate(mids):
        clubs.execute(loaded.id, lambda club, mid=mid, i=i: cl.join(club, mid, f"M{i}", None))
    tids = []
    for n in range(tables):
        members = tuple(mids[(n + k) % len(mids)] for k in range(4))
        cmd = c.CreateTable("loo", "pool", tuple((f"P{k}", None) for k in range(4)), 0,
                            "results", {}, club=loaded.id, members=members)
        tid, _, p = clubs.create_table(loaded.id, cmd, expected_version=None, key=None,
                                       request_hash=None)
        for h in range(hands):
            led.execute(tid, c.StartHand(result=RESULTS[h % 2]))
            if h % 4 == 3:
                led.execute(tid, c.VoidHand(number=h + 1 + h // 4, reason="bench"))
                led.execute(tid, c.StartHand(result=RESULTS[0]))
        tids.append(tid)
    return loaded.id, tids


def _p99(fn: Callable[[], Any], clients: int, seconds: float) -> tuple[float, int]:
    """(p99 latency in seconds, calls) of `fn` called by `clients` threads for `seconds`."""
    times: list[float] = []
    lock = threading.Lock()
    stop = time.perf_counter() + seconds

    def run() -> None:
        mine = []
        while time.perf_counter() < stop or len(mine) < 3:
            start = time.perf_counter()
            fn()
            mine.append(time.perf_counter() - start)
        with lock:
            times.extend(mine)

    threads = [threading.Thread(target=run) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    times.sort()
    return times[min(len(times) - 1, int(len(times) * 0.99))], len(times)


def run(database_url: str = "", tables: int = 2000, hands: int = 10, members: int = 50,
        clients: int = 8, seconds: float = 3.0, out: Callable[[str], None] = print) -> None:
    with scratch(database_url, "standings") as (container, url):
        clubs = Clubs(container.ledger)
        start = time.perf_counter()
        club_id, tids = _club(clubs, tables, hands, members)
        events = len(container.store.read_all(0, 10**9))
        out(f"setup: {members} members, {tables} tables x {hands} hands, {events} events in "
            f"{time.perf_counter() - start:.1f}s ({url.split('?')[0]})")
        loaded = clubs.load(club_id)
        start = time.perf_counter()
        clubs.projector.rebuild()
        rebuild_s = time.perf_counter() - start
        out(f"rebuild from zero: {rebuild_s:.2f}s ({events / rebuild_s:,.0f} events/s)")
        rows = clubs.standings(loaded)["rows"]
        if tables <= 200:
            scan = clubs.standings_by_scan(loaded)["rows"]
            assert [(r["member"], r["chips"], r["hands"]) for r in rows] == [
                (r["member"], r["chips"], r["hands"]) for r in scan], "the model disagrees"
            once = time.perf_counter()
            clubs.standings_by_scan(loaded)
            out(f"scan (fold every table), one call: {time.perf_counter() - once:.3f}s")
        store = container.store
        served, n_served = _p99(lambda: clubs.standings(loaded), clients, seconds)
        bare, n_bare = _p99(lambda: store.read_model_rows("standings", club_id + AGG),
                            clients, seconds)
        out(f"standings ({len(rows)} rows), {clients} clients: p99 {served * 1000:.1f} ms "
            f"({n_served / seconds:,.0f}/s)")
        out(f"bare SELECT of the same rows, {clients} clients: p99 {bare * 1000:.1f} ms "
            f"({n_bare / seconds:,.0f}/s)")
        out(f"ratio standings_read_vs_bare {bare / served:.2f} target 0.5")


if __name__ == "__main__":
    run()
