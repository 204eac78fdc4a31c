"""gunicorn's gthread worker, accepting new connections only while it has a thread free.

Every worker of `loo serve --workers N` polls the one listening socket, and a keep-alive
connection stays with the worker that accepted it. When clients connect in a burst, one
worker can take most of them (15 of 16 was seen) and its GIL then serves them all while
the other workers idle. A worker whose threads are all busy now leaves new connections to
the others; with none free anywhere, they wait in the listen backlog as usual.
"""

from __future__ import annotations

from typing import Any

from gunicorn.workers.gthread import ThreadWorker


class BalancedThreadWorker(ThreadWorker):  # type: ignore[misc]
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.in_flight = 0  # requests handed to the thread pool, not finished

    def set_accept_enabled(self, enabled: bool) -> None:
        super().set_accept_enabled(enabled and self.in_flight < self.cfg.threads)

    def _update_accepting(self) -> None:
        if self.alive:  # a stopping worker has stopped accepting for good (run())
            self.set_accept_enabled(self.nr_conns < self.worker_connections)

    # Both run on the main thread only (finish_request via the method queue): no lock.
    def enqueue_req(self, conn: Any) -> None:
        self.in_flight += 1
        super().enqueue_req(conn)
        self._update_accepting()

    def finish_request(self, conn: Any, fs: Any) -> None:
        self.in_flight -= 1
        try:
            super().finish_request(conn, fs)
        finally:
            self._update_accepting()
