"""The gthread worker of `loo serve --workers N` leaves new connections to idler workers."""

from __future__ import annotations

import socket
from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("gunicorn.workers.gthread")
from gunicorn.workers.gthread import ThreadWorker  # noqa: E402

from ledger.cli import worker_class  # noqa: E402

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


def _worker(threads: int) -> Any:
    from ledger.gunicorn_worker import BalancedThreadWorker

    w = BalancedThreadWorker.__new__(BalancedThreadWorker)  # no arbiter, no config file
    w.cfg = SimpleNamespace(threads=threads)
    w.alive, w.in_flight, w.nr_conns, w.worker_connections = True, 0, 0, 1000
    w._accepting = False
    w.tpool = Pool()
    w.method_queue = SimpleNamespace(defer=lambda fn, *args: None)
    w.poller = SimpleNamespace(registered=set(), register=lambda s, *a: w.poller.registered.add(s),
                               unregister=lambda s: w.poller.registered.discard(s))
    listener = socket.socket()
    w.sockets = [listener]
    return w, listener


def test_serve_uses_the_balanced_worker():
    assert worker_class() == "ledger.gunicorn_worker.BalancedThreadWorker"


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
