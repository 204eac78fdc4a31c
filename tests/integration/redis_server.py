"""A redis-server of a test's own (a spare port, no persistence), to stop and start under
running workers: never the shared server."""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import threading
import time

import pytest
import redis

from tests.integration.pg_cluster import free_port


class RedisServer:
    """`redis-server` on a spare port; stopped, it forgets everything (no dump, no AOF),
    as a restarted cache-only Redis does."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("no redis-server binary")
        self.binary = binary
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="loo-redis-")
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 20.0) -> None:
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir, "--daemonize", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        probe = redis.Redis(port=self.port, socket_connect_timeout=1)
        deadline = time.monotonic() + timeout
        try:
            while True:
                try:
                    probe.ping()
                    return
                except redis.RedisError as err:
                    if self.proc.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(
                            f"redis-server on port {self.port} did not start") from err
                    time.sleep(0.02)
        finally:
            probe.close()

    def stop(self) -> None:
        """SIGTERM: redis-server closes every client and exits (nothing saved)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)
        self.proc = None

    def remove(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None
        shutil.rmtree(self.dir, ignore_errors=True)


class Link:
    """A TCP forwarder to a local port that a test can cut and mend: one process loses
    Redis (every connection through the link closed, new ones closed at once) while the
    others, connected directly, keep it."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._up = True
        self._lock = threading.Lock()
        self._socks: set[socket.socket] = set()
        threading.Thread(target=self._accept, name="link-accept", daemon=True).start()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def cut(self) -> None:
        with self._lock:
            self._up = False
            socks, self._socks = self._socks, set()
        for s in socks:
            _shut(s)

    def mend(self) -> None:
        with self._lock:
            self._up = True

    def close(self) -> None:
        self.cut()
        self._server.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return  # closed
            with self._lock:
                up = self._up
            if not up:
                _shut(client)
                continue
            try:
                upstream = socket.create_connection(("127.0.0.1", self.target_port), timeout=5)
                upstream.settimeout(None)
            except OSError:
                _shut(client)
                continue
            with self._lock:
                self._socks.update((client, upstream))
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pump, args=(a, b), daemon=True).start()


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    _shut(src)
    _shut(dst)


def _shut(s: socket.socket) -> None:
    try:
        s.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    s.close()
