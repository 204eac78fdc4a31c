"""`loo tail` given a bad --url or refused by the service: one line and a non-zero exit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from click.testing import CliRunner

from ledger.cli.main import main


@pytest.mark.parametrize("url", ["http://[::1", "http://127.0.0.1:99999", "notaurl",
                                 "ftp://127.0.0.1:8000", "http://:8000"])
def test_loo_tail_names_a_bad_url_in_one_line(url: str) -> None:
    # Before: urlsplit's ValueError as a traceback ("Invalid IPv6 URL", "Port out of range"),
    # or a "connection refused" from 127.0.0.1 for a URL without a host.
    r = CliRunner().invoke(main, ["tail", "t1", "--token", "x", "--url", url])
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    assert "--url" in r.output and "is not an http:// or https:// URL" in r.output


@pytest.mark.parametrize(("url", "said"), [
    ("http://" + "a" * 64 + ".example:8000", "'" + "a" * 57 + "...' is not a host name"),
    ("http://127.0.0.1:1?x=1", "takes no query or fragment"),
    ("http://127.0.0.1:1#top", "takes no query or fragment"),
    ("http://ann:secret@127.0.0.1:1", "takes no user or password"),
    ("http://local host:1", "holds no spaces or control characters")])
def test_loo_tail_refuses_a_url_it_could_not_follow_as_given(url: str, said: str) -> None:
    # Before: a host label over 63 characters was a traceback (UnicodeError from the
    # resolver); the query took the feed's path into itself (GET /?x=1/v1/tables/...); a
    # password was never sent but shown in "cannot follow http://ann:secret@..."; a space
    # failed only at the request. Each was status 1, as if the service had refused.
    r = CliRunner().invoke(main, ["tail", "t1", "--token", "x", "--url", url])
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    assert "Invalid value for '--url'" in r.output and said in r.output, r.output
    assert "secret" not in r.output


@pytest.mark.parametrize(("args", "status", "said"), [
    (["", "--token", "x"], 2, "Invalid value for 'TABLE': an empty id names no table"),
    (["--club", "", "--token", "x"], 2, "Invalid value for '--club': an empty id names no club"),
    (["t\udcff", "--token", "x"], 1, "Error: no table 't\\udcff'"),
    (["--club", "c\udcff", "--token", "x"], 1, "Error: no club 'c\\udcff'"),
    (["t1", "--token", ""], 2, "Invalid value for '--token': a token is printable ASCII")])
def test_loo_tail_refuses_an_id_or_token_that_names_nothing(args: list[str], status: int,
                                                            said: str) -> None:
    # Before: --club "" followed /v1/tables/None/events; an id of bytes that are not UTF-8
    # (as `loo replay` says of it: no table) was a traceback (UnicodeEncodeError); an empty
    # TABLE or token went to the service, which could only refuse them.
    r = CliRunner().invoke(main, ["tail", *args, "--url", "http://127.0.0.1:1"])
    assert r.exit_code == status, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), r.exception
    assert said in r.output, r.output


class _Quiet(BaseHTTPRequestHandler):
    """A handler that logs nothing and answers whole bodies."""

    def answer(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Serve `handler` on a spare loopback port while the caller's generator is open."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def refusing_server() -> Iterator[str]:
    """A server that answers every request 401 with a problem+json body, as the API does."""

    class Refuse(_Quiet):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.answer(401, "application/problem+json", json.dumps({
                "status": 401, "code": "invalid_token",
                "detail": "this token does not open this table"}).encode())

    yield from _serving(Refuse)


def test_loo_tail_says_why_the_service_refused_in_one_line(refusing_server: str) -> None:
    r = CliRunner().invoke(main, ["tail", "t1", "--token", "wrong", "--url", refusing_server])
    assert r.exit_code == 1, r.output
    assert r.output.strip() == "Error: HTTP 401 invalid_token: this token does not open this table"


class _Feed(_Quiet):
    """An event stream of two events that then stays open (keep-alive comments), recording
    each request's path and Authorization; /missing answers a bare 404, as a server that is
    not the service does."""

    seen: list[tuple[str, str | None]] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        type(self).seen.append((self.path, self.headers.get("Authorization")))
        if self.path.startswith("/missing"):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for n in (1, 2):
            doc = {"version": n, "type": "seat_filled", "hand": None, "data": {"seat": n}}
            self.wfile.write(f"id: {n}\nevent: seat_filled\ndata: {json.dumps(doc)}\n\n"
                             .encode())
        try:
            while True:
                self.wfile.write(b": keep-alive\n\n")
                self.wfile.flush()
                threading.Event().wait(0.05)
        except OSError:
            pass


@pytest.fixture
def feed() -> Iterator[str]:
    _Feed.seen = []
    yield from _serving(_Feed)


@pytest.mark.parametrize(("args", "path"), [
    (["tåble☃"], "/v1/tables/t%C3%A5ble%E2%98%83/events"),
    (["a b"], "/v1/tables/a%20b/events"),
    (["../clubs/x"], "/v1/tables/..%2Fclubs%2Fx/events"),
    # (--after 0: a club is otherwise shown from its last events, read as JSON first.)
    (["--club", "club 1", "--after", "0"], "/v1/clubs/club%201/events")])
def test_loo_tail_sends_any_id_as_one_path_segment(feed, args, path) -> None:
    """A table id with a letter beyond ASCII or a space ended in a traceback
    (UnicodeEncodeError, InvalidURL), and "../clubs/x" followed another URL."""
    import signal

    done = _tail(feed, args, stop=signal.SIGINT)
    assert _Feed.seen[0] == (path, "Bearer t0k"), _Feed.seen
    assert done.returncode == 130, done.stderr


@pytest.mark.parametrize("token", ["a\nb", "☃", "two words"])
def test_loo_tail_refuses_a_token_no_header_can_carry(token) -> None:
    r = CliRunner().invoke(main, ["tail", "t1", "--token", token])
    assert r.exit_code == 2, r.output
    assert "Invalid value for '--token': a token is printable ASCII, without spaces" in r.output


def test_loo_tail_refuses_a_position_beyond_any_stream() -> None:
    r = CliRunner().invoke(main, ["tail", "t1", "--token", "x", "--after", str(2**63)])
    assert r.exit_code == 2 and "Invalid value for '--after'" in r.output, r.output


@pytest.mark.parametrize(("args", "said"), [
    (["--latest", "0"], "0 is not in the range 1<=x<=500"),
    (["--latest", "501"], "501 is not in the range 1<=x<=500"),
    (["--latest", "x"], "'x' is not a valid integer"),
    (["--latest", "-1"], "-1 is not in the range"),
    (["--latest", "3", "--after", "5"], "--latest reads the last events, then follows on"),
    (["--after", "5", "--latest", "3"], "--after starts at a position: give one of them")])
def test_loo_tail_refuses_a_bad_latest_in_one_line(args: list[str], said: str) -> None:
    for where in (["t1"], ["--club", "c1"]):
        r = CliRunner().invoke(main, ["tail", *where, "--token", "x", *args,
                                      "--url", "http://127.0.0.1:1"])
        assert r.exit_code == 2, r.output
        errors = [line for line in r.output.splitlines() if line.startswith("Error")]
        assert len(errors) == 1 and "Invalid value for '--latest'" in errors[0], r.output
        assert said in errors[0], r.output


def test_loo_tail_latest_says_when_the_url_answers_but_not_as_the_service(feed) -> None:
    """A club is shown from its last events (?latest=10) first: an answer that is not a
    page of the service's (here an event stream, which is never read) is said in one
    line, status 1, as a refusal is."""
    for args in (["--club", "c1"], ["t1", "--latest", "2"]):
        cmd = [sys.executable, "-c", "from ledger.cli.main import main; main()", "tail", *args,
               "--url", feed, "--token", "t0k"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            out, err = proc.communicate(timeout=30)  # (it followed the stream for ever)
        finally:
            proc.kill()
        assert (proc.returncode, out) == (1, b""), err
        latest = "10" if args[0] == "--club" else "2"
        path = "clubs/c1" if args[0] == "--club" else "tables/t1"
        assert err.decode().strip() == (
            f"Error: HTTP 200 from {feed}/v1/{path}/events?latest={latest}, which is not the "
            "service's answer: is --url the loo service (e.g. http://127.0.0.1:8000)?")


def test_loo_tail_says_when_the_url_answers_but_not_as_the_service(feed) -> None:
    """A 404 without the service's problem+json (another server, a wrong path) said only
    "Error: HTTP 404: "."""
    r = CliRunner().invoke(main, ["tail", "t1", "--token", "x", "--url", feed + "/missing"])
    assert r.exit_code == 1, r.output
    assert r.output.strip() == (
        f"Error: HTTP 404 from {feed}/missing/v1/tables/t1/events, which is not the "
        "service's answer: is --url the loo service (e.g. http://127.0.0.1:8000)?")


def _tail(url: str, args: list[str], *, stop: Any = None,
          stdout: Any = subprocess.PIPE) -> subprocess.CompletedProcess:
    """`loo tail ARGS` against `url`; `stop`: a signal sent once its first line is out."""
    cmd = [sys.executable, "-c", "from ledger.cli.main import main; main()", "tail", *args,
           "--url", url, "--token", "t0k"]
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE)
    if stop is not None:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith(b"1 v1 seat_filled"), first
        proc.send_signal(stop)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err.decode())


def test_loo_tail_ends_on_ctrl_c_with_130_and_on_a_closed_pipe_with_141(feed) -> None:
    """README Configuration: Ctrl-C ends any command with 130 (`interrupted`); `loo tail`
    exited 0, saying nothing. `loo tail ... | head -1` said "Error: cannot follow ...:
    [Errno 32] Broken pipe", status 1; a reader that leaves now ends it quietly, 141, as
    every loo command."""
    import signal

    done = _tail(feed, ["t1"], stop=signal.SIGINT)
    assert done.returncode == 130, done.stderr
    assert done.stderr == "\ninterrupted\n"
    read, write = os.pipe()
    os.close(read)
    try:
        done = _tail(feed, ["t1"], stdout=write)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")


class _Restarting(_Quiet):
    """A feed that sends the events after Last-Event-ID it has, then ends the stream (as the
    service's does after LOO_SSE_MAX_SECONDS)."""

    events: list[int] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        after = int(self.headers.get("Last-Event-ID") or 0)
        self.answer(200, "text/event-stream", b"".join(
            f"id: {n}\nevent: seat_filled\ndata: {json.dumps({'version': n, 'data': {}})}\n\n"
            .encode() for n in type(self).events if n > after))


def test_loo_tail_waits_out_a_restarted_service_and_goes_on_where_it_was() -> None:
    """README: `loo tail` reconnects by itself. Once it had followed a stream, a service
    restarted under it (a refused connection while it was down) ended it: "Error: cannot
    follow ...: Connection refused", status 1. Now it says once that the service does not
    answer, and goes on after the last event shown when it answers again."""
    import signal
    import time

    def serve(port: int = 0) -> ThreadingHTTPServer:
        server = ThreadingHTTPServer(("127.0.0.1", port), _Restarting)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        return server

    _Restarting.events = [1, 2]
    server = serve()
    port = server.server_address[1]
    cmd = [sys.executable, "-c", "from ledger.cli.main import main; main()", "tail", "t1",
           "--url", f"http://127.0.0.1:{port}", "--token", "t0k"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    try:
        assert [proc.stdout.readline()[:4] for _ in range(2)] == [b"1 v1", b"2 v2"]
        server.shutdown()
        server.server_close()  # the service is away: connections are refused
        said = proc.stderr.readline().decode()
        assert said.startswith(f"loo tail: http://127.0.0.1:{port} does not answer (")
        assert said.endswith("; trying again until it does (Ctrl-C to stop)\n"), said
        _Restarting.events = [1, 2, 3]
        deadline = time.monotonic() + 10
        while True:
            try:
                server = serve(port)
                break
            except OSError:  # the port not free yet
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert proc.stdout.readline()[:4] == b"3 v3"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        assert proc.returncode == 130, err
        assert out == b"" and err.decode() == "\ninterrupted\n"
    finally:
        proc.kill()
        server.shutdown()
        server.server_close()
