"""The gthread worker of `loo serve --workers N` leaves new connections to idler workers."""

from __future__ import annotations

import socket
from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("gunicorn.workers.gthread")
from gunicorn.workers.gthread import ThreadWorker  # noqa: E402

from ledger.cli.main import worker_class  # noqa: E402

pytestmark = pytest.mark.skipif(not hasattr(ThreadWorker, "set_accept_enabled"),
                                reason="gunicorn < 27 runs plain gthread")


class Pool:
    """A thread pool that runs nothing: each request stays in flight until finished."""

    def __init__(self) -> None:
        self.futures: list[Future[Any]] = []

    def submit(self, fn: Any, conn: Any) -> Future[Any]:
        f: Future[Any] = Future()
        self.futures.append(f)
        return f


class Conn:
    closed = False

    def close(self, graceful: bool = False) -> None:
        self.closed = True


def _worker(threads: int, counts: Any = None) -> Any:
    from ledger.serve.gunicorn_worker import BalancedThreadWorker

    w = BalancedThreadWorker.__new__(BalancedThreadWorker)  # no arbiter, no config file
    w.cfg = SimpleNamespace(threads=threads)
    w.request_threads, w.stream_threads, w.stream_pool, w.streaming = threads, 0, None, 0
    w.counts, w.held_back = counts, False
    w.alive, w.in_flight, w.nr_conns, w.worker_connections = True, 0, 0, 1000
    w._accepting = False
    w.reading, w.read_seconds = {}, 10.0
    w.tpool = Pool()
    w.method_queue = SimpleNamespace(defer=lambda fn, *args: None)
    w.poller = SimpleNamespace(registered=set(), register=lambda s, *a: w.poller.registered.add(s),
                               unregister=lambda s: w.poller.registered.discard(s))
    listener = socket.socket()
    w.sockets = [listener]
    return w, listener


def test_serve_uses_the_balanced_worker():
    assert worker_class() == "ledger.serve.gunicorn_worker.BalancedThreadWorker"


def test_a_worker_with_every_thread_busy_stops_accepting_until_one_is_free():
    w, listener = _worker(threads=2)
    try:
        w.set_accept_enabled(True)
        assert listener in w.poller.registered
        conns = [Conn(), Conn()]
        for c in conns:
            w.nr_conns += 1
            w.enqueue_req(c)
        assert w.in_flight == 2 and listener not in w.poller.registered
        w.set_accept_enabled(True)  # what run() asks on each turn of its loop
        assert listener not in w.poller.registered
        w.tpool.futures[0].set_result(False)  # answered; the client closes
        w.finish_request(conns[0], w.tpool.futures[0])
        assert w.in_flight == 1 and listener in w.poller.registered and conns[0].closed
    finally:
        listener.close()


def test_a_stopping_worker_does_not_start_accepting_again():
    w, listener = _worker(threads=1)
    try:
        w.nr_conns += 1
        w.enqueue_req(Conn())
        w.alive = False
        w.tpool.futures[0].set_result(False)
        w.finish_request(Conn(), w.tpool.futures[0])
        assert listener not in w.poller.registered
    finally:
        listener.close()


# ---- balance across the workers of one server ------------------------------------------

def _other_worker(counts: Any, connections: int) -> Any:
    """Another live worker of the same server, holding `connections` connections."""
    import multiprocessing

    ready, go = multiprocessing.Event(), multiprocessing.Event()

    def child() -> None:
        counts.claim()
        counts.publish(connections)
        ready.set()
        go.wait(30)

    proc = multiprocessing.get_context("fork").Process(target=child, daemon=True)
    proc.start()
    assert ready.wait(10)
    return proc, go


def test_connection_counts_are_shared_with_forked_workers_and_forget_dead_ones():
    from ledger.serve.gunicorn_worker import ConnectionCounts

    counts = ConnectionCounts(slots=4)
    assert not counts.fewer_elsewhere(5)  # alone
    proc, go = _other_worker(counts, 3)
    try:
        assert counts.claim()
        counts.publish(5)
        # Written by the other process: 3 is fewer than 4 or 5, not than 3 or 2.
        assert counts.fewer_elsewhere(4) and counts.fewer_elsewhere(5)
        assert not counts.fewer_elsewhere(3) and not counts.fewer_elsewhere(2)
    finally:
        go.set()
        proc.join(10)
    assert not counts.fewer_elsewhere(5)  # its worker died: its slot no longer counts
    proc2, go2 = _other_worker(counts, 1)  # a replacement reclaims a slot
    try:
        assert counts.fewer_elsewhere(2)
    finally:
        go2.set()
        proc2.join(10)


def test_a_worker_holding_more_connections_than_another_leaves_new_ones_to_it():
    from ledger.serve.gunicorn_worker import BALANCE_RECHECK, ConnectionCounts

    counts = ConnectionCounts(slots=4)
    proc, go = _other_worker(counts, 2)
    w, listener = _worker(threads=2, counts=counts)
    try:
        assert counts.claim()
        w.nr_conns = 2
        w.set_accept_enabled(True)  # 2 against 2: it accepts
        assert listener in w.poller.registered and not w.held_back
        w.nr_conns = 3  # it accepted one more, now idle again
        w.set_accept_enabled(True)
        assert listener not in w.poller.registered and w.held_back
        waited: list[float] = []
        w.poller.select = lambda timeout: waited.append(timeout) or []
        w.wait_for_and_dispatch_events(timeout=1.0)  # what run() asks each turn
        assert waited == [BALANCE_RECHECK]  # looks again soon, not in a second
        go.set()
        proc.join(10)  # the other worker is gone: this one takes every connection
        w.set_accept_enabled(True)
        assert listener in w.poller.registered and not w.held_back
    finally:
        go.set()
        listener.close()


# ---- the access log ----------------------------------------------------------------------

def _access_line(logger_class: Any, access_format: str | None = None) -> str:
    """The access line a logger writes for one request, formatted as gunicorn does."""
    import datetime

    from gunicorn.config import Config

    cfg = Config()
    if access_format is not None:
        cfg.set("access_log_format", access_format)
    logger = logger_class(cfg)
    logger.now = lambda: "[23/Nov/2026:06:26:18 +0000]"  # both at the same instant
    environ = {"REQUEST_METHOD": "POST", "RAW_URI": "/v1/tables/t1/actions?x=1",
               "PATH_INFO": "/v1/tables/t1/actions", "QUERY_STRING": "x=1",
               "SERVER_PROTOCOL": "HTTP/1.1", "REMOTE_ADDR": "10.0.0.7",
               "HTTP_USER_AGENT": 'club "scorer" 2.1', "HTTP_AUTHORIZATION": "Bearer abc"}
    resp = SimpleNamespace(status="409 Conflict", sent=731,
                           headers=[("Content-Type", "application/problem+json")])
    req = SimpleNamespace(headers=[("HOST", "loo.example"), ("X-REQUEST-ID", "r-42")])
    took = datetime.timedelta(seconds=1, microseconds=2345)
    atoms = logger.atoms_wrapper_class(logger.atoms(resp, req, environ, took))
    return str(cfg.access_log_format % atoms)


@pytest.mark.parametrize("access_format", [
    None,  # gunicorn's default, which `loo serve` uses
    '%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s" %(m)s %(U)s %(q)s %(H)s '
    '%(B)s %(T)s %(D)s %(M)s %(L)s %(p)s',  # every plain atom
    '%(h)s "%(r)s" %(s)s %({x-request-id}i)s %({content-type}o)s %({remote_addr}e)s',
])
def test_the_access_logger_writes_gunicorns_own_line(access_format):
    from gunicorn.glogging import Logger

    from ledger.serve.gunicorn_worker import AccessLogger

    ours = _access_line(AccessLogger, access_format)
    assert ours == _access_line(Logger, access_format)
    assert '"POST /v1/tables/t1/actions?x=1 HTTP/1.1" 409' in ours


def test_serve_logs_access_through_the_lean_logger():
    from ledger.bootstrap import Settings
    from ledger.cli.main import GunicornApp

    app = GunicornApp(Settings(database_url="sqlite:///:memory:", log_format="text"),
                      {"bind": "127.0.0.1:0"})
    assert app.cfg.logger_class.__name__ == "AccessLogger"
    assert app.cfg.accesslog == "-"
    # JSON logs (the default): the app writes each access line itself, gunicorn none.
    json_logs = GunicornApp(Settings(database_url="sqlite:///:memory:"), {"bind": "127.0.0.1:0"})
    assert json_logs.cfg.accesslog is None


def test_a_request_has_arrived_once_its_head_and_announced_body_have():
    from ledger.serve.gunicorn_worker import BUFFER_BODY_MAX, HEAD_MAX, request_arrived

    head = b"POST /v1/tables HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"
    assert not request_arrived(head[:20])
    assert not request_arrived(head) and not request_arrived(head + b"abc")
    assert request_arrived(head + b"abcde")
    assert request_arrived(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert request_arrived(b"POST / HTTP/1.1\r\ncontent-length : 0\r\n\r\n")
    # What the thread reads itself: chunked bodies, bodies over the buffer, endless heads.
    assert request_arrived(b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n")
    big = f"POST / HTTP/1.1\r\nContent-Length: {BUFFER_BODY_MAX + 1}\r\n\r\n".encode()
    assert request_arrived(big)
    assert request_arrived(b"GET / HTTP/1.1\r\nX: " + b"a" * HEAD_MAX)
    # A Content-Length int() refuses (over 4300 digits) is the parser's to refuse, no raise.
    assert request_arrived(b"POST / HTTP/1.1\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n")
    assert not request_arrived(b"POST / HTTP/1.1\r\nContent-Length: 0005\r\n\r\nab")


class KeptAlive:
    """A keep-alive connection (a socket pair's server end) as the worker holds it."""

    def __init__(self) -> None:
        self.sock, self.client = socket.socketpair()
        self.sock.setblocking(False)  # as gunicorn leaves a kept-alive connection
        self.prebuffered: bytes | None = None
        self.data_ready = False
        self.closed = False

    def close(self, graceful: bool = False) -> None:
        self.closed = True
        self.sock.close()
        self.client.close()


def _keepalive_worker() -> tuple[Any, KeptAlive]:
    import collections

    w, listener = _worker(threads=2)
    w.listener = listener  # closed by the test
    w.cfg.is_ssl = False
    conn = KeptAlive()
    w.nr_conns = 1
    w.keepalived_conns = collections.deque([conn])
    w.poller.registered.add(conn.sock)
    return w, conn


def test_a_kept_alive_request_already_whole_goes_to_a_thread_in_the_same_turn():
    w, conn = _keepalive_worker()
    try:
        request = b"POST /v1/tables/t/actions HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}"
        conn.client.sendall(request)
        w.on_client_socket_readable(conn, conn.sock)
        # Handed over at once: not registered again to wait for what has already come.
        assert len(w.tpool.futures) == 1 and w.in_flight == 1
        assert conn.prebuffered == request and conn.sock not in w.poller.registered
        assert conn not in w.reading and not w.keepalived_conns
    finally:
        conn.close()
        w.listener.close()


def test_a_kept_alive_request_not_yet_whole_waits_on_the_loop_for_the_rest():
    w, conn = _keepalive_worker()
    try:
        conn.client.sendall(b"POST /v1/tables/t/actions HTTP/1.1\r\nContent-Le")
        w.on_client_socket_readable(conn, conn.sock)
        assert not w.tpool.futures and conn.sock in w.poller.registered and conn in w.reading
        conn.client.sendall(b"ngth: 2\r\n\r\n{}")
        w._on_bytes(conn, conn.sock)  # the loop's callback once the rest is readable
        assert len(w.tpool.futures) == 1 and conn.sock not in w.poller.registered
        assert conn.prebuffered is not None and conn.prebuffered.endswith(b"\r\n\r\n{}")
        # A client that goes away before its request is whole is closed and forgotten.
        w2, gone = _keepalive_worker()
        gone.client.close()
        w2.on_client_socket_readable(gone, gone.sock)
        assert gone.closed and not w2.tpool.futures and w2.nr_conns == 0
        w2.listener.close()
    finally:
        conn.close()
        w.listener.close()


def test_the_heartbeat_to_the_arbiter_is_sent_at_most_once_a_second(monkeypatch):
    from ledger.serve import gunicorn_worker

    w, listener = _worker(threads=2)
    listener.close()
    beats: list[float] = []
    w.tmp = SimpleNamespace(notify=lambda: beats.append(now[0]))
    w.notify_every, w._next_notify = 1.0, 0.0
    now = [100.0]
    monkeypatch.setattr(gunicorn_worker.time, "monotonic", lambda: now[0])
    for step in range(30):  # 3 s of turns of the loop, every 0.1 s
        now[0] = 100.0 + step / 10
        w.notify()
    assert beats == [100.0, 101.0, 102.0]


def test_event_streams_run_on_threads_of_their_own_and_requests_on_threads_threads():
    """`loo serve --threads 3` with 32 streams: ordinary requests on 3 threads (accepting stops
    when they are busy), a request for text/event-stream on the stream pool, not counted
    against them; when every stream thread is taken, on the request pool (the feed answers
    503 there)."""
    w, listener = _worker(threads=2)
    w.stream_threads, w.stream_pool = 1, Pool()
    sse = b"GET /v1/tables/t/events HTTP/1.1\r\nAccept: text/event-stream\r\n\r\n"
    plain = b"GET /v1/tables/t HTTP/1.1\r\nAccept: application/json\r\n\r\n"
    try:
        w.set_accept_enabled(True)
        stream = Conn()
        stream.prebuffered = sse
        w.nr_conns += 1
        w.enqueue_req(stream)
        assert len(w.stream_pool.futures) == 1 and not w.tpool.futures
        assert w.streaming == 1 and w.in_flight == 0 and listener in w.poller.registered
        conns = []
        for body in (plain, sse):  # the second stream: the stream thread is taken
            c = Conn()
            c.prebuffered = body
            w.nr_conns += 1
            w.enqueue_req(c)
            conns.append(c)
        assert len(w.tpool.futures) == 2 and w.in_flight == 2
        assert listener not in w.poller.registered  # both request threads busy
        w.stream_pool.futures[0].set_result(False)  # the stream ends; the client closes
        w.finish_request(stream, w.stream_pool.futures[0])
        assert w.streaming == 0 and w.in_flight == 2 and stream.closed
        w.tpool.futures[0].set_result(False)
        w.finish_request(conns[0], w.tpool.futures[0])
        assert w.in_flight == 1 and listener in w.poller.registered
    finally:
        listener.close()


def test_a_request_asks_for_a_stream_by_its_accept_header():
    from ledger.serve.gunicorn_worker import asks_for_stream

    assert asks_for_stream(b"GET /v1/clubs/c/events HTTP/1.1\r\nHost: x\r\n"
                           b"accept: application/json;q=0.5, text/event-stream\r\n\r\n")
    assert not asks_for_stream(b"GET /v1/tables/t/events HTTP/1.1\r\nHost: x\r\n\r\n")
    # Only the head counts, not a body that happens to say it.
    assert not asks_for_stream(b"POST /v1/tables HTTP/1.1\r\nContent-Length: 30\r\n\r\n"
                               b"\r\nAccept: text/event-stream")


def test_serve_gives_ordinary_requests_threads_threads_and_streams_the_rest():
    import os

    from ledger.bootstrap import Settings
    from ledger.cli.main import GunicornApp
    from ledger.serve.gunicorn_worker import BalancedThreadWorker

    app = GunicornApp(Settings(database_url="sqlite:///:memory:"),
                      {"bind": "127.0.0.1:0", "threads": 3 + 32}, request_threads=3)
    w = BalancedThreadWorker(0, os.getpid(), [], app, 30, app.cfg, app.cfg.logger_class(app.cfg))
    try:
        assert (w.request_threads, w.stream_threads) == (3, 32)
        pool = w.get_thread_pool()
        assert pool._max_workers == 3  # noqa: SLF001 - the size gunicorn's pool was given
        pool.shutdown()
    finally:
        w.tmp.close()


def test_a_worker_freezes_what_its_app_loaded_out_of_the_collectors_reach():
    import gc

    w, listener = _worker(threads=1)
    listener.close()
    w.app = SimpleNamespace(wsgi=lambda: (lambda environ, start_response: [b""]))
    gc.unfreeze()
    try:
        w.load_wsgi()
        assert gc.get_freeze_count() > 0  # a full collection no longer walks them
    finally:
        gc.unfreeze()
