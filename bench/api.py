"""`loo bench api`: whole hands through the HTTP API vs a bare one-INSERT Flask endpoint.

Both run under the same gunicorn settings (`loo serve --workers 2 --threads N`: gthread,
by default `loo serve`'s threads per worker) on the same PostgreSQL database, on loopback
only. A separate driver process runs `clients` threads, each on its own keep-alive
connection: for the API each client has a table of four person seats and plays whole
hands with the admin token, choosing every move from the `legal_actions` of the previous
answer. Both servers run at once and are measured in alternating slices, so the load of
anything else on the machine falls on both alike.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from typing import IO, Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import psycopg

from ledger.api.limits import LIMIT_VARS

Out = Callable[[str], None]
BARE_TABLE = "loo_bench_bare"
HOST = "127.0.0.1"  # loopback only
SERVER_START_TIMEOUT = 30.0
REQUEST_TIMEOUT = 10.0
FOUR_PEOPLE = {"variant": "loo", "seats": [{"name": n} for n in ("Ann", "Bob", "Cat", "Dan")],
               "first_dealer": 0, "deal": "shuffled"}


# ---- the bare endpoint -------------------------------------------------------------------

def bare_app() -> Any:
    """A Flask app doing one INSERT per request into PostgreSQL at DATABASE_URL (the floor)."""
    from flask import Flask, request
    from psycopg.types.json import Jsonb
    from psycopg_pool import ConnectionPool

    # The same pool size as the event store, opened in the worker after gunicorn's fork.
    pool = ConnectionPool(os.environ["DATABASE_URL"], min_size=1, max_size=16,
                          kwargs={"autocommit": True}, open=False, name="bench-bare")
    pool.open(wait=False)
    app = Flask(__name__)

    @app.post("/bare")
    def insert() -> Any:
        body = request.get_json(silent=True) or {}
        with pool.connection() as conn:
            row = conn.execute(f"INSERT INTO {BARE_TABLE} (body) VALUES (%s) RETURNING id",
                               (Jsonb(body),)).fetchone()
        assert row is not None
        return {"id": row[0]}

    @app.get("/healthz")
    def healthz() -> Any:
        return {"status": "ok"}

    return app


def serve_bare(port: int, workers: int = 2, threads: int | None = None) -> None:
    """Serve bare_app() with the gunicorn settings of `loo serve --workers N --threads T`."""
    from ledger.bootstrap import Settings
    from ledger.cli.main import GunicornApp

    class BareGunicorn(GunicornApp):
        def load(self) -> Any:
            return bare_app()

    from ledger.cli.main import DEFAULT_THREADS

    settings = Settings(database_url=os.environ["DATABASE_URL"], log_level="WARNING")
    BareGunicorn(settings, {"bind": f"{HOST}:{port}", "workers": workers,
                            "threads": threads or DEFAULT_THREADS}).run()


# ---- servers -----------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _start(label: str, argv: list[str], database_url: str, port: int,
           log: IO[bytes]) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL"}  # jobs run in-process
    env |= {"DATABASE_URL": database_url, "LOO_LOG_LEVEL": "WARNING"}
    # One address and a few tokens at full speed: limits this high still count every
    # request (their cost is measured) but never refuse one.
    env |= {var: "1000000/second" for var, *_ in LIMIT_VARS}
    env["LOO_RATE_LIMIT_LOOPBACK"] = "limit"  # the driver is on this host: count it anyway
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=log)
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while True:
        try:
            conn = http.client.HTTPConnection(HOST, port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                conn.close()
                return proc
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc)
            log.seek(0)
            tail = log.read().decode(errors="replace").strip()[-800:]
            raise RuntimeError(f"{label} did not start: {tail}")
        time.sleep(0.1)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)  # gunicorn's graceful shutdown
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---- the driver (runs in its own process) ------------------------------------------------

class Client:
    """One keep-alive HTTP/1.1 connection; every timed request adds its latency.

    A plain socket rather than http.client: its header parsing (the email package) was
    about half of the driver's CPU per request (0.1 ms of 0.2 for the bare endpoint), and
    the driver shares the machine's cores with the servers it measures, both of them alike.
    """

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock: socket.socket | None = None
        self.buf = b""
        self.latencies: list[float] = []
        self.errors = 0
        self.timed = False

    def call(self, method: str, path: str, body: Any = None,
             token: str | None = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else b""
        auth = f"Authorization: Bearer {token}\r\n" if token else ""
        request = (f"{method} {path} HTTP/1.1\r\nHost: {HOST}:{self.port}\r\n"
                   f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                   f"{auth}\r\n").encode() + data
        start = time.perf_counter()
        try:
            if self.sock is None:
                self.sock = socket.create_connection((HOST, self.port), timeout=REQUEST_TIMEOUT)
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.buf = b""
            self.sock.sendall(request)
            status, raw = self._response()
        except (OSError, ValueError):
            self.errors += 1
            self.close()  # reconnects on the next request
            return 0, None
        if self.timed:
            self.latencies.append(time.perf_counter() - start)
            if status >= 400:
                self.errors += 1
        return status, json.loads(raw) if raw else None

    def _response(self) -> tuple[int, bytes]:
        """Status and body of the next response (Content-Length, chunked or until close)."""
        while (end := self.buf.find(b"\r\n\r\n")) < 0:
            self._fill()
        head, self.buf = self.buf[:end].decode("latin-1"), self.buf[end + 4:]
        lines = head.split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {k.strip().lower(): v.strip()
                   for k, _, v in (line.partition(":") for line in lines[1:])}
        if "content-length" in headers:
            body = self._take(int(headers["content-length"]))
        elif "chunked" in headers.get("transfer-encoding", "").lower():
            body = self._chunks()
        else:
            with contextlib.suppress(ConnectionError):
                while True:
                    self._fill()
            body, self.buf = self.buf, b""
            headers["connection"] = "close"
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, body

    def _fill(self) -> None:
        assert self.sock is not None
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self.buf += chunk

    def _take(self, n: int) -> bytes:
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _chunks(self) -> bytes:
        parts = []
        while True:
            while (end := self.buf.find(b"\r\n")) < 0:
                self._fill()
            size = int(self.buf[:end].split(b";")[0], 16)
            self.buf = self.buf[end + 2:]
            if size == 0:
                self._take(2)  # no trailers are sent to this driver
                return b"".join(parts)
            parts.append(self._take(size))
            self._take(2)

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
        self.sock, self.buf = None, b""


class Player:
    """Plays whole hands at its own table with the admin token (acting for each seat)."""

    def __init__(self, client: Client, seed: int) -> None:
        self.c, self.rng = client, random.Random(seed)
        self.hands = 0
        status, created = client.call("POST", "/v1/tables", FOUR_PEOPLE)
        if status != 201:
            raise RuntimeError(f"creating a table answered {status}: {created}")
        self.id, self.token = created["id"], created["admin_token"]
        self.table = self._get()

    def _get(self) -> dict[str, Any]:
        status, view = self.c.call("GET", f"/v1/tables/{self.id}", token=self.token)
        if status != 200:
            raise RuntimeError(f"reading the table answered {status}: {view}")
        return view

    def step(self) -> None:
        legal = self.table.get("legal_actions") or []
        if not legal:
            self.table = self._get()
            hand = self.table.get("hand")
            waiting = hand is None or hand["phase"] == "complete"
            if not self.table.get("legal_actions") and waiting:
                self.c.call("POST", f"/v1/tables/{self.id}/hands", {}, token=self.token)
                self.table = self._get()
            return
        number = (self.table.get("hand") or {}).get("number")
        body = dict(self.rng.choice(legal), expected_version=self.table["version"])
        status, answer = self.c.call("POST", f"/v1/tables/{self.id}/actions", body, self.token)
        if status != 200 or answer is None:
            self.table = self._get()  # resynchronise after an error
            return
        self.table = answer["table"]
        if (self.table.get("hand") or {}).get("number") != number:
            self.hands += 1


def _drive(kind: str, port: int, seconds: float, clients: int) -> dict[str, Any]:
    """Run `clients` threads for `seconds`; returns the timed latencies and counts."""
    ready, go = threading.Barrier(clients + 1), threading.Barrier(clients + 1)
    results: list[tuple[Client, int]] = []
    failures: list[str] = []
    lock = threading.Lock()
    stop_at = [0.0]

    def work(i: int) -> None:
        client = Client(port)
        player: Player | None = None
        try:
            if kind == "api":
                player = Player(client, seed=i)
        except Exception as err:  # noqa: BLE001 - reported by the orchestrator
            failures.append(str(err))
        ready.wait()
        go.wait()  # stop_at is set between the two
        if player is None and kind == "api":
            return
        client.timed = True
        payload = {"client": i, "note": "bench"}
        while time.perf_counter() < stop_at[0]:
            if player is not None:
                player.step()
            else:
                client.call("POST", "/bare", payload)
        client.close()
        with lock:
            results.append((client, player.hands if player else 0))

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(clients)]
    for t in threads:
        t.start()
    ready.wait(timeout=SERVER_START_TIMEOUT)
    cpu = time.process_time()
    start = time.perf_counter()
    stop_at[0] = start + seconds
    go.wait()
    for t in threads:
        t.join(timeout=seconds + 2 * REQUEST_TIMEOUT)
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    latencies = sorted(x for c, _ in results for x in c.latencies)
    return {"latencies": latencies, "elapsed": elapsed, "failures": failures, "cpu": cpu,
            "errors": sum(c.errors for c, _ in results), "hands": sum(h for _, h in results)}


def _measure(kind: str, port: int, seconds: float, clients: int) -> dict[str, Any]:
    """The driver in a fresh process, so its threads share a GIL with nothing else."""
    argv = [sys.executable, "-m", "bench.api", "drive", kind, str(port), str(seconds),
            str(clients)]
    done = subprocess.run(argv, capture_output=True, timeout=seconds + 3 * SERVER_START_TIMEOUT,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{kind} driver failed: {done.stderr.decode(errors='replace')[-800:]}")
    stats: dict[str, Any] = json.loads(done.stdout)
    if stats["failures"]:
        raise RuntimeError(f"{kind} driver: {stats['failures'][0]}")
    return stats


TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process, 0 if gone or unreadable (not Linux)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, IndexError, ValueError):
        return 0.0


def _tree_cpu(pid: int) -> float:
    """CPU seconds of a process and its descendants (gunicorn's master and workers)."""
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        total += _proc_cpu(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo.extend(int(c) for c in f.read().split())
        except (OSError, ValueError):
            continue
    return total


def _backends_cpu(database_url: str) -> float:
    """CPU seconds of the PostgreSQL backends on this database (0 on another host)."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        pids = [r[0] for r in conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid()")]
    return sum(_proc_cpu(p) for p in pids)


def _add(total: dict[str, Any], stats: dict[str, Any]) -> None:
    """Pool one slice's driver stats into `total` (latencies sorted again)."""
    for key in ("elapsed", "cpu", "errors", "hands", "server_cpu", "db_cpu"):
        total[key] = total.get(key, 0) + stats.get(key, 0)
    total["latencies"] = sorted(total.get("latencies", []) + stats["latencies"])


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def _summary(stats: dict[str, Any]) -> tuple[float, float, float]:
    lat = stats["latencies"]
    return (len(lat) / stats["elapsed"], _percentile(lat, 0.50) * 1000,
            _percentile(lat, 0.99) * 1000)


# ---- the benchmark -----------------------------------------------------------------------

def in_schema(database_url: str, schema: str) -> str:
    """The URL with every connection's search_path set to `schema` (libpq `options`)."""
    parts = urlsplit(database_url)
    query = parse_qsl(parts.query)
    given = " ".join(v for k, v in query if k == "options")  # kept, ours added after
    query = [(k, v) for k, v in query if k != "options"]
    query.append(("options", f"{given} -c search_path={schema}".strip()))
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))


def run(database_url: str, seconds: float = 5, clients: int = 16, threads: int | None = None,
        out: Out = print) -> None:
    """Measure both servers and print; ends with the api_vs_bare, api_p99_ms and
    api_p99_vs_bare ratios."""
    from ledger.cli.main import DEFAULT_THREADS

    threads = threads or DEFAULT_THREADS
    loo = os.path.join(os.path.dirname(sys.executable), "loo")
    # Both servers work in a fresh schema, dropped at the end: tables left by earlier runs
    # (millions of events after a day of runs) would slow the API's inserts, not the bare's.
    schema = f"loo_bench_api_{uuid.uuid4().hex[:12]}"
    scoped = in_schema(database_url, schema)
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
        conn.execute(f"CREATE TABLE {schema}.{BARE_TABLE} (id bigserial PRIMARY KEY, "
                     "body jsonb NOT NULL, at timestamptz NOT NULL DEFAULT now())")
    # Both servers up at once, measured in alternating slices (each first in every other
    # round): a burst of load from elsewhere on the machine then falls on both alike.
    rounds = max(1, min(5, int(seconds // 2)))
    api: dict[str, Any] = {}
    bare: dict[str, Any] = {}
    try:
        with tempfile.TemporaryFile() as api_log, tempfile.TemporaryFile() as bare_log:
            api_port, bare_port = free_port(), free_port()
            servers = [_start("loo serve", [loo, "serve", "--workers", "2", "--threads",
                                            str(threads), "--host", HOST, "--port",
                                            str(api_port)], scoped, api_port, api_log)]
            try:
                code = f"from bench.api import serve_bare; serve_bare({bare_port}, 2, {threads})"
                servers.append(_start("the bare app", [sys.executable, "-c", code], scoped,
                                      bare_port, bare_log))
                sides = [("api", api_port, api, servers[0].pid),
                         ("bare", bare_port, bare, servers[1].pid)]
                for r in range(rounds):
                    for kind, port, total, pid in sides if r % 2 == 0 else sides[::-1]:
                        server_cpu, db_cpu = _tree_cpu(pid), _backends_cpu(scoped)
                        stats = _measure(kind, port, seconds / rounds, clients)
                        stats["server_cpu"] = _tree_cpu(pid) - server_cpu
                        stats["db_cpu"] = _backends_cpu(scoped) - db_cpu
                        _add(total, stats)
            finally:
                for server in servers:
                    _stop(server)
    finally:
        with psycopg.connect(database_url, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
    api_rps, api_p50, api_p99 = _summary(api)
    bare_rps, bare_p50, bare_p99 = _summary(bare)
    out(f"api: `loo serve --workers 2 --threads {threads}` (gthread), {clients} clients "
        f"playing whole hands via POST /actions for {api['elapsed']:.1f} s: "
        f"{api_rps:,.0f} requests/s, p50 {api_p50:.1f} ms, p99 {api_p99:.1f} ms, "
        f"{api['hands']} hands, {api['errors']} errors")
    out(f"bare: Flask + one INSERT per request, same gunicorn settings, {clients} clients: "
        f"{bare_rps:,.0f} requests/s, p50 {bare_p50:.1f} ms, p99 {bare_p99:.1f} ms, "
        f"{bare['errors']} errors")
    out(f"info driver_cpu api {api['cpu']:.1f} s, bare {bare['cpu']:.1f} s of "
        f"{api['elapsed']:.1f} s wall each (one process, {clients} threads, "
        f"{os.cpu_count()} CPUs), in {rounds} alternating slices each")
    for label, stats in (("api", api), ("bare", bare)):
        n = len(stats["latencies"]) or 1
        out(f"info cpu_per_request {label}: server {stats['server_cpu'] / n * 1000:.3f} ms, "
            f"PostgreSQL {stats['db_cpu'] / n * 1000:.3f} ms, driver "
            f"{stats['cpu'] / n * 1000:.3f} ms (from /proc; 0 where not readable)")
    out(f"ratio api_vs_bare {api_rps / bare_rps if bare_rps else 0.0:.2f} target 0.5")
    out(f"ratio api_p99_ms {api_p99:.1f} target 25")
    # Latency against the floor under the same load in the same run (issue 16): the bare
    # endpoint's p99 over ours, so 1.0 is as quick as one INSERT behind Flask.
    out(f"ratio api_p99_vs_bare {bare_p99 / api_p99 if api_p99 > 0 else 0.0:.2f} target 0.7")


if __name__ == "__main__":  # the driver process: drive KIND PORT SECONDS CLIENTS -> JSON
    _, _, kind_, port_, seconds_, clients_ = sys.argv
    json.dump(_drive(kind_, int(port_), float(seconds_), int(clients_)), sys.stdout)
