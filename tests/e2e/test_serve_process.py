"""`loo serve` as a real process: it answers /healthz, /openapi.json and /readyz over HTTP."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.processes import stop

LOO = str(Path(sys.executable).with_name("loo"))
START_DEADLINE = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url: str, body: Any = None, *, method: str | None = None, raw: bytes | None = None,
          content_type: str = "application/json") -> tuple[int, str, Any]:
    """(status, content type, parsed JSON) for a GET, or a POST when a body is given."""
    data = raw if raw is not None else None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get_content_type(), json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get_content_type(), json.loads(err.read())


@contextmanager
def serving(*args: str, cwd: Path, **env: str) -> Iterator[str]:
    """Start `loo serve ARGS` on a free port; yield its base URL once /healthz answers."""
    port = free_port()
    base = {k: v for k, v in os.environ.items()
            if k not in ("DATABASE_URL", "REDIS_URL", "LOO_QUEUE_PREFIX")}
    log = (cwd / "serve.log").open("w")  # a file, not a pipe: a full pipe would block it
    proc = subprocess.Popen([LOO, "serve", "--port", str(port), *args], cwd=cwd,
                            env={**base, **env}, stdin=subprocess.DEVNULL,
                            stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_DEADLINE
        while True:
            if proc.poll() is not None:
                log.flush()
                output = (cwd / "serve.log").read_text()
                pytest.fail(f"loo serve exited {proc.returncode}:\n{output}")
            try:
                if fetch(url + "/healthz")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"loo serve did not answer /healthz within {START_DEADLINE}s")
            time.sleep(0.1)
        yield url
    finally:
        stop(proc)
        log.close()


def check_serves_spec_and_health(url: str) -> dict[str, Any]:
    assert fetch(url + "/healthz") == (200, "application/json", {"status": "ok"})
    status, _, spec = fetch(url + "/openapi.json")
    assert status == 200 and spec["openapi"].startswith("3.")
    assert "/healthz" in spec["paths"] and "/readyz" in spec["paths"]
    status, ctype, problem = fetch(url + "/no/such/route")
    assert (status, ctype, problem["code"]) == (404, "application/problem+json", "not_found")
    status, _, ready = fetch(url + "/readyz")
    assert status == 200, ready
    return ready


def test_serve_on_the_embedded_default(tmp_path: Path) -> None:
    with serving(cwd=tmp_path) as url:
        ready = check_serves_spec_and_health(url)
        assert ready["store"]["backend"] == "sqlite"
        assert ready["queue"]["backend"] == "inline"
        status, _, created = fetch(url + "/v1/tables", {"seats": [{"name": "Ann"},
                                                                   {"name": "Bob"}]})
        assert status == 201, created
    assert (tmp_path / "loo.db").is_file()  # ./loo.db in the working directory


def test_serve_on_an_explicit_sqlite_file(tmp_path: Path) -> None:
    db = tmp_path / "data" / "ledger.db"
    db.parent.mkdir()
    with serving(cwd=tmp_path, DATABASE_URL=f"sqlite:///{db}") as url:
        assert check_serves_spec_and_health(url)["store"]["backend"] == "sqlite"
    assert db.is_file() and not (tmp_path / "loo.db").exists()


@pytest.mark.postgres
def test_serve_with_gunicorn_workers_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    with serving("--workers", "2", "--threads", "3", cwd=tmp_path, DATABASE_URL=pg_url) as url:
        ready = check_serves_spec_and_health(url)
        assert ready["store"]["backend"] == "postgresql"
        assert ready["queue"]["backend"] == "inline"
        # Several requests spread over both processes; each composes its own store.
        for _ in range(6):
            assert fetch(url + "/readyz")[0] == 200
        log = (tmp_path / "serve.log").read_text()
        assert "2 process(es) x 3 threads" in log
        # The access log: one JSON line per request (LOO_LOG_FORMAT's default), by the app.
        access = '"message": "GET /readyz 200"'
        deadline = time.monotonic() + 10
        while log.count(access) < 7 and time.monotonic() < deadline:
            time.sleep(0.05)  # the lines are written as each request ends
            log = (tmp_path / "serve.log").read_text()
        assert log.count(access) >= 7, log


@pytest.mark.postgres
def test_serve_with_text_logs_keeps_gunicorns_access_log(tmp_path: Path, pg_url: str) -> None:
    with serving("--workers", "2", cwd=tmp_path, DATABASE_URL=pg_url,
                 LOO_LOG_FORMAT="text") as url:
        for _ in range(3):
            assert fetch(url + "/readyz")[0] == 200
        deadline = time.monotonic() + 10
        log = (tmp_path / "serve.log").read_text()
        while log.count('"GET /readyz HTTP/1.1" 200') < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
            log = (tmp_path / "serve.log").read_text()
        assert log.count('"GET /readyz HTTP/1.1" 200') >= 3, log


# ---- errors as a client sees them: problem+json, never a stack trace -----------------------
def assert_problem(answer: tuple[int, str, Any], status: int, code: str) -> None:
    got_status, ctype, body = answer
    assert (got_status, ctype) == (status, "application/problem+json"), answer
    assert body["status"] == status and body["code"] == code, body
    assert {"type", "title", "detail"} <= set(body)
    assert "Traceback" not in json.dumps(body)


def test_http_errors_are_problem_json_over_the_wire(tmp_path: Path) -> None:
    with serving(cwd=tmp_path) as url:
        assert_problem(fetch(url + "/v1/nowhere"), 404, "not_found")
        assert_problem(fetch(url + "/healthz", method="DELETE"), 405, "method_not_allowed")
        assert_problem(fetch(url + "/v1/tables", raw=b'{"seats": ['), 400, "malformed_json")
        assert_problem(fetch(url + "/v1/tables", raw=b"seats=4", content_type="text/plain"),
                       415, "unsupported_media_type")
        assert_problem(fetch(url + "/v1/tables", {"seats": "many"}), 422, "validation_error")


def test_an_unexpected_error_is_a_logged_500_without_a_trace(
        caplog: pytest.LogCaptureFixture) -> None:
    from ledger.api.app import create_app
    from ledger.bootstrap import Settings, bootstrap

    app = create_app(bootstrap(Settings.from_env({"DATABASE_URL": "memory://"})))

    @app.get("/boom")
    def boom() -> Any:
        raise RuntimeError("secret internals")

    r = app.test_client().get("/boom")
    assert_problem((r.status_code, r.mimetype, r.get_json()), 500, "internal_error")
    assert "secret internals" not in r.get_data(as_text=True)
    assert "secret internals" in caplog.text  # logged, with its traceback, for the operator


# ---- request size: a huge body is refused at once, never read ------------------------------
def _raw_exchange(url: str, head: bytes, body: bytes = b"") -> tuple[bytes, float, bool]:
    """Send a raw request; (the answer, seconds to its first byte, closed by the server)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        start = time.monotonic()
        s.sendall(head + body)
        answer = s.recv(65536)
        took = time.monotonic() - start
        s.settimeout(5)
        try:
            while chunk := s.recv(65536):
                answer += chunk
            closed = True
        except TimeoutError:
            closed = False
    return answer, took, closed


@pytest.mark.parametrize("announced", [10 * 1024**3, 9 * 1024 * 1024])
def test_a_body_over_the_cap_is_413_at_once_and_the_connection_closes(
        tmp_path: Path, announced: int) -> None:
    with serving(cwd=tmp_path) as url:
        head = (b"POST /v1/tables HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: " + str(announced).encode() + b"\r\n\r\n")
        answer, took, closed = _raw_exchange(url, head, b'{"seats": [')
        status_line, _, rest = answer.partition(b"\r\n")
        assert b" 413 " in status_line, answer[:300]
        assert b"application/problem+json" in rest and b'"code":"request_entity_too_large"' \
            in rest.replace(b" ", b"")
        assert took < 2.0 and closed  # not a byte more is read; no keep-alive
        assert fetch(url + "/healthz")[0] == 200  # the server is free for others
        status, _, page = fetch(url + "/v1/tables?limit=1")
        assert status in (200, 404, 405)  # whatever the listing says, nothing was created


def test_an_answer_given_before_the_body_was_read_never_says_keep_alive_and_then_closes(
        tmp_path: Path) -> None:
    # A keep-alive client (a club's connection pool) sends its next request on the same
    # connection when the answer says keep-alive; the server must then serve it. gunicorn
    # drains at most 64 KiB of a body the app did not read and closed the connection after
    # answering "Connection: keep-alive", so the next request failed (RemoteDisconnected).
    import http.client

    with serving(cwd=tmp_path) as url:
        port = int(url.rsplit(":", 1)[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        big = b'{"name": "' + b"x" * 200_000 + b'"}'
        cases = [("/v1/clubs/nosuchclub/members", "application/json", 404),
                 ("/v1/clubs/nosuchclub/tables/import", "application/x-ndjson", 404),
                 ("/v1/tables", "text/plain", 415)]
        for path, ctype, status in cases:
            for body in (big, big[:1000]):
                conn.request("POST", path, body=body, headers={"Content-Type": ctype})
                r = conn.getresponse()
                r.read()
                assert r.status == status, (path, r.status)
                # either the connection goes on or the answer said it would not
                conn.request("GET", "/healthz")
                again = conn.getresponse()
                assert (again.status, json.loads(again.read())) == (200, {"status": "ok"})
        # a body the app read keeps the connection alive as before
        conn.request("POST", "/v1/clubs", body=b'{"name": 5}',
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        r.read()
        assert r.status == 422 and r.getheader("Connection") == "keep-alive"
        conn.close()


# ---- slow clients: a trickled request never holds a request thread --------------------------
@pytest.mark.parametrize("workers", ["1", "2"])
def test_fifty_trickling_clients_neither_hold_the_server_nor_stay_connected(
        tmp_path: Path, workers: str) -> None:
    """50 clients sending their request a few bytes at a time: /healthz and a real request
    still answer within a second each, and the server closes every slow connection once its
    time to send the request (LOO_REQUEST_READ_SECONDS) is up."""
    with serving("--workers", workers, cwd=tmp_path, LOO_REQUEST_READ_SECONDS="3") as url:
        host, port = url.removeprefix("http://").split(":")
        slow = []
        for _ in range(50):
            s = socket.create_connection((host, int(port)), timeout=10)
            s.sendall(b"POST /v1/tables HTTP/1.1\r\nHost: x\r\n")  # and then, very slowly...
            slow.append(s)
        opened = time.monotonic()
        for s in slow:
            s.sendall(b"X-")
        for _ in range(3):
            start = time.monotonic()
            assert fetch(url + "/healthz")[0] == 200
            status, _, body = fetch(url + "/v1/tables", {"seats": [{"name": n} for n in "ABC"]})
            assert status == 201, body
            assert time.monotonic() - start < 1.0
        # Every slow connection is closed by the server: its recv sees EOF (or a reset).
        for s in slow:
            s.settimeout(max(0.5, opened + 3 + 5 - time.monotonic()))
            try:
                while s.recv(4096):
                    pass
            except ConnectionResetError:
                pass
            s.close()
        assert time.monotonic() - opened < 3 + 5


def test_a_request_sent_in_pieces_within_the_time_is_served(tmp_path: Path) -> None:
    with serving(cwd=tmp_path, LOO_REQUEST_READ_SECONDS="5") as url:
        host, port = url.removeprefix("http://").split(":")
        body = json.dumps({"seats": [{"name": n} for n in "ABC"]}).encode()
        request = (b"POST /v1/tables HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        with socket.create_connection((host, int(port)), timeout=10) as s:
            for i in range(0, len(request), 7):
                s.sendall(request[i:i + 7])
            answer = s.recv(65536)
        assert answer.startswith(b"HTTP/1.1 201 "), answer[:200]


# ---- binding: the CLI's own error, and "serving on" only once the port is ours -------------
def test_a_port_in_use_is_one_error_line_and_exit_2_at_once(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
        start = time.monotonic()
        done = subprocess.run([LOO, "serve", "--port", str(port)], cwd=tmp_path, env=env,
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=60)
        took = time.monotonic() - start
    assert done.returncode == 2, done
    assert done.stderr.decode().splitlines() == [
        f"error: cannot listen on 127.0.0.1:{port}: Address already in use"], done.stderr
    assert done.stdout == b""
    assert took < 5  # gunicorn itself retried for 5 s, then exited 1 with its own lines


def test_serving_on_names_the_bound_port_and_it_accepts_at_once(tmp_path: Path) -> None:
    """--port 0: the line names the port the kernel chose, and that port already listens
    when the line is written (it used to be printed before gunicorn had bound)."""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen([LOO, "serve", "--port", "0"], cwd=tmp_path, env=env,
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_DEADLINE
        line = ""
        while not line:
            assert proc.poll() is None and time.monotonic() < deadline, \
                (tmp_path / "serve.log").read_text()
            line = next((x for x in (tmp_path / "serve.log").read_text().splitlines()
                         if x.startswith("loo: serving on ")), "")
            time.sleep(0.02)
        url = line.removeprefix("loo: serving on ").split(",")[0]
        host, port = url.removeprefix("http://").split(":")
        assert host == "127.0.0.1" and int(port) > 0, line
        socket.create_connection((host, int(port)), timeout=5).close()  # listening already
        while True:  # and it is the server: /healthz answers once a worker is up
            try:
                assert fetch(url + "/healthz")[0] == 200
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
    finally:
        stop(proc)
        log.close()


def test_listen_picks_the_family_as_gunicorn_did() -> None:
    from ledger.bootstrap import ConfigError
    from ledger.cli.main import listen

    for host, family in (("localhost", socket.AF_INET), ("127.0.0.1", socket.AF_INET),
                         ("::1", socket.AF_INET6), ("[::1]", socket.AF_INET6)):
        try:
            s = listen(host, 0)
        except ConfigError:
            if family == socket.AF_INET6:
                continue  # a machine without IPv6
            raise
        with s:
            assert s.family == family, host
    with pytest.raises(ConfigError, match="--host"):
        listen("no-such-host.invalid", 0)
    # A label over 63 characters: the resolver's UnicodeError was a traceback, status 1.
    with pytest.raises(ConfigError, match="^--host: 'a{57}...' is not a host name"):
        listen("a" * 64 + ".example", 0)


def test_requests_over_gunicorns_limits_are_problem_json_too(tmp_path: Path) -> None:
    """API.md: errors are application/problem+json; an address or headers over the server's
    limits were refused by gunicorn with an HTML page (414, 431, 400)."""
    with serving(cwd=tmp_path) as url:
        for head, status, code in (
                (b"GET /v1/tables/" + b"a" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414,
                 "request_uri_too_large"),
                (b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 9000 + b"\r\n\r\n",
                 431, "request_header_fields_too_large"),
                (b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"".join(
                    b"X-%d: 1\r\n" % i for i in range(200)) + b"\r\n", 431,
                 "request_header_fields_too_large"),
                (b"G\x00T / HTTP/1.1\r\n\r\n", 400, "bad_request")):
            answer, _, _ = _raw_exchange(url, head)
            top, _, body = answer.partition(b"\r\n\r\n")
            assert top.split(b"\r\n")[0].split(b" ")[1] == str(status).encode(), top
            assert b"content-type: application/problem+json" in top.lower(), top
            problem = json.loads(body)
            assert (problem["status"], problem["code"]) == (status, code), problem
            assert problem["type"] == f"/docs/http#problem-{code}"
        assert fetch(url + "/healthz")[0] == 200


def test_a_content_length_of_thousands_of_digits_is_a_400_and_the_worker_lives_on(
        tmp_path: Path) -> None:
    """Past 4300 digits Python's int() refuses a string: the worker's check for a whole
    request (request_arrived) raised on such a Content-Length and the gunicorn worker process
    died with every stream and request it held. Now the parser refuses the head (400
    problem+json) and an event stream opened before goes on."""
    with serving(cwd=tmp_path, LOO_SSE_KEEPALIVE="0.2") as url:
        status, _, created = fetch(url + "/v1/tables", {
            "variant": "loo", "scoring": "pool", "first_dealer": 0, "deal": "shuffled",
            "seats": [{"name": n} for n in ("Ann", "Bob", "Cat")]})
        assert status == 201, created
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as stream:
            stream.sendall(f"GET /v1/tables/{created['id']}/events HTTP/1.1\r\nHost: x\r\n"
                           f"Accept: text/event-stream\r\nAuthorization: Bearer "
                           f"{created['admin_token']}\r\n\r\n".encode())
            assert stream.recv(65536).startswith(b"HTTP/1.1 200")
            for digits in (4301, 5000, 8000):
                answer, _, _ = _raw_exchange(url, (
                    b"POST /v1/clubs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Content-Length: " + b"9" * digits + b"\r\n\r\n{}"))
                top, _, body = answer.partition(b"\r\n\r\n")
                assert top.startswith(b"HTTP/1.1 400"), (digits, answer[:200])
                assert b"content-type: application/problem+json" in top.lower(), top
            stream.settimeout(3)
            time.sleep(0.5)
            assert b": keepalive" in stream.recv(65536)  # the stream's worker is alive
        assert fetch(url + "/healthz")[0] == 200


def _read(url: str, token: str) -> tuple[int, Any]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def _posted(url: str, body: Any, token: str | None = None) -> Any:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={
        "Content-Type": "application/json", **({"Authorization": f"Bearer {token}"}
                                               if token else {})})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 201
        return json.loads(r.read())


@pytest.mark.parametrize("engine", ["sqlite",
                                    pytest.param("postgres", marks=pytest.mark.postgres)])
def test_lists_a_cursor_pages_on_every_process_and_after_a_restart(
        tmp_path: Path, engine: str, request: pytest.FixtureRequest) -> None:
    """API.md Lists: a cursor is the `next` of the page before, whichever process of the
    deployment answers it (two `loo serve`, one with two gunicorn workers) and after they
    restart: it is sealed with the database's secret, not a process's. A forged one is a 422
    on each of them."""
    db = (f"sqlite:///{tmp_path}/shared.db" if engine == "sqlite"
          else request.getfixturevalue("pg_url"))
    one, two, three = (tmp_path / n for n in ("one", "two", "three"))
    for d in (one, two, three):
        d.mkdir()
    with serving(cwd=one, DATABASE_URL=db) as a, \
            serving("--workers", "2", cwd=two, DATABASE_URL=db) as b:
        club = _posted(a + "/v1/clubs", {"name": "Red Lion"})
        members = f"/v1/clubs/{club['id']}/members"
        tag = hashlib.sha256(repr((members, [])).encode()).hexdigest()[:10]
        forged = base64.urlsafe_b64encode(f"o:1:{tag}".encode()).decode().rstrip("=")
        for name in ("Ann", "Bob", "Cat"):
            _posted(a + members, {"name": name}, club["token"])
        status, page = _read(f"{a}{members}?limit=1", club["token"])
        assert status == 200 and page["next"], page
        cursor = page["next"]
        for base in (b, b, b, a):  # b's two processes, whichever takes each request
            status, rest = _read(f"{base}{members}?cursor={cursor}", club["token"])
            assert status == 200, rest
            assert [m["name"] for m in rest["items"]] == ["Bob", "Cat"]
            status, problem = _read(f"{base}{members}?cursor={forged}", club["token"])
            assert (status, problem["code"]) == (422, "invalid_cursor"), problem
    with serving(cwd=three, DATABASE_URL=db) as c:  # every process restarted
        status, rest = _read(f"{c}{members}?cursor={cursor}", club["token"])
        assert status == 200 and [m["name"] for m in rest["items"]] == ["Bob", "Cat"], rest
