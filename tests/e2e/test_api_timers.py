"""Turn timers through the HTTP API and the embedded default's timer thread (API.md "Bots,
hints and turn timers"; issue 18), on SQLite and PostgreSQL.

One test per backend waits for real (turn_seconds=5, a deadline, no fixed sleep); the others
drive time with the ledger's clock and call the timer job with the version it was
scheduled for."""

from __future__ import annotations

import threading
import time

from ledger.api.app import create_app
from ledger.bootstrap import Settings, bootstrap
from tests.e2e.club import Club, Table
from tests.integration.worker_helpers import wait_until
from workers import jobs
from workers.reconcile import recover_timers


def _timed(club: Club, seconds: int, **options) -> Table:
    return club.create(first_dealer=0, options={"turn_seconds": seconds, **options})


def _events(club: Club, t: Table, token: str | None = None) -> list[dict]:
    return club.get(t, token, "/events?limit=1000").get_json()["events"]


def test_a_seat_that_does_nothing_is_acted_for_after_turn_seconds(club: Club):
    t = _timed(club, 5)
    view = club.view(t)
    seat, version = view["hand"]["turn"], view["version"]
    assert view["options"]["turn_seconds"] == 5
    started = time.monotonic()
    wait_until(lambda: any(e["type"] == "turn_timed_out" for e in _events(club, t)),
               timeout=30, what="turn_timed_out")
    assert time.monotonic() - started > 3  # not before its time (5 s from the turn's start)
    events = [e for e in _events(club, t) if e["version"] > version]
    assert events[0]["type"] == "turn_timed_out"
    assert events[0]["data"] == {"seat": seat, "seconds": 5}
    assert events[1]["type"] == "player_decided" and events[1]["data"]["choice"] == "drop"
    # the seat itself sees it in its own feed
    assert any(e["type"] == "turn_timed_out" for e in _events(club, t, t.seats[seat]))
    assert club.get(t, path="/audit").get_json()["ok"]


def test_clock_driven_timeout_then_the_next_seat_is_on_the_clock(app, club: Club):
    led = app.extensions["loo_ledger"]
    t = _timed(club, 600)
    view = club.view(t)
    version, seat = view["version"], view["hand"]["turn"]
    assert jobs.time_out(t.id, version, ledger=led) == "early"
    led.clock = lambda: time.time() + 600
    assert jobs.time_out(t.id, version, ledger=led) == "acted"
    assert jobs.time_out(t.id, version, ledger=led) == "stale"  # never twice
    after = club.view(t)
    assert after["hand"]["decisions"][str(seat)] == "drop"
    pending = [jid for _at, jid in led.dispatcher.pending()]
    assert f"timeout:{t.id}:{after['version']}" in pending


def test_a_move_and_the_timer_race_and_exactly_one_wins(app, club: Club):
    led = app.extensions["loo_ledger"]
    led.clock = lambda: time.time() + 600
    for _round in range(4):
        t = _timed(club, 600)
        view = club.view(t)
        version, seat = view["version"], view["hand"]["turn"]
        body = {"type": "decide", "choice": "play", "expected_version": version}
        start = threading.Barrier(2)
        got: dict[str, object] = {}

        def move(token: str = t.seats[seat], body: dict = body, table_id: str = t.id,
                 start: threading.Barrier = start, got: dict = got) -> None:
            client = app.test_client()
            start.wait()
            got["move"] = client.post(f"/v1/tables/{table_id}/actions", json=body,
                                      headers=Club.auth(token)).status_code

        def timer(table_id: str = t.id, version: int = version,
                  start: threading.Barrier = start, got: dict = got) -> None:
            start.wait()
            got["timer"] = jobs.time_out(table_id, version, ledger=led)

        threads = [threading.Thread(target=move), threading.Thread(target=timer)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(30)
        assert (got["move"], got["timer"]) in {(200, "stale"), (409, "acted")}, got
        events = [e for e in _events(club, t) if e["version"] > version]
        decided = [e for e in events if e["type"] == "player_decided"
                   and e["data"]["seat"] == seat]
        assert len(decided) == 1
        assert decided[0]["data"]["choice"] == ("play" if got["move"] == 200 else "drop")
        assert club.get(t, path="/audit").get_json()["ok"]


def test_a_restarted_server_still_times_out_the_seat(backend_url: str):
    first = bootstrap(Settings(database_url=backend_url))
    club = Club(create_app(first).test_client())
    t = _timed(club, 5)
    version = club.view(t)["version"]
    first.close()  # the process dies: its timer thread with it

    second = bootstrap(Settings(database_url=backend_url))
    try:
        assert recover_timers(second.ledger) >= 1
        assert f"timeout:{t.id}:{version}" in [j for _at, j in second.dispatcher.pending()]
        club = Club(create_app(second).test_client())
        wait_until(lambda: any(e["type"] == "turn_timed_out" for e in _events(club, t)),
                   timeout=30, what="turn_timed_out after a restart")
        assert club.get(t, path="/audit").get_json()["ok"]
    finally:
        second.close()


def _stays(predicate, seconds: float, what: str) -> None:
    """Poll `predicate` for `seconds`: it must hold at every look (no fixed sleep decides)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert predicate(), what
        time.sleep(0.2)


def test_turn_timers_rest_at_a_table_its_people_left_and_wake_at_their_move(app, club: Club):
    # API.md "Bots, hints and turn timers": the person's every turn in a hand timed out, so
    # the next hand is dealt but no timer acts in it until the person moves again.
    led = app.extensions["loo_ledger"]
    seats = [{"name": "Ann", "bot": "heuristic"}, {"name": "Bob"},
             {"name": "Cat", "bot": "heuristic"}, {"name": "Dan", "bot": "heuristic"}]
    t = club.create(first_dealer=0, seats=seats, options={"turn_seconds": 5})
    wait_until(lambda: club.view(t)["timers_idle"], timeout=60, what="timers_idle")
    view = wait_until(lambda: (v := club.view(t))["hand"]["turn"] == 1 and v, timeout=30,
                      what="the person's turn in the idle hand")
    assert view["hand"]["number"] >= 2 and view["timers_idle"] is True
    version = view["version"]
    assert f"timeout:{t.id}:{version}" not in [j for _at, j in led.dispatcher.pending()]
    _stays(lambda: club.view(t)["version"] == version, 16, "nothing appended while idle")
    assert jobs.time_out(t.id, version, ledger=led) == "idle"
    # the person's move wakes the timers: their next turn times out again
    move = club.view(t, t.seats[1])["legal_actions"][0]
    club.ok(t, {**move, "expected_version": version}, t.seats[1])
    assert club.view(t)["timers_idle"] is False
    wait_until(lambda: any(e["type"] == "turn_timed_out" and e["version"] > version
                           for e in _events(club, t)), timeout=60, what="a timer after the move")
    assert club.get(t, path="/audit").get_json()["ok"]
