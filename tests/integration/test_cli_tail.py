"""`loo tail` given a bad --url or refused by the service: one line and a non-zero exit."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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


@pytest.fixture
def refusing_server() -> Iterator[str]:
    """A server that answers every request 401 with a problem+json body, as the API does."""

    class Refuse(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            body = json.dumps({"status": 401, "code": "invalid_token",
                               "detail": "this token does not open this table"}).encode()
            self.send_response(401)
            self.send_header("Content-Type", "application/problem+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_loo_tail_says_why_the_service_refused_in_one_line(refusing_server: str) -> None:
    r = CliRunner().invoke(main, ["tail", "t1", "--token", "wrong", "--url", refusing_server])
    assert r.exit_code == 1, r.output
    assert r.output.strip() == "Error: HTTP 401 invalid_token: this token does not open this table"
