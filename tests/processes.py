"""Ending the server processes tests start: politely first, then for sure."""

from __future__ import annotations

import subprocess


def stop(proc: subprocess.Popen, grace: float = 15) -> None:
    """SIGTERM, wait up to `grace` seconds, then SIGKILL; always reaped (no zombie)."""
    proc.terminate()
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
