"""gunicorn for `loo serve`: a gthread worker that sheds slow clients and balances, and a
lean access log.

Slow clients. gunicorn's gthread hands a connection to a request thread as soon as it is
readable, and the thread then reads the request head and body at whatever pace the client
sends them: six clients trickling a byte a second held every thread of a 2 x 3 server and
took the whole API down. BalancedThreadWorker reads each request's head (and a body up to
BUFFER_BODY_MAX) on its event loop first, without blocking, and hands the connection to a
thread only once the request has fully arrived; a client that has not sent it within
LOO_REQUEST_READ_SECONDS (default 10) is disconnected. Threads then only ever run requests
that are ready, however many clients trickle. (A chunked body, or one over the buffer, is
read by the thread as before: the body cap answers 413 on its announced length first.)

Every worker polls the one listening socket, and a keep-alive connection stays with the
worker that accepted it. When clients connect in a burst, whichever worker is quickest
takes them: 15 of 16 was seen with plain gthread, and 10 or 11 of 16 still happened when
workers accepted only with a thread free. The crowded worker's GIL then serves most
clients (their latency goes up by the ratio) while the other idles. BalancedThreadWorker
accepts a new connection only
- while it has a thread free (with none free anywhere, connections wait in the listen
  backlog as usual), and
- while no other live worker of the same server holds fewer open connections: counts
  kept in memory shared by the workers (ConnectionCounts), so 16 clients split 8/8.
A worker held back by the second rule looks again every BALANCE_RECHECK seconds, so a
connection never waits on a worker that went idle.
"""

from __future__ import annotations

import errno
import gc
import json
import math
import mmap
import multiprocessing
import os
import re
import selectors
import struct
import time
from collections.abc import Mapping
from concurrent import futures
from functools import partial
from typing import Any

from gunicorn import util as gunicorn_util
from gunicorn.glogging import Logger
from gunicorn.workers.gthread import TConn, ThreadWorker

from ledger.bootstrap import ConfigError

BALANCE_RECHECK = 0.005  # seconds: how soon a worker held back for balance looks again
_SLOT = struct.Struct("qq")  # a worker's pid and its open connections
HEAD_MAX = 64 * 1024  # a head this long and unfinished goes to the parser, which refuses it
BUFFER_BODY_MAX = 1024 * 1024  # bodies up to this are read on the event loop too
_CONTENT_LENGTH = re.compile(rb"\r\ncontent-length[ \t]*:[ \t]*(\d+)", re.IGNORECASE)
_CHUNKED = re.compile(rb"\r\ntransfer-encoding[ \t]*:", re.IGNORECASE)


def read_seconds(environ: Mapping[str, str] = os.environ) -> float:
    """How long a client may take to send a whole request (head and buffered body):
    LOO_REQUEST_READ_SECONDS, 0.1 to 3600 seconds (default 10). `loo serve` checks it before
    it listens: a value it cannot read is a configuration error, not a silent 10."""
    raw = environ.get("LOO_REQUEST_READ_SECONDS", "").strip()
    if not raw:
        return 10.0
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not 0.1 <= seconds <= 3600:  # NaN too
        raise ConfigError(f"LOO_REQUEST_READ_SECONDS: {raw!r} is not a number of seconds "
                          "from 0.1 to 3600")
    return seconds


def request_arrived(buf: bytes | bytearray) -> bool:
    """Whether `buf` holds a whole request head and its body (or all the loop will read)."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return len(buf) > HEAD_MAX
    head = bytes(buf[:end + 2])
    if _CHUNKED.search(head):
        return True
    m = _CONTENT_LENGTH.search(head)
    digits = m.group(1).lstrip(b"0") if m else b""
    if len(digits) > 18:  # past BUFFER_BODY_MAX, and int() refuses over 4300 digits
        return True  # the parser answers it (400 or 413), as any body over the buffer
    length = int(digits or b"0")
    return length > BUFFER_BODY_MAX or len(buf) - (end + 4) >= length


_SSE_ACCEPT = re.compile(rb"\r\naccept[ \t]*:[^\r\n]*text/event-stream", re.IGNORECASE)


def body_left_unread(environ: dict[str, Any]) -> bool:
    """Whether the app answered without reading the whole request body (gunicorn's Body:
    a Content-Length reader counts what is left, a chunked one drops its parser at the end)."""
    reader = getattr(environ.get("wsgi.input"), "reader", None)
    if reader is None:
        return False
    left = getattr(reader, "length", None)
    if isinstance(left, int):
        return left > 0
    if hasattr(reader, "finished"):
        return not reader.finished
    return getattr(reader, "parser", None) is not None


def asks_for_stream(buf: bytes) -> bool:
    """Whether a request's head accepts text/event-stream (a feed answers it as a stream)."""
    end = buf.find(b"\r\n\r\n")
    return bool(_SSE_ACCEPT.search(buf, 0, end + 2 if end >= 0 else len(buf)))


def freeze_loaded_objects() -> None:
    """Move everything the worker holds once its app is loaded (modules, the OpenAPI spec,
    schemas, routes: about 93,000 objects for the API) out of the cyclic collector's reach.

    They live as long as the worker, yet every full collection walked them all: 35-75 ms
    on an idle machine, 100-160 ms in `loo bench api`, during which the worker's GIL served
    no request, about once a worker per 20 s of load. Frozen, a full collection walks only
    what was made since (gc.freeze, as the Python docs advise for pre-forked servers).
    Garbage made while loading is collected first, not frozen with the rest."""
    gc.collect()
    gc.freeze()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - another user's process took the pid
        return True
    return True


class ConnectionCounts:
    """The open connections of each worker process of one server, in shared memory.

    Made in the master before it forks its workers (GunicornApp); each worker claims a
    slot when it starts and publishes its own count there. A slot whose process has died
    (a worker killed and replaced) is ignored, then reclaimed by the next worker. Asked on
    every request, so it reads all slots in one unpack and checks a process only when its
    count would hold this worker back.
    """

    def __init__(self, slots: int = 64) -> None:
        self.slots = slots
        self._all = struct.Struct(f"{2 * slots}q")  # pid, count, pid, count, ...
        self._mem = mmap.mmap(-1, self._all.size)  # MAP_SHARED: survives fork shared
        self._lock = multiprocessing.Lock()
        self._slot: int | None = None
        self._published: int | None = None

    def claim(self) -> bool:
        """Take a free slot for this process (in the worker, after the fork)."""
        with self._lock:
            for i in range(self.slots):
                pid, _ = _SLOT.unpack_from(self._mem, i * _SLOT.size)
                if pid in (0, os.getpid()) or not _alive(pid):
                    _SLOT.pack_into(self._mem, i * _SLOT.size, os.getpid(), 0)
                    self._slot, self._published = i, 0
                    return True
        return False  # more workers than slots: this one accepts without balancing

    def publish(self, count: int) -> None:
        if self._slot is not None and count != self._published:
            _SLOT.pack_into(self._mem, self._slot * _SLOT.size, os.getpid(), count)
            self._published = count

    def fewer_elsewhere(self, mine: int) -> bool:
        """Whether another live worker holds fewer open connections than `mine`."""
        if mine == 0:
            return False
        values = self._all.unpack_from(self._mem)
        me = os.getpid()
        return any(count < mine and pid not in (0, me) and _alive(pid)
                   for pid, count in zip(values[0::2], values[1::2], strict=True))


# Kept over stock gthread: `loo bench parts --only worker` p99 69/130/127 ms against
# 101/285/122 (gthread) and 93/195/127 (gthread + reuse_port), three runs; the balance is
# not always visible, but stock gthread never sheds slow clients (test_serve_process.py).
# gunicorn's own refusals, before the application sees a request (a request line or headers
# over its limits, a request it cannot parse), by the code the HTTP guide lists for them.
GUNICORN_CODES = {400: "bad_request", 403: "forbidden", 414: "request_uri_too_large",
                  417: "expectation_failed", 431: "request_header_fields_too_large",
                  500: "internal_error", 501: "not_implemented"}


def write_problem(sock: Any, status_int: int, reason: str, mesg: str) -> None:
    """gunicorn.util.write_error as application/problem+json (RFC 9457), like every other
    error of the API, instead of an HTML page. `type` is relative: the request line that
    would name the host may be what was refused."""
    code = GUNICORN_CODES.get(status_int, re.sub(r"[^a-z0-9]+", "_", reason.lower()))
    body = json.dumps({"type": f"/docs/http#problem-{code}", "title": reason,
                       "status": status_int, "detail": mesg[:500], "code": code}).encode()
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\n"
            f"Content-Type: application/problem+json\r\nContent-Length: {len(body)}\r\n\r\n")
    gunicorn_util.write_nonblock(sock, head.encode("latin1") + body)


class BalancedThreadWorker(ThreadWorker):  # type: ignore[misc]
    """gthread, reading requests on the event loop first (slow clients), balancing
    connections across workers, and running event streams (SSE) on threads of their own.

    Event streams. `loo serve` asks gunicorn for --threads + LOO_SSE_MAX_STREAMS threads; in
    one pool, every request could run on any of them, so a worker ran as many requests at
    once as it held connections (8 of the api bench's 16 on 35 threads, not 3: more turns
    on the GIL, and the bare app it is measured against had 3). Here ordinary requests run
    on a pool of --threads (GunicornApp.request_threads) and a request asking for
    text/event-stream, seen in its head on the loop, on a pool of the rest, while one is
    free (else on the request pool, where the feed answers 503 once its streams are all
    taken).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.in_flight = 0  # requests handed to the request pool, not finished
        asked = getattr(self.app, "request_threads", None)  # set by GunicornApp
        self.request_threads = asked if isinstance(asked, int) and 0 < asked < self.cfg.threads \
            and not self.cfg.is_ssl else self.cfg.threads
        self.stream_threads = self.cfg.threads - self.request_threads
        self.stream_pool: Any = None  # made in init_process, after the fork
        self.streaming = 0  # streams handed to the stream pool, not finished
        counts = getattr(self.app, "connection_counts", None)  # set by GunicornApp
        self.counts = counts if isinstance(counts, ConnectionCounts) else None
        self.held_back = False  # by balance alone: look again soon
        self.reading: dict[TConn, tuple[bytearray, float]] = {}  # (bytes so far, deadline)
        self.read_seconds = read_seconds()
        # gunicorn's heartbeat to the arbiter (a utimensat of the worker's temp file) was
        # sent at every turn of the loop, about twice a request; once a second will do (the
        # arbiter kills a worker silent for `timeout` seconds, 30 by default).
        timeout = float(self.cfg.timeout or 0)
        self.notify_every = min(1.0, timeout / 4) if timeout > 0 else 1.0
        self._next_notify = 0.0

    def get_thread_pool(self) -> Any:
        return futures.ThreadPoolExecutor(max_workers=self.request_threads)

    def init_process(self) -> None:
        if self.stream_threads > 0:
            self.stream_pool = futures.ThreadPoolExecutor(max_workers=self.stream_threads,
                                                          thread_name_prefix="loo-stream")
        if self.counts is not None and not self.counts.claim():
            self.counts = None
        # gunicorn's Worker.handle_error writes its refusals through util.write_error (read at
        # each call); test_serve_process checks the answers, so a gunicorn that stops using it
        # fails there.
        gunicorn_util.write_error = write_problem
        super().init_process()

    def notify(self) -> None:
        now = time.monotonic()
        if now >= self._next_notify:
            self._next_notify = now + self.notify_every
            super().notify()

    def set_accept_enabled(self, enabled: bool) -> None:
        enabled = enabled and self.in_flight < self.request_threads
        self.held_back = False
        if self.counts is not None:
            self.counts.publish(self.nr_conns)
            if enabled:
                self.held_back = self.counts.fewer_elsewhere(self.nr_conns)
                enabled = not self.held_back
        super().set_accept_enabled(enabled)

    def wait_for_and_dispatch_events(self, timeout: float) -> None:
        if self.counts is not None:
            self.counts.publish(self.nr_conns)  # closed by the loop (keep-alive timeouts)
            if self.held_back:
                timeout = min(timeout, BALANCE_RECHECK)
        if self.reading:
            timeout = min(timeout, max(0.0, min(d for _, d in self.reading.values())
                                       - time.monotonic()) + 0.01)
        super().wait_for_and_dispatch_events(timeout)
        self._shed_slow_clients()

    # ---- requests read on the event loop (slow clients never hold a thread) -------------
    def accept(self, listener: Any) -> None:
        if self.cfg.is_ssl:
            super().accept(listener)
            return
        try:
            client_sock, client_addr = listener.accept()
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.ECONNABORTED, errno.EWOULDBLOCK):
                raise
            return
        self.nr_conns += 1
        conn = TConn(self.cfg, client_sock, client_addr, listener.getsockname())
        self._read_request(conn)
        self._update_accepting()

    def on_client_socket_readable(self, conn: Any, client: Any) -> None:
        if self.cfg.is_ssl:
            super().on_client_socket_readable(conn, client)
            return
        self.poller.unregister(client)  # a keep-alive connection's next request
        self.keepalived_conns.remove(conn)
        # Readable now: a request of a few KB is usually whole already, and goes to a
        # thread without another turn of the loop (two epoll_ctl and an epoll_wait less).
        self._read_request(conn, readable=True)

    def _read_request(self, conn: Any, readable: bool = False) -> None:
        if conn.sock.getblocking():  # (a keep-alive connection is non-blocking already)
            conn.sock.setblocking(False)
        self.reading[conn] = (bytearray(), time.monotonic() + self.read_seconds)
        if readable and self._take(conn):
            return
        self.poller.register(conn.sock, selectors.EVENT_READ, partial(self._on_bytes, conn))

    def _on_bytes(self, conn: Any, _client: Any) -> None:
        self._take(conn, registered=True)

    def _take(self, conn: Any, registered: bool = False) -> bool:
        """Read what has arrived; True once reading is over: the request is whole (handed
        to a thread) or the client went away (closed)."""
        buf, _deadline = self.reading[conn]
        try:
            chunk = conn.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError:
            chunk = b""
        if not chunk:  # the client went away before its request was whole
            self._forget(conn)
            return True
        buf += chunk
        if not request_arrived(buf):
            return False
        if registered:
            self.poller.unregister(conn.sock)
        del self.reading[conn]
        conn.prebuffered = bytes(buf)
        conn.data_ready = True
        self.enqueue_req(conn)
        return True

    def _forget(self, conn: Any) -> None:
        try:
            self.poller.unregister(conn.sock)
        except (OSError, KeyError, ValueError):
            pass
        self.reading.pop(conn, None)
        self.nr_conns -= 1
        conn.close()
        self._update_accepting()

    def _shed_slow_clients(self) -> None:
        now = time.monotonic()
        for conn in [c for c, (_, deadline) in self.reading.items() if deadline <= now]:
            self.log.info("closed a connection whose request did not arrive within %.1fs",
                          self.read_seconds)
            self._forget(conn)

    def load_wsgi(self) -> None:
        """The app, wrapped so that an answer with `Connection: close` (a 413 whose body was
        never read) closes the connection: gunicorn drops the app's hop-by-hop headers and
        would keep it alive, draining gigabytes the client announced. So does an answer given
        before the body was read (401, 403, 404, 415, 429): gunicorn drains at most 64 KiB of
        it after the answer and otherwise closes a connection it had just called keep-alive,
        and the client's next request on it fails; the answer says `Connection: close`."""
        super().load_wsgi()
        freeze_loaded_objects()
        app = self.wsgi

        def closing(environ: dict[str, Any], start_response: Any) -> Any:
            def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
                if any(k.lower() == "connection" and v.lower() == "close" for k, v in headers) \
                        or body_left_unread(environ):
                    response = getattr(start_response, "__self__", None)  # gunicorn's Response
                    if response is not None:
                        response.force_close()
                return start_response(status, headers, exc_info)

            return app(environ, start)

        self.wsgi = closing

    def handle(self, conn: Any) -> Any:  # a request thread
        buf = getattr(conn, "prebuffered", None)
        if buf:
            conn.prebuffered = None
            conn.init()  # (the parser; gunicorn's handle makes the socket blocking next)
            conn.parser.unreader.unread(buf)
        return super().handle(conn)

    def _update_accepting(self) -> None:
        if self.alive:  # a stopping worker has stopped accepting for good (run())
            self.set_accept_enabled(self.nr_conns < self.worker_connections)

    # Both run on the main thread only (finish_request via the method queue): no lock.
    def enqueue_req(self, conn: Any) -> None:
        buf = getattr(conn, "prebuffered", None)
        if self.stream_pool is not None and buf and self.streaming < self.stream_threads \
                and asks_for_stream(buf):
            self.streaming += 1
            conn.loo_stream = True
            fs = self.stream_pool.submit(self.handle, conn)
            fs.add_done_callback(
                lambda fut: self.method_queue.defer(self.finish_request, conn, fut))
            return
        self.in_flight += 1
        super().enqueue_req(conn)
        self._update_accepting()

    def finish_request(self, conn: Any, fs: Any) -> None:
        if getattr(conn, "loo_stream", False):
            conn.loo_stream = False
            self.streaming -= 1
        else:
            self.in_flight -= 1
        try:
            super().finish_request(conn, fs)
        finally:
            self._update_accepting()

    def handle_quit(self, sig: Any, frame: Any) -> None:
        if self.stream_pool is not None:
            self.stream_pool.shutdown(wait=False)
        super().handle_quit(sig, frame)

    def run(self) -> None:
        try:
            super().run()
        finally:
            if self.stream_pool is not None:
                self.stream_pool.shutdown(wait=False)


class AccessLogger(Logger):  # type: ignore[misc]
    """gunicorn's logger, whose access line costs a third of what it did.

    gunicorn builds the atoms of every access line from a copy of every request header,
    response header and WSGI environ variable (about 60 entries, then escaped one by one),
    and formats the time anew; that was about 5% of a worker's CPU per action. When the
    format names no header or environ variable (`{...}i`, `{...}o`, `{...}e`; the default
    names none) only the plain atoms are built, and the time string is kept for its second.
    A format that names any gets gunicorn's own atoms, unchanged.
    """

    _second, _stamp = -1, ""

    def now(self) -> str:
        second = int(time.time())
        if second != self._second:  # two threads may both refresh it: the same string
            self._stamp, self._second = super().now(), second
        return self._stamp

    def atoms(self, resp: Any, req: Any, environ: dict[str, Any], request_time: Any) -> Any:
        if "{" in self.cfg.access_log_format:
            return super().atoms(resp, req, environ, request_time)
        status = resp.status
        if isinstance(status, str):
            status = status.split(None, 1)[0]
        sent = getattr(resp, "sent", None)
        seconds, micros = request_time.seconds, request_time.microseconds
        method, protocol = environ["REQUEST_METHOD"], environ["SERVER_PROTOCOL"]
        return {
            "h": environ.get("REMOTE_ADDR", "-"), "l": "-",
            "u": self._get_user(environ) or "-", "t": self.now(),
            "r": f"{method} {environ['RAW_URI']} {protocol}", "s": status, "m": method,
            "U": environ.get("PATH_INFO"), "q": environ.get("QUERY_STRING"), "H": protocol,
            "b": str(sent) if sent is not None else "-", "B": sent,
            "f": environ.get("HTTP_REFERER", "-"), "a": environ.get("HTTP_USER_AGENT", "-"),
            "T": seconds, "D": seconds * 1_000_000 + micros,
            "M": seconds * 1000 + micros // 1000, "L": f"{seconds}.{micros:06d}",
            "p": f"<{os.getpid()}>",
        }
