"""`loo bench feed`: commit-to-delivery latency of the club feed over SSE (and to a webhook
receiver), against a client polling the JSON feed every 100 ms, in the same run.

A real `loo serve` (gunicorn gthread, 2 workers, `--streams` sized for the subscribers) on a
fresh SQLite file (or a fresh PostgreSQL schema with --database-url). `tables` club tables
are played over HTTP by one writer each (every turn's first legal action) for `seconds`;
`clients` SSE subscribers follow the club feed, and one more client polls
`GET /v1/clubs/{id}/events?after=` every 100 ms. Latency = arrival at the client minus the
event's `recorded_at` (one clock: the same machine). Prints events/s delivered to the SSE
clients, p50/p99 of both, and `ratio feed_vs_poll V target 1.0` with V = poll p99 / SSE p99.
"""

from __future__ import annotations

import json
import os
import selectors
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.scratch import scratch_url

Out = Callable[[str], None]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _call(base: str, method: str, path: str, token: str | None = None,
          body: Any = None) -> Any:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.loads(r.read())
    except urllib.error.HTTPError as err:
        return json.loads(err.read())


def _ts(recorded_at: str) -> float:
    return datetime.fromisoformat(recorded_at).timestamp()


def _pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def run(database_url: str = "", seconds: float = 10.0, clients: int = 100, tables: int = 8,
        out: Out = print) -> None:
    with scratch_url(database_url, "feed") as (url, tmp):
        port = _free_port()
        loo = str(Path(sys.executable).with_name("loo"))
        env = {**{k: v for k, v in os.environ.items() if k not in ("REDIS_URL",)},
               "DATABASE_URL": url, "LOO_CHECKPOINT_KEY_FILE": os.path.join(tmp, "key"),
               "LOO_LOG_LEVEL": "WARNING", "LOO_SSE_KEEPALIVE": "1",
               "LOO_WEBHOOK_ALLOW_PRIVATE": "1",  # the receiver is on this machine
               "LOO_RATE_LIMITS": "off"}  # 100 listeners and 8 writers share one token
        streams = clients // 2 + 4  # per worker: the subscribers split over 2 workers
        with open(os.path.join(tmp, "serve.log"), "w") as log:
            proc = subprocess.Popen([loo, "serve", "--port", str(port), "--workers", "2",
                                     "--streams", str(streams)], env=env, stdout=log,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
            try:
                base = f"http://127.0.0.1:{port}"
                _until_up(base, proc)
                _measure(base, seconds, clients, tables, out)
            finally:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


def _until_up(base: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("loo serve did not start") from None
            time.sleep(0.1)


def _receiver(latencies: list[float]) -> Any:
    """A webhook endpoint in this process: records each event's commit-to-arrival time."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a receiver behind any proxy answers

        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            latencies.append(time.time() - _ts(json.loads(body)["recorded_at"]))
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _timed_get(base: str, path: str, token: str) -> tuple[float, Any]:
    """A GET's answer and the time it arrived (before it is parsed)."""
    req = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=30) as r:
        body = r.read()
    return time.time(), json.loads(body)


class _Subscribers:
    """The SSE clients: every stream read by one thread (raw sockets and a selector), each
    frame's arrival time taken as its bytes come off the socket and its JSON parsed after the
    run. (A thread per client, each parsing its frames as they came, measured mostly their
    own queueing for this process's GIL: 100 threads parse ~15,000 frames a second.)"""

    def __init__(self, base: str, path: str, token: str, after: int, n: int) -> None:
        parts = urllib.parse.urlsplit(base)
        host, port = parts.hostname or "127.0.0.1", parts.port or 80
        request = (f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n"
                   f"Accept: text/event-stream\r\nAuthorization: Bearer {token}\r\n"
                   f"Last-Event-ID: {after}\r\n\r\n").encode()
        self.done = threading.Event()
        self.socks: list[socket.socket] = []
        self.pending: list[bytes] = []
        self.arrived: list[tuple[float, bytes]] = []  # (arrival, the frame's data line)
        for _ in range(n):
            sock = socket.create_connection((host, port), timeout=30)
            sock.sendall(request)
            buf = b""
            while b"\r\n\r\n" not in buf:
                got = sock.recv(65536)
                if not got:
                    raise RuntimeError("the server closed an event stream at once")
                buf += got
            head, _, rest = buf.partition(b"\r\n\r\n")
            if not head.startswith(b"HTTP/1.1 200"):
                raise RuntimeError(f"an event stream was refused: {head[:80]!r}")
            self.socks.append(sock)
            self.pending.append(b"")
            self._take(len(self.socks) - 1, rest, time.time())

    def _take(self, i: int, data: bytes, now: float) -> None:
        lines = (self.pending[i] + data).split(b"\n")
        self.pending[i] = lines.pop()  # an unfinished line waits for its end
        self.arrived.extend((now, line) for line in lines if line.startswith(b"data: "))

    def run(self, stop: threading.Event) -> None:
        sel = selectors.DefaultSelector()
        for i, sock in enumerate(self.socks):
            sock.setblocking(False)
            sel.register(sock, selectors.EVENT_READ, i)
        while not self.done.is_set() and sel.get_map():
            for key, _ in sel.select(timeout=0.1):
                try:
                    data = key.fileobj.recv(1 << 18)  # type: ignore[union-attr]
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                now = time.time()
                if not data:
                    sel.unregister(key.fileobj)
                    continue
                self._take(key.data, data, now)
        sel.close()

    def latencies(self) -> list[float]:
        return [now - _ts(json.loads(line[6:])["recorded_at"]) for now, line in self.arrived]

    def close(self) -> None:
        for sock in self.socks:
            sock.close()


def _measure(base: str, seconds: float, clients: int, tables: int, out: Out) -> None:
    club = _call(base, "POST", "/v1/clubs", body={"name": "Bench"})
    cid, token = club["id"], club["token"]
    made = [_call(base, "POST", f"/v1/clubs/{cid}/tables", token, {
        "variant": "loo", "scoring": "pool", "first_dealer": 0, "deal": "shuffled",
        "seats": [{"name": n} for n in ("Ann", "Bob", "Cat", "Dan")]}) for _ in range(tables)]
    hook_lat: list[float] = []
    receiver = _receiver(hook_lat)
    _call(base, "POST", f"/v1/clubs/{cid}/webhooks", token,
          {"url": f"http://127.0.0.1:{receiver.server_address[1]}/hook", "events": ["*"]})
    # The club's last position so far: everyone starts after the setup (the webhook_added
    # event included: its latency would count the subscribers' connecting).
    start_after = 0
    while True:
        page = _call(base, "GET", f"/v1/clubs/{cid}/events?after={start_after}&limit=500",
                     token)
        if not page["events"]:
            break
        start_after = page["next"]
    stop = threading.Event()
    subscribers = _Subscribers(base, f"/v1/clubs/{cid}/events", token, start_after, clients)
    reader = threading.Thread(target=subscribers.run, args=(stop,), daemon=True)
    poll_lat: list[float] = []

    def poller() -> None:
        after = start_after
        while not stop.is_set():
            now, page = _timed_get(base, f"/v1/clubs/{cid}/events?after={after}&limit=500",
                                   token)
            poll_lat.extend(now - _ts(e["recorded_at"]) for e in page["events"])
            after = page["next"]
            time.sleep(0.1)

    def writer(t: dict[str, Any]) -> None:
        admin = t["admin_token"]
        while not stop.is_set():
            view = _call(base, "GET", f"/v1/tables/{t['id']}", admin)
            if view.get("status") != "playing" or not view.get("legal_actions"):
                time.sleep(0.05)
                continue
            move = view["legal_actions"][0] | {"expected_version": view["version"]}
            _call(base, "POST", f"/v1/tables/{t['id']}/actions", admin, move)

    reader.start()
    threads = [threading.Thread(target=poller, daemon=True)] + [
        threading.Thread(target=writer, args=(t,), daemon=True) for t in made]
    began = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(timeout=10)
    elapsed = time.monotonic() - began
    time.sleep(0.5)  # the subscribers take in what was committed last
    subscribers.done.set()
    reader.join(timeout=10)
    subscribers.close()  # the server notices at its next keep-alive and frees the stream
    every = subscribers.latencies()
    delivered = len(every)
    committed = len(poll_lat)
    out(f"setup: {tables} tables played over HTTP for {seconds:g}s, {clients} SSE "
        f"subscribers on the club feed, 1 client polling the JSON feed every 100 ms")
    out(f"events committed (seen by the poller): {committed} ({committed / elapsed:,.0f}/s)")
    out(f"SSE: {delivered} deliveries, {delivered / elapsed:,.0f} events/s to {clients} "
        f"clients; commit-to-delivery p50 {1000 * statistics.median(every or [0]):.0f} ms "
        f"p99 {1000 * _pct(every, 0.99):.0f} ms")
    out(f"poll 100 ms: p50 {1000 * statistics.median(poll_lat or [0]):.0f} ms "
        f"p99 {1000 * _pct(poll_lat, 0.99):.0f} ms")
    out(f"webhook: {len(hook_lat)} deliveries; p50 "
        f"{1000 * statistics.median(hook_lat or [0]):.0f} ms "
        f"p99 {1000 * _pct(hook_lat, 0.99):.0f} ms")
    receiver.shutdown()
    receiver.server_close()
    ratio = _pct(poll_lat, 0.99) / _pct(every, 0.99) if every and poll_lat else 0.0
    out(f"ratio feed_vs_poll {ratio:.2f} target 1.0")


if __name__ == "__main__":
    run()
