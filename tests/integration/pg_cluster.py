"""A PostgreSQL cluster of a test's own (initdb in a temporary directory, pg_ctl on a spare
port), to stop and start under a running service: never the shared server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

import pytest


def _bindir() -> Path | None:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    for candidate in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        if (candidate / "pg_ctl").exists():
            return candidate
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """initdb + pg_ctl; as root, run as the `postgres` user (initdb refuses root)."""

    def __init__(self, root: Path | None = None) -> None:
        bindir = _bindir()
        if bindir is None:
            pytest.skip("no PostgreSQL server binaries (pg_ctl, initdb)")
        self.bin = bindir
        # Not under pytest's tmp_path: its parents are private to root, and the server runs
        # as postgres.
        self.root = root or Path(tempfile.mkdtemp(prefix="loo-pg-"))
        self.data = self.root / "data"
        self.sock = self.root / "sock"
        self.log = self.root / "pg.log"
        self.port = free_port()
        self.as_root = os.geteuid() == 0

    def _run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bin / argv[0]), *argv[1:]]
        if self.as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
        if check and done.returncode:  # say why: its stderr, not only its exit status
            raise RuntimeError(f"{argv[0]} exited {done.returncode}: "
                               f"{(done.stderr or done.stdout).strip()[-2000:]}")
        return done

    def init(self) -> Cluster:
        self.root.mkdir(parents=True, exist_ok=True)
        self.sock.mkdir(exist_ok=True)
        if self.as_root:
            shutil.chown(self.root, "postgres")
            shutil.chown(self.sock, "postgres")
            self.root.chmod(0o755)
        self._run("initdb", "-D", str(self.data), "-U", "postgres", "-A", "trust",
                  "--no-sync", "-E", "UTF8")
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write(f"\nport = {self.port}\nlisten_addresses = '127.0.0.1'\n"
                       f"unix_socket_directories = '{self.sock}'\nfsync = off\n"
                       "max_connections = 60\nshared_buffers = 16MB\n")
        return self

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-w", "-t", "30",
                  "start")

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "-t", "30", "stop",
                  check=False)

    def remove(self) -> None:
        self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
