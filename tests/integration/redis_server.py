"""A redis-server of a test's own (a spare port, no persistence), to stop and start under
running workers: never the shared server."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
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
