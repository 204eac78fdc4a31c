"""Webhooks on the production path (issue 17): PostgreSQL, real Redis and real `loo worker`
processes. The worker is SIGKILLed in the middle of a delivery run and the receiver is down
for a while: every event still arrives, signed, in order (a run that died re-sends what it
had sent since its last saved cursor: at least once, under the same webhook-id)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from ledger.api.app import create_app
from ledger.app import webhooks as wh
from ledger.bootstrap import Container, Settings, bootstrap
from tests.e2e.club import Club
from tests.e2e.test_api_webhooks import Owner
from tests.integration.worker_helpers import kill9, wait_until, worker_process

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


class Receiver:
    """A webhook endpoint on a spare port: checks every signature as it arrives (a bad one
    is answered 400 and remembered), answers slowly (`delay`) so a run takes a while."""

    def __init__(self, delay: float) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.delay = delay
        self.secret = ""
        self.got: list[tuple[str, dict[str, Any]]] = []  # (webhook-id, body) as they came
        self.bad: list[str] = []
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = {k.lower(): v for k, v in self.headers.items()}
                time.sleep(receiver.delay)  # a slow receiver: a run is killed mid-way
                ok = wh.verify(receiver.secret, headers, body)
                with receiver.lock:
                    if ok:
                        receiver.got.append((headers["webhook-id"], json.loads(body)))
                    else:
                        receiver.bad.append(headers.get("webhook-id", "?"))
                self.send_response(204 if ok else 400)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def unique(self) -> list[int]:
        """Positions by first arrival, each once (a re-sent message has the same id)."""
        with self.lock:
            seen: dict[str, int] = {}
            for msg_id, doc in self.got:
                seen.setdefault(msg_id, doc["position"])
            return list(seen.values())


@pytest.fixture
def api(db_url: str, redis_url: str, queue: Any, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Container, Club]]:
    """The app as `loo serve` composes it with REDIS_URL set; workers inherit the env."""
    for var, value in {"LOO_WEBHOOK_ALLOW_PRIVATE": "1", "LOO_WEBHOOK_RETRY_BASE": "0.2",
                       "LOO_WEBHOOK_RETRY_MAX": "1", "LOO_WEBHOOK_TIMEOUT": "5",
                       "LOO_CHECKPOINT_KEY_FILE": str(tmp_path / "checkpoint.key")}.items():
        monkeypatch.setenv(var, value)
    container = bootstrap(Settings(database_url=db_url, redis_url=redis_url,
                                   queue_name=queue.name,
                                   checkpoint_key_file=str(tmp_path / "checkpoint.key")))
    app = create_app(container)
    app.config["TESTING"] = True
    try:
        yield container, Club(app.test_client())
    finally:
        container.close()


def _log(owner: Owner, wid: str) -> list[dict[str, Any]]:
    return owner.deliveries(wid)


def _worker_counts(directory: Path) -> dict[str, float]:
    """loo_webhook_deliveries_total by outcome, as the workers counted into `directory`."""
    from prometheus_client import CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    registry = CollectorRegistry()
    MultiProcessCollector(registry, path=str(directory))
    return {s.labels["outcome"]: s.value for family in registry.collect()
            for s in family.samples if s.name == "loo_webhook_deliveries_total"}


def test_a_worker_killed_mid_delivery_and_a_receiver_down_lose_nothing(
        api: tuple[Container, Club], db_url: str, redis_url: str, queue: Any,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, club = api
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(metrics))  # the workers' counters
    receiver = Receiver(delay=0.05)
    receiver.start()
    workers = [worker_process(db_url, redis_url, queue.name, "--reconcile-every", "2")]
    try:
        owner = Owner(club)
        made = owner.hook(receiver.url, ["*"])
        receiver.secret = made["secret"]
        table = owner.table()
        owner.play(table, 40)  # ~50 events: a run of 2.5 s or more at 50 ms each
        wait_until(lambda: len(receiver.unique()) >= 8, timeout=60,
                   what="the worker delivering")
        kill9(workers[0])  # mid-run: its lease and its RQ job are left behind
        killed_at = len(receiver.unique())
        assert killed_at < len(owner.feed()) - 5, "the run was over before the kill"
        receiver.stop()  # and the receiver goes down for a while
        owner.play(table, 10)  # events committed while no worker and no receiver run
        workers.append(worker_process(db_url, redis_url, queue.name,
                                      "--reconcile-every", "2"))
        # The new worker takes the endpoint over once the dead run's lease has run out,
        # and meets the receiver down (connection refused), backing off.
        wait_until(lambda: any(x["status"] == "refused" for x in _log(owner, made["id"])),
                   timeout=60, what="a refused attempt by the new worker")
        receiver.start()  # back on the same port; nothing new is committed from here on
        since = next(e["position"] for e in owner.feed()
                     if e["type"] == "webhook_added" and e["data"]["id"] == made["id"])
        expected = [e["position"] for e in owner.feed() if e["position"] > since]
        wait_until(lambda: len(receiver.unique()) >= len(expected), timeout=90,
                   what=f"all {len(expected)} events")
        assert receiver.bad == []  # every signature verified with the secret shown once
        assert receiver.unique() == expected  # every event, in order, none lost
        # Re-sent after the kill: only what the dead run had sent since its last saved
        # cursor, each under its first webhook-id (duplicates a receiver drops by id).
        ids = [msg_id for msg_id, _ in receiver.got]
        assert all(msg_id == f"msg_{made['id']}_{p}" for msg_id, p in zip(
            dict.fromkeys(ids), expected, strict=True))
        assert len(ids) - len(set(ids)) <= wh.FLUSH_EVERY
        log = wait_until(lambda: (found := _log(owner, made["id"])) and sorted(
            {x["position"] for x in found if x["status"] == 204}) == expected and found,
            timeout=30, what="the delivery log")  # written a moment after the answers
        assert any(x["status"] == "refused" for x in log)
        # /metrics of workers sharing PROMETHEUS_MULTIPROC_DIR: every attempt the living
        # worker logged (the killed one's count may be ahead of its log, never behind).
        counts = _worker_counts(metrics)
        assert counts.get("refused", 0) == sum(x["status"] == "refused" for x in log)
        assert counts.get("delivered", 0) >= sum(x["status"] == 204 for x in log)
    finally:
        receiver.stop()
        for w in workers:
            if w.poll() is None:
                kill9(w)
