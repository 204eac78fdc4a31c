"""Server-Sent Events from a real `loo serve` process, read by a raw HTTP client (API.md
Feeds): order, exactly-once across forced reconnects while writers play, a seat's redacted
view equal to the JSON feed's, keep-alive comments, bad Last-Event-ID, and the bound of
open streams leaving the request threads free (gunicorn gthread)."""

from __future__ import annotations

import json
import random
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from ledger.cli.tail import Frame, StreamRefused, frames, open_stream
from tests.e2e.test_serve_process import serving


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/loo.db"
    return request.getfixturevalue("pg_url")


def call(base: str, method: str, path: str, token: str | None = None, body: Any = None,
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
    data = None if body is None else json.dumps(body).encode()
    h = {"Content-Type": "application/json", **(headers or {})}
    if token:
        h["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(base + path, data=data, method=method, headers=h)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            raw = r.read()
            return r.status, dict(r.headers), json.loads(raw) if raw else None
    except urllib.error.HTTPError as err:
        raw = err.read()
        return err.code, dict(err.headers), json.loads(raw) if raw else None


def new_club(base: str) -> tuple[str, str]:
    status, _, club = call(base, "POST", "/v1/clubs", body={"name": "Feed Club"})
    assert status == 201, club
    return club["id"], club["token"]


def new_table(base: str, club: tuple[str, str] | None = None) -> dict[str, Any]:
    body = {"variant": "loo", "scoring": "pool", "first_dealer": 0, "deal": "shuffled",
            "seats": [{"name": n} for n in ("Ann", "Bob", "Cat", "Dan")]}
    path = f"/v1/clubs/{club[0]}/tables" if club else "/v1/tables"
    status, _, out = call(base, "POST", path, club[1] if club else None, body)
    assert status == 201, out
    return out


def play(base: str, table: dict[str, Any], moves: int) -> None:
    """Each turn's first legal action, sent with the admin token for the seat to act."""
    admin = table["admin_token"]
    for _ in range(moves):
        _, _, view = call(base, "GET", f"/v1/tables/{table['id']}", admin)
        if view["status"] != "playing" or not view["legal_actions"]:
            return
        move = view["legal_actions"][0] | {"expected_version": view["version"]}
        status, _, out = call(base, "POST", f"/v1/tables/{table['id']}/actions", admin, move)
        assert status in (200, 409), out


def read_events(url: str, token: str, last_id: str | None, count: int,
                deadline: float) -> tuple[list[Frame], bool]:
    """Up to `count` events from one connection (closed after), and whether the server
    ended the stream first."""
    conn, resp = open_stream(url, token, last_id, timeout=10)
    got: list[Frame] = []
    try:
        for f in frames(resp):
            if f.comment is None:
                got.append(f)
                if len(got) >= count:
                    return got, False
            if time.monotonic() > deadline:
                break
        return got, True
    finally:
        conn.close()


def json_feed(base: str, path: str, token: str, param: str = "after") -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    after = 0
    while True:
        _, _, page = call(base, "GET", f"{path}?{param}={after}&limit=500", token)
        if not page["events"]:
            return seen
        seen += page["events"]
        after = page["next"]


def test_a_club_stream_survives_random_reconnects_exactly_once_in_order(
        db_url: str, tmp_path: Path) -> None:
    rng = random.Random(17)
    with serving(cwd=tmp_path, DATABASE_URL=db_url, LOO_RATE_LIMITS="off",
                 LOO_SSE_MAX_SECONDS="1.5", LOO_SSE_KEEPALIVE="0.3") as base:
        club = new_club(base)
        tables = [new_table(base, club) for _ in range(2)]
        writers = [threading.Thread(target=play, args=(base, t, 70)) for t in tables]
        for w in writers:
            w.start()
        url = f"{base}/v1/clubs/{club[0]}/events"
        got: list[Frame] = []
        last_id = None
        deadline = time.monotonic() + 120
        ended_by_server = 0
        while time.monotonic() < deadline:
            frames_, ended = read_events(url, club[1], last_id, rng.randint(1, 25), deadline)
            ended_by_server += ended
            got += frames_
            if got:
                last_id = got[-1].id
            if not any(w.is_alive() for w in writers):
                expected = json_feed(base, f"/v1/clubs/{club[0]}/events", club[1])
                if got and int(got[-1].id or 0) >= expected[-1]["position"]:
                    break
        for w in writers:
            w.join()
        positions = [int(f.id or 0) for f in got]
        assert positions == [e["position"] for e in expected]  # each once, in order
        assert [f.event for f in got] == [e["type"] for e in expected]
        for f in got:
            doc = f.json()
            assert doc["position"] == int(f.id or 0) and doc["type"] == f.event
            assert doc["stream"] in ("club", *(t["id"] for t in tables))
            if f.event == "tiles_dealt" and doc["hash"] is None:  # live when it went out
                assert all(isinstance(h, dict) for h in doc["data"]["hands"].values())
        assert ended_by_server >= 1  # the server's max duration forced reconnects too
        # The end of every settled hand carries its signed checkpoint.
        cps = [f.json() for f in got if "checkpoint" in f.json()]
        assert cps, "no hand was settled"
        for doc in cps:
            cp = doc["checkpoint"]
            assert (cp["table"], cp["version"], cp["hash"], cp["position"]) == (
                doc["stream"], doc["version"], doc["hash"], doc["position"])
        for t in tables:
            _, _, listed = call(base, "GET", f"/v1/tables/{t['id']}/checkpoints",
                                t["admin_token"])
            assert [d["checkpoint"] for d in cps if d["stream"] == t["id"]] == listed["items"]


def test_a_seat_gets_its_own_redacted_view_then_live_events_and_keepalives(
        db_url: str, tmp_path: Path) -> None:
    with serving(cwd=tmp_path, DATABASE_URL=db_url, LOO_RATE_LIMITS="off",
                 LOO_SSE_KEEPALIVE="0.3") as base:
        table = new_table(base)
        tid, seat1 = table["id"], table["seats"][1]["token"]
        play(base, table, 3)
        expected = json_feed(base, f"/v1/tables/{tid}/events", seat1)
        conn, resp = open_stream(f"{base}/v1/tables/{tid}/events", seat1, timeout=10)
        assert resp.getheader("Content-Type", "").startswith("text/event-stream")
        it = frames(resp)
        got = []
        while len(got) < len(expected):
            f = next(it)
            if f.comment is None:
                got.append(f)
        # Exactly the JSON feed's events for this token (hidden tiles and hashes removed).
        assert [f.json() for f in got] == expected
        assert [int(f.id or 0) for f in got] == [e["position"] for e in expected]
        dealt = next(f.json() for f in got if f.event == "tiles_dealt")
        assert isinstance(dealt["data"]["hands"]["0"], dict)  # seat 0's tiles: a count
        assert isinstance(dealt["data"]["hands"]["1"], list)  # its own: the tiles
        # Idle: a comment line soon (LOO_SSE_KEEPALIVE=0.3 s here; 15 s by default).
        start = time.monotonic()
        f = next(it)
        assert f.comment is not None and time.monotonic() - start < 5
        # Live: a move arrives, redacted for this seat as the JSON feed has it.
        play(base, table, 1)
        f = next(x for x in it if x.comment is None)
        last = json_feed(base, f"/v1/tables/{tid}/events", seat1)[len(expected)]
        assert f.json() == last and int(f.id or 0) == last["position"]
        conn.close()
        # Resume from ?after= (a position in the stream) and from Last-Event-ID.
        for kwargs in ({"url": f"{base}/v1/tables/{tid}/events?after={got[-2].id}"},
                       {"last_id": got[-2].id}):
            conn, resp = open_stream(kwargs.get("url", f"{base}/v1/tables/{tid}/events"),
                                     seat1, kwargs.get("last_id"), timeout=10)
            first = next(x for x in frames(resp) if x.comment is None)
            assert first.id == got[-1].id
            conn.close()


def test_a_malformed_last_event_id_or_after_is_a_problem(db_url: str, tmp_path: Path) -> None:
    with serving(cwd=tmp_path, DATABASE_URL=db_url) as base:
        table = new_table(base)
        club = new_club(base)
        for path, token in ((f"/v1/tables/{table['id']}/events", table["admin_token"]),
                            (f"/v1/clubs/{club[0]}/events", club[1])):
            for header, status in (("abc", 400), ("-1", 400), ("1.5", 400),
                                   ("99999999999999999999999", 400)):
                with pytest.raises(StreamRefused) as err:
                    open_stream(base + path, token, header, timeout=10)
                assert err.value.status == status
                assert json.loads(err.value.body)["code"] == "invalid_last_event_id"
            for after in ("x", "-3", "99999999999999999999999"):
                with pytest.raises(StreamRefused) as err:
                    open_stream(f"{base}{path}?after={after}", token, timeout=10)
                assert err.value.status == 422, err.value.body
            with pytest.raises(StreamRefused) as err:  # no token: 401 before any stream
                open_stream(base + path, None, timeout=10)
            assert err.value.status == 401


def test_open_streams_are_bounded_and_never_starve_requests(tmp_path: Path) -> None:
    """gunicorn gthread, 2 workers x (2 request threads + 2 stream threads): streams beyond
    the bound are refused 503 with Retry-After, and /healthz still answers at once."""
    with serving("--workers", "2", "--threads", "2", "--streams", "2", cwd=tmp_path,
                 LOO_RATE_LIMITS="off",
                 DATABASE_URL=f"sqlite:///{tmp_path}/loo.db", LOO_SSE_KEEPALIVE="0.5") as base:
        table = new_table(base)
        url = f"{base}/v1/tables/{table['id']}/events"
        held, refused = [], None
        for _ in range(12):
            try:
                conn, resp = open_stream(url, table["admin_token"], timeout=10)
                resp.readline()  # the stream has started: it holds its thread
                held.append(conn)
            except StreamRefused as err:
                refused = err
                break
        try:
            assert refused is not None and refused.status == 503, refused
            assert refused.retry_after == "5"
            assert json.loads(refused.body)["code"] == "too_many_streams"
            assert 2 <= len(held) <= 4
            for _ in range(20):
                start = time.monotonic()
                status, _, body = call(base, "GET", "/healthz")
                assert status == 200 and time.monotonic() - start < 2
                status, _, _ = call(base, "GET", f"/v1/tables/{table['id']}", table["admin_token"])
                assert status == 200
        finally:
            for conn in held:
                conn.close()


def test_loo_tail_prints_one_line_per_event_of_a_club(tmp_path: Path) -> None:
    import subprocess
    import sys

    loo = str(Path(sys.executable).with_name("loo"))
    with serving(cwd=tmp_path, DATABASE_URL=f"sqlite:///{tmp_path}/loo.db",
                 LOO_SSE_MAX_SECONDS="1", LOO_RATE_LIMITS="off") as base:
        club = new_club(base)
        table = new_table(base, club)
        play(base, table, 2)
        expected = json_feed(base, f"/v1/clubs/{club[0]}/events", club[1])
        proc = subprocess.Popen([loo, "tail", "--club", club[0], "--url", base, "--after", "0"],
                                env={**__import__("os").environ, "LOO_TOKEN": club[1]},
                                stdout=subprocess.PIPE, text=True)
        try:
            lines = [proc.stdout.readline().split() for _ in range(len(expected))]  # type: ignore[union-attr]
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        assert [int(x[0]) for x in lines] == [e["position"] for e in expected]
        assert [x[1] for x in lines] == [e["stream"] for e in expected]
        assert [x[3] for x in lines] == [e["type"] for e in expected]


class Tail:
    """`loo tail ARGS` against the service at `base`, its lines read as they come."""

    def __init__(self, base: str, token: str, *args: str) -> None:
        import queue
        import subprocess
        import sys

        loo = str(Path(sys.executable).with_name("loo"))
        self.proc = subprocess.Popen([loo, "tail", *args, "--url", base],
                                     env={**__import__("os").environ, "LOO_TOKEN": token},
                                     stdout=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            self.lines.put(line)

    def next(self, n: int, within: float = 30.0) -> list[list[str]]:
        """The next `n` lines, split (position, [stream,] version, type, ...)."""
        deadline = time.monotonic() + within
        return [self.lines.get(timeout=max(0.01, deadline - time.monotonic())).split()
                for _ in range(n)]

    def quiet(self, seconds: float) -> bool:
        """No line comes within `seconds`."""
        time.sleep(seconds)
        return self.lines.empty()

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def test_loo_tail_latest_prints_a_feeds_last_events_then_follows_on(tmp_path: Path) -> None:
    """`loo tail --club ID` printed the club's whole history before its live events. Now
    --latest N prints its last N (read as ?latest=N), then follows on from the page's
    `next`: the next event once, nothing before the N. Without --after or --latest a club
    shows its last 10 (--after 0: the whole history, as before); a table, whose page counts
    versions, follows on after its last event's position, and shows its first event on
    without either, as before."""
    with serving(cwd=tmp_path, DATABASE_URL=f"sqlite:///{tmp_path}/loo.db",
                 LOO_SSE_MAX_SECONDS="1", LOO_RATE_LIMITS="off") as base:
        club = new_club(base)
        table = new_table(base, club)
        play(base, table, 4)
        expected = json_feed(base, f"/v1/clubs/{club[0]}/events", club[1])
        assert len(expected) > 12
        tails = [Tail(base, club[1], "--club", club[0], "--latest", "3"),
                 Tail(base, club[1], "--club", club[0]),
                 Tail(base, table["admin_token"], table["id"], "--latest", "2"),
                 Tail(base, table["admin_token"], table["id"])]
        try:
            shown = [tails[0].next(3), tails[1].next(10)]
            for lines, want in zip(shown, (expected[-3:], expected[-10:]), strict=True):
                assert [(int(x[0]), x[1], x[3]) for x in lines] == [
                    (e["position"], e["stream"], e["type"]) for e in want]
            mine = [e for e in expected if e["stream"] == table["id"]]
            assert [int(x[0]) for x in tails[2].next(2)] == [e["position"] for e in mine[-2:]]
            assert [int(x[0]) for x in tails[3].next(len(mine))] == [
                e["position"] for e in mine]
            assert all(tail.quiet(0.5) for tail in tails)  # nothing more, nothing again
            play(base, table, 1)
            more = json_feed(base, f"/v1/clubs/{club[0]}/events", club[1])[len(expected):]
            assert more
            for tail in tails:
                got = tail.next(len(more))
                assert [int(x[0]) for x in got] == [e["position"] for e in more]
            assert all(tail.quiet(1.5) for tail in tails)  # across a reconnect too
        finally:
            for tail in tails:
                tail.close()


def test_a_stream_ends_when_its_token_is_revoked(tmp_path: Path) -> None:
    with serving(cwd=tmp_path, DATABASE_URL=f"sqlite:///{tmp_path}/loo.db",
                 LOO_RATE_LIMITS="off", LOO_SSE_KEEPALIVE="0.3") as base:
        club = new_club(base)
        status, _, viewer = call(base, "POST", f"/v1/clubs/{club[0]}/tokens", club[1],
                                 {"role": "viewer", "label": "screen"})
        assert status == 201
        table = new_table(base)
        status, _, spectator = call(base, "POST", f"/v1/tables/{table['id']}/spectators",
                                    table["admin_token"], {"label": "screen"})
        assert status == 201
        streams = [open_stream(f"{base}/v1/clubs/{club[0]}/events", viewer["token"],
                               timeout=10),
                   open_stream(f"{base}/v1/tables/{table['id']}/events", spectator["token"],
                               timeout=10)]
        for _, resp in streams:
            resp.readline()  # started
        call(base, "DELETE", f"/v1/clubs/{club[0]}/tokens/{viewer['id']}", club[1])
        call(base, "DELETE", f"/v1/tables/{table['id']}/spectators/{spectator['id']}",
             table["admin_token"])
        for conn, resp in streams:
            seen = list(frames(resp))  # ends (the server closes it), no hang
            assert seen[-1].comment == "the token was revoked"
            assert all(f.event not in ("token_revoked", "spectator_revoked") for f in seen)
            conn.close()


def test_a_table_stream_ends_when_the_club_token_reading_it_is_revoked(
        db_url: str, tmp_path: Path) -> None:
    """A club owner's or scorer's token reads a club table as its admin (every hidden tile):
    revoking it ends its table streams at once, as it does a viewer's or a spectator's."""
    with serving(cwd=tmp_path, DATABASE_URL=db_url, LOO_RATE_LIMITS="off",
                 LOO_SSE_KEEPALIVE="0.3", LOO_SSE_MAX_SECONDS="4") as base:
        club = new_club(base)
        table = new_table(base, club)
        url = f"{base}/v1/tables/{table['id']}/events"
        for role in ("scorer", "owner", "viewer"):
            status, _, token = call(base, "POST", f"/v1/clubs/{club[0]}/tokens", club[1],
                                    {"role": role, "label": role})
            assert status == 201, token
            head = json_feed(base, f"/v1/tables/{table['id']}/events",
                             table["admin_token"])[-1]["position"]
            conn, resp = open_stream(url, token["token"], str(head), timeout=10)
            resp.readline()  # started
            status, _, _ = call(base, "DELETE", f"/v1/clubs/{club[0]}/tokens/{token['id']}",
                                club[1])
            assert status == 204
            play(base, table, 3)  # what the revoked token must no longer see
            seen = list(frames(resp))  # ends (the server closes it)
            conn.close()
            assert seen[-1].comment == "the token was revoked", (role, seen[-3:])
            assert [f.event for f in seen if f.comment is None] == [], role
