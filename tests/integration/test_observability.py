"""Request ids reach the RQ jobs a request causes and their log lines; a real `loo serve
--workers 2` adds up every worker's metrics (multiprocess) and logs JSON lines (issue 16)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from ledger.api.app import create_app
from ledger.app.service import Ledger
from ledger.bootstrap import Container, Settings
from ledger.observe import RequestIdFilter
from ledger.store.base import EventStore
from tests.e2e.club import Club
from tests.integration.pg_cluster import free_port
from tests.integration.worker_helpers import drain
from workers.queue import RqDispatcher

LOO = str(Path(sys.executable).with_name("loo"))
SEATS = [{"name": "Ann"}] + [{"name": f"Bot{i}", "bot": "heuristic"} for i in (1, 2, 3)]


@pytest.fixture
def rq_club(db_url: str, store: EventStore, queue: Any, worker_ledger: Ledger) -> Club:
    dispatcher = RqDispatcher(queue)
    container = Container(Settings(database_url=db_url, queue_name=queue.name), store, queue,
                          dispatcher, Ledger(store, dispatcher))
    app = create_app(container)
    app.config["TESTING"] = True
    return Club(app.test_client())


@pytest.mark.postgres
@pytest.mark.redis
def test_the_request_id_reaches_the_jobs_it_causes_and_their_log_lines(
        rq_club: Club, queue: Any, caplog: pytest.LogCaptureFixture) -> None:
    r = rq_club.c.post("/v1/tables", json={"seats": SEATS, "first_dealer": 1},
                       headers={"X-Request-Id": "club-req-1"})
    assert r.status_code == 201 and r.headers["X-Request-Id"] == "club-req-1"
    jobs = queue.get_jobs()
    assert jobs and {j.meta.get("request_id") for j in jobs} == {"club-req-1"}
    caplog.handler.addFilter(RequestIdFilter())
    caplog.set_level(logging.INFO, logger="workers.jobs")
    drain(queue)
    lines = [rec for rec in caplog.records if rec.name == "workers.jobs"]
    assert lines and {getattr(rec, "request_id", None) for rec in lines} == {"club-req-1"}
    # The bots moved in the worker, on the request's behalf.
    assert rq_club.view(_table(r.get_json()))["version"] > r.get_json()["version"]


def _table(created: dict[str, Any]) -> Any:
    from tests.e2e.club import Table

    return Table(created["id"], created["admin_token"],
                 [s["token"] for s in created["seats"]], created)


def call(base: str, path: str, body: Any = None, token: str | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    hdrs = {"Content-Type": "application/json", **(headers or {})}
    if token:
        hdrs["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, headers=hdrs)
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.status, dict(resp.headers), resp.read()


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in (
        "DATABASE_URL", "REDIS_URL", "LOO_QUEUE_PREFIX", "PROMETHEUS_MULTIPROC_DIR",
        "LOO_LOG_FORMAT")}
    env |= {"LOO_CHECKPOINT_KEY": "42" * 32, "LOO_LOG_LEVEL": "INFO"}
    log_path = tmp_path / "serve.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen([LOO, "serve", "--port", str(port), "--workers", "2"],
                                cwd=tmp_path, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        assert proc.poll() is None, log_path.read_text()
        try:
            call(base, "/healthz")
            break
        except OSError:
            assert time.monotonic() < deadline, log_path.read_text()
            time.sleep(0.05)
    try:
        yield base, log_path
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_loo_serve_workers_add_up_their_metrics_and_log_json(
        served: tuple[str, Path]) -> None:
    base, log_path = served
    _, _, raw = call(base, "/v1/tables", {"seats": SEATS, "first_dealer": 1})
    t = json.loads(raw)
    token = t["seats"][0]["token"]
    moves = 0
    for _ in range(30):  # Ann's moves over new connections: both workers take some
        view = json.loads(call(base, f"/v1/tables/{t['id']}", token=token)[2])
        if view["legal_actions"]:
            call(base, f"/v1/tables/{t['id']}/actions", view["legal_actions"][0], token,
                 headers={"X-Request-Id": f"move-{moves}"})
            moves += 1
        elif view["hand"]["phase"] == "complete":
            call(base, f"/v1/tables/{t['id']}/hands", {}, t["admin_token"])
    assert moves > 5
    events = json.loads(call(base, f"/v1/tables/{t['id']}/events?limit=1000",
                             token=t["admin_token"])[2])["events"]
    by_type = Counter(e["type"] for e in events)
    for _ in range(6):  # whichever worker answers the scrape, it counts both
        _, headers, text = call(base, "/metrics")
        assert headers["Content-Type"].startswith("text/plain")
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                   for f in text_string_to_metric_families(text.decode()) for s in f.samples}
        for kind, n in by_type.items():
            assert samples[("loo_events_appended_total", (("type", kind),))] == n, kind
        assert samples[("loo_http_requests_total", (
            ("method", "POST"), ("route", "/v1/tables/<table_id>/actions"),
            ("status", "200")))] == moves
    deadline = time.monotonic() + 10
    while True:  # the access lines are JSON, with the request id the client gave
        lines = [json.loads(line) for line in log_path.read_text().splitlines()
                 if line.startswith("{")]
        ids = {rec.get("request_id") for rec in lines if rec.get("route")}
        if "move-0" in ids or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert "move-0" in ids, lines[-5:]
    move = next(rec for rec in lines if rec.get("request_id") == "move-0")
    assert move["status"] == 200 and move["route"] == "/v1/tables/<table_id>/actions"
    assert move["level"] == "INFO" and "time" in move and move["ms"] > 0
