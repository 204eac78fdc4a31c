"""/metrics with Redis (issue 16): the queue's depth, its jobs by state and the live
workers, read from RQ at scrape time, against jobs put there by the test."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ledger.api.app import create_app
from ledger.app.service import Ledger
from ledger.bootstrap import Container, Settings
from ledger.core import commands as c
from ledger.store.base import EventStore
from tests.integration.worker_helpers import drain, four_bots, hand_done, seeded
from workers.queue import RqDispatcher
from workers.worker import LooWorker

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def _scrape(client: Any, queue: Any) -> dict[str, float]:
    r = client.get("/metrics")
    assert r.status_code == 200
    found = {}
    for family in text_string_to_metric_families(r.get_data(as_text=True)):
        for s in family.samples:
            if s.labels.get("queue") == queue.name:
                found[s.labels.get("state") or s.name] = s.value
                found[s.name + ":" + s.labels.get("state", "")] = s.value
    return found


def test_metrics_show_the_queue_depth_jobs_by_state_and_live_workers(
        db_url: str, store: EventStore, queue: Any, worker_ledger: Ledger) -> None:
    dispatcher = RqDispatcher(queue)
    ledger = Ledger(store, dispatcher, seeds=seeded(30))
    app = create_app(Container(Settings(database_url=db_url, queue_name=queue.name), store,
                               queue, dispatcher, ledger))
    client = app.test_client()
    tables = [ledger.create_table(four_bots())[0] for _ in range(3)]
    for t in tables:
        ledger.execute(t, c.StartHand())  # one job each
    queue.enqueue_at(datetime.now(UTC) + timedelta(hours=1), "os.getpid")
    queue.enqueue("os.kill", "not a pid", 0)  # fails: no retry
    before = _scrape(client, queue)
    assert before["loo_queue_depth:"] == before["queued"] == 4
    assert (before["scheduled"], before["started"], before["finished"], before["failed"],
            before["dequeued"]) == (1, 0, 0, 0, 0)
    assert before["loo_workers:"] == 0

    worker = LooWorker([queue], connection=queue.connection, serializer=queue.serializer)
    worker.register_birth()
    try:
        assert _scrape(client, queue)["loo_workers:"] == 1
    finally:
        worker.register_death()
    assert _scrape(client, queue)["loo_workers:"] == 0

    # A dequeued job its worker never started (the worker died in between).
    queue.connection.lmove(queue.key, queue.intermediate_queue_key)
    assert _scrape(client, queue)["dequeued"] == 1
    queue.connection.lmove(queue.intermediate_queue_key, queue.key, "RIGHT", "LEFT")

    drain(queue)
    assert all(hand_done(ledger, t) for t in tables)
    after = _scrape(client, queue)
    assert after["loo_queue_depth:"] == after["queued"] == 0
    assert (after["finished"], after["failed"], after["scheduled"]) == (3, 1, 1)
