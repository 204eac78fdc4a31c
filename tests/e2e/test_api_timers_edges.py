"""Turn timers at the edges (API.md "Bots, hints and turn timers"), through the HTTP API: the
dealer's decision, a table with no drop, a closed table, a voided hand, an imported
(recorded) table, and two `loo serve` processes on one database with a restart.

Time is driven by the ledger's clock where one process is enough; the process test waits for
real (turn_seconds=5), polling with a deadline."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.e2e.club import Club, Table
from tests.e2e.test_api_clubs import League
from tests.e2e.test_serve_process import serving
from tests.integration.worker_helpers import wait_until
from workers import jobs


def _events(club: Club, t: Table) -> list[dict]:
    return club.get(t, path="/events?limit=1000").get_json()["events"]


def _after(club: Club, t: Table, version: int) -> list[dict]:
    return [e for e in _events(club, t) if e["version"] > version]


def _timer_ids(app: Any, t: Table) -> list[str]:
    return [jid for _at, jid in app.extensions["loo_ledger"].dispatcher.pending() if t.id in jid]


def test_the_dealers_decision_times_out_as_a_drop_and_without_drops_as_a_stand(app, club: Club):
    led = app.extensions["loo_ledger"]
    led.clock = lambda: time.time() + 600
    t = club.create(first_dealer=0, options={"turn_seconds": 600})
    v = club.view(t)
    club.ok(t, {"type": "decide", "choice": "play", "expected_version": v["version"]},
            t.seats[v["hand"]["turn"]])
    while (v := club.view(t))["hand"]["turn"] != 0:  # the others let their time pass
        assert jobs.time_out(t.id, v["version"], ledger=led) == "acted"
    assert {"type": "decide", "seat": 0, "choice": "drop"} in v["legal_actions"]
    assert any(a.get("take_turn_up") for a in v["legal_actions"])  # the dealer may take it
    assert jobs.time_out(t.id, v["version"], ledger=led) == "acted"
    timed, decided = _after(club, t, v["version"])[:2]
    assert timed["type"] == "turn_timed_out" and timed["data"]["seat"] == 0
    assert decided["type"] == "player_decided"
    assert (decided["data"]["seat"], decided["data"]["choice"]) == (0, "drop")
    assert decided["data"]["take_turn_up"] is False

    # Two seats: no drop (RULES); a decision timed out stands: plays, no turn-up taken.
    two = club.create(first_dealer=0, seats=[{"name": "Ann"}, {"name": "Bob"}],
                      options={"turn_seconds": 600})
    v = club.view(two)
    assert not any(a.get("choice") == "drop" for a in v["legal_actions"])
    assert jobs.time_out(two.id, v["version"], ledger=led) == "acted"
    decided = _after(club, two, v["version"])[1]["data"]
    assert (decided["choice"], decided["take_turn_up"], decided["for_pool"]) == (
        "play", False, False)
    assert club.get(two, path="/audit").get_json()["ok"]


def test_no_timer_acts_at_a_closed_table_nor_after_a_voided_hand(app, club: Club):
    led = app.extensions["loo_ledger"]
    led.clock = lambda: time.time() + 600
    t = club.create(first_dealer=0, options={"turn_seconds": 600})
    before = club.view(t)
    assert club.post(t, "/close", {"expected_version": before["version"]}).status_code == 200
    closed = club.view(t)
    assert closed["status"] == "closed" and closed["hand"]["turn"] is not None
    assert jobs.time_out(t.id, before["version"], ledger=led) == "stale"
    assert jobs.time_out(t.id, closed["version"], ledger=led) == "idle"
    assert _after(club, t, closed["version"]) == []
    assert f"timeout:{t.id}:{closed['version']}" not in _timer_ids(app, t)

    # A game won by the timer's moves, then its hand voided: playing again, but nobody is to
    # act (no hand dealt), so no timer is owed and none acts.
    t = club.create(first_dealer=0, scoring="points",
                    options={"turn_seconds": 600, "target": 1, "auto_deal": False})
    assert club.start(t).status_code == 200
    deadline = time.monotonic() + 60
    while (v := club.view(t))["status"] == "playing":
        assert time.monotonic() < deadline, v
        assert jobs.time_out(t.id, v["version"], ledger=led) == "acted"
    assert v["status"] == "finished"
    r = club.post(t, f"/hands/{v['hand']['number']}/void", {"reason": "wrong table"})
    assert r.status_code == 200, r.get_json()
    voided = club.view(t)
    assert voided["status"] == "playing" and voided["hand"]["turn"] is None
    assert jobs.time_out(t.id, voided["version"], ledger=led) == "idle"
    assert _after(club, t, voided["version"]) == []
    assert f"timeout:{t.id}:{voided['version']}" not in _timer_ids(app, t)


def test_an_imported_timed_table_is_recorded_with_no_timer_and_no_hints(app, club: Club):
    # A recorded table is entered by a scorer: a timer there would invent moves. The import
    # drops the live-play options; the timed-out moves come in as the moves they were.
    led = app.extensions["loo_ledger"]
    led.clock = lambda: time.time() + 600
    lg = League(club)
    source = club.create(first_dealer=0,
                         options={"turn_seconds": 5, "hints": True, "auto_deal": False})
    assert club.start(source).status_code == 200
    while (v := club.view(source))["hand"]["turn"] is not None:
        assert jobs.time_out(source.id, v["version"], ledger=led) == "acted"
    assert any(e["type"] == "turn_timed_out" for e in _events(club, source))
    ndjson = club.get(source, path="/history").data
    r = club.c.post(lg.url("/tables/import"), data=ndjson,
                    headers=lg.h(lg.scorer) | {"Content-Type": "application/x-ndjson"})
    assert r.status_code == 201, r.get_json()
    new = r.get_json()
    view = club.c.get(f"/v1/tables/{new['id']}", headers=lg.h(lg.scorer)).get_json()
    assert view["deal"] == "recorded"
    assert "turn_seconds" not in view["options"] and view["options"]["hints"] is False
    events = club.c.get(f"/v1/tables/{new['id']}/events?limit=1000",
                        headers=lg.h(lg.scorer)).get_json()["events"]
    assert not [e for e in events if e["type"] == "turn_timed_out"]
    assert not [j for _at, j in led.dispatcher.pending() if new["id"] in j]
    again = club.c.get(f"/v1/tables/{new['id']}/history", headers=lg.h(lg.viewer)).data
    assert ([json.loads(x)["hand"]["actions"] for x in again.splitlines()]
            == [json.loads(x)["hand"]["actions"] for x in ndjson.splitlines()])


def _call(url: str, token: str | None = None, body: Any = None) -> tuple[int, Any]:
    req = urllib.request.Request(
        url, data=None if body is None else json.dumps(body).encode(),
        headers={"Content-Type": "application/json",
                 **({"Authorization": f"Bearer {token}"} if token else {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_two_serve_processes_and_a_restart_time_out_each_turn_once(tmp_path: Path) -> None:
    # The embedded default keeps its timers in each process: both processes owe the table's
    # timer (the second schedules it at its start), one acts and the other finds it stale;
    # the first is then restarted. Every turn is timed out once, never twice.
    db = f"sqlite:///{tmp_path}/loo.db"
    dirs = [tmp_path / n for n in ("a", "b", "a2")]
    for d in dirs:
        d.mkdir()
    with serving(cwd=dirs[0], DATABASE_URL=db) as a:
        status, t = _call(a + "/v1/tables", body={
            "seats": [{"name": n} for n in ("Ann", "Bob", "Cat", "Dan")], "first_dealer": 0,
            "options": {"turn_seconds": 5}})
        assert status == 201, t
        admin = t["admin_token"]

        def events(url: str) -> list[dict]:
            status, page = _call(f"{url}/v1/tables/{t['id']}/events?limit=1000", admin)
            assert status == 200, page
            return page["events"]

        with serving(cwd=dirs[1], DATABASE_URL=db) as b:
            wait_until(lambda: any(e["type"] == "turn_timed_out" for e in events(b)),
                       timeout=30, what="the first turn timed out")
    # `a` stopped, then started again; `b` gone too: the new process owes the timers alone
    with serving(cwd=dirs[2], DATABASE_URL=db) as a2:
        wait_until(lambda: sum(e["type"] == "turn_timed_out" for e in events(a2)) >= 3,
                   timeout=40, what="three turns timed out")
        log = events(a2)
        assert _call(f"{a2}/v1/tables/{t['id']}/audit", admin)[1]["ok"]
    moves = [e for e in log
             if e["type"] in ("turn_timed_out", "player_decided", "tile_played",
                              "tiles_discarded")]
    for first, second in zip(moves, moves[1:], strict=False):
        assert not (first["type"] == second["type"] == "turn_timed_out"), moves
        if first["type"] == "turn_timed_out":  # the seat timed out is the one acted for
            assert second["data"]["seat"] == first["data"]["seat"]
