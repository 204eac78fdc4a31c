"""The `loo bench api` driver's HTTP client: keep-alive, every body framing, reconnects."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from bench.api import Client

ANSWERS = [
    b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 8\r\n\r\n{"a": 1}',
    b'HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n'
    b'3\r\n{"b\r\n5;x=y\r\n": 2}\r\n0\r\n\r\n',
    b'HTTP/1.1 404 NOT FOUND\r\ncontent-length: 2\r\n\r\n{}',
    b'HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n[1, 2]',  # until the server closes
]


@pytest.fixture
def server() -> Iterator[tuple[int, list[bytes]]]:
    """Answers ANSWERS in turn, one per request, on as many connections as it is given."""
    seen: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))
    answers = iter(ANSWERS * 2)

    def serve() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                buf = b""
                while True:
                    while b"\r\n\r\n" not in buf:
                        chunk = conn.recv(65536)
                        if not chunk:
                            break
                        buf += chunk
                    if b"\r\n\r\n" not in buf:
                        break
                    head, _, rest = buf.partition(b"\r\n\r\n")
                    length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
                    body, buf = rest[:length], rest[length:]
                    seen.append(head.split(b"\r\n")[0] + b" " + body)
                    answer = next(answers)
                    conn.sendall(answer)
                    if b"Connection: close" in answer:
                        break

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1], seen
    listener.close()


def test_the_driver_reads_each_framing_on_one_keep_alive_connection(server):
    port, seen = server
    c = Client(port)
    c.timed = True
    assert c.call("POST", "/x", {"k": 1}, token="t") == (200, {"a": 1})
    first = c.sock
    assert c.call("GET", "/y") == (201, {"b": 2})
    assert c.call("GET", "/z") == (404, {})
    assert c.sock is first  # kept alive so far
    assert c.call("GET", "/w") == (200, [1, 2])
    assert c.sock is None  # the server said close
    assert c.call("GET", "/again") == (200, {"a": 1})  # a new connection
    assert seen[0] == b'POST /x HTTP/1.1 {"k": 1}'
    assert len(c.latencies) == 5 and c.errors == 1  # the 404


def test_a_dead_server_is_an_error_not_a_crash():
    with socket.create_server(("127.0.0.1", 0)) as s:
        port = s.getsockname()[1]
    c = Client(port)
    assert c.call("GET", "/") == (0, None)
    assert c.errors == 1 and c.sock is None


# ---- the scratch schema both servers of `loo bench api` work in -------------------------

def test_in_schema_sets_the_search_path_and_keeps_other_parameters():
    from urllib.parse import parse_qs, urlsplit

    from bench.api import in_schema

    url = in_schema("postgresql://u:p@db.example:5433/loo?sslmode=disable&options=-cjit%3Doff",
                    "loo_bench_api_1")
    parts = urlsplit(url)
    assert (parts.netloc, parts.path) == ("u:p@db.example:5433", "/loo")
    assert parse_qs(parts.query) == {"sslmode": ["disable"],
                                     "options": ["-cjit=off -c search_path=loo_bench_api_1"]}


@pytest.mark.postgres
def test_a_store_opened_through_in_schema_keeps_its_tables_there(pg_url):
    import psycopg

    from bench.api import in_schema
    from ledger.bootstrap import Settings, open_database
    from ledger.store.base import NewEvent

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA loo_bench_api_t")
    try:
        store = open_database(Settings(database_url=in_schema(pg_url, "loo_bench_api_t")))
        try:
            store.append("t1", [NewEvent("table_created", None, {"x": 1})], 0)
        finally:
            store.close()
        with psycopg.connect(pg_url, autocommit=True) as conn:
            found = conn.execute("SELECT table_id FROM loo_bench_api_t.events").fetchall()
        assert found == [("t1",)]
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute("DROP SCHEMA loo_bench_api_t CASCADE")
