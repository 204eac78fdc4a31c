"""Scale out on the engines we have: two API processes and two RQ workers against one
PostgreSQL and one Redis. Tables created and played through either API are moved by
whichever worker takes the job; every table reaches its end with a contiguous, audited
log (no double move, no lost or doubled settlement), and both APIs serve the same state."""

from __future__ import annotations

import json
import os
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from ledger.bootstrap import Settings, open_database
from tests.e2e.test_serve_process import free_port
from tests.integration.worker_helpers import LOO, check_table, kill9, worker_process

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def _get(url: str, token: str | None = None) -> tuple[int, Any]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                    timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())
    except OSError:  # not listening yet
        return 0, None


def _post(url: str, body: Any) -> tuple[int, Any]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def _api(port: int, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([LOO, "serve", "--port", str(port), "--workers", "1"],
                            env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def _wait(predicate: Any, seconds: float, what: str) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def test_two_apis_and_two_workers_play_every_table_to_its_end(db_url: str, redis_url: str,
                                                              tmp_path: Path) -> None:

    prefix = f"scale{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "DATABASE_URL": db_url, "REDIS_URL": redis_url,
           "LOO_QUEUE_PREFIX": prefix, "LOO_LOG_LEVEL": "WARNING",
           "LOO_CHECKPOINT_KEY_FILE": str(tmp_path / "checkpoint.key")}
    ports = [free_port(), free_port()]
    apis = [_api(p, env, tmp_path / f"api{i}.log") for i, p in enumerate(ports)]
    workers = [worker_process(db_url, redis_url, prefix) for _ in range(2)]
    bases = [f"http://127.0.0.1:{p}" for p in ports]
    try:
        for base in bases:
            _wait(lambda b=base: _get(b + "/healthz")[0] == 200, 60, f"{base} to start")
        tables = []
        for i in range(6):  # all-bot tables, created through one API or the other
            status, created = _post(bases[i % 2] + "/v1/tables", {
                "seats": [{"name": f"B{k}", "bot": "heuristic"} for k in range(4)],
                "first_dealer": 0, "options": {"max_hands": 3}})
            assert status == 201, created
            tables.append(created)

        def closed(t: dict[str, Any]) -> bool:
            status, view = _get(f"{bases[0]}/v1/tables/{t['id']}", t["admin_token"])
            return status == 200 and view["status"] == "closed"

        _wait(lambda: all(closed(t) for t in tables), 120, "every table to close")
        store = open_database(Settings(database_url=db_url), upgrade=False)
        try:
            for t in tables:
                check_table(store, t["id"], hands=3)
                views = [_get(f"{b}/v1/tables/{t['id']}", t["admin_token"])[1] for b in bases]
                assert views[0]["version"] == views[1]["version"]
                assert (views[0]["seats"], views[0]["pool"]) == (views[1]["seats"],
                                                                 views[1]["pool"])
        finally:
            store.close()
    finally:
        for w in workers:
            kill9(w)
        for a in apis:
            a.terminate()
        for a in apis:
            try:
                a.wait(timeout=20)
            except subprocess.TimeoutExpired:
                a.kill()
