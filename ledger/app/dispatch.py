"""How follow-up jobs leave a command: the one Dispatcher protocol (adapters in workers/)."""

from __future__ import annotations

from typing import Any, Literal, Protocol

# "inline": the job runs in the calling process right after the command (the embedded
# default); the ledger then appends what the job would in the command's own transaction,
# and a write's answer includes it. "queued": a worker runs it later (RQ); a write's
# answer is the write's own events, and whatever a worker appends comes after.
Mode = Literal["inline", "queued"]


class Dispatcher(Protocol):
    mode: Mode

    def enqueue(self, func_path: str, *args: Any, job_id: str) -> bool | None:
        """Run the job after the command; False: the same job id was still queued or
        running, so nothing was enqueued (None or True: handed over)."""

    def schedule(self, func_path: str, *args: Any, at: float, job_id: str) -> bool | None:
        """Run the job at Unix time `at` (turn timers); the same job id is one job."""

    def ping(self) -> dict[str, Any]: ...
