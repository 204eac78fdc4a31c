"""Configuration from the environment: one line naming the variable, or a working setup.

The CLI cases run the real `loo` console script in a subprocess, as a user would.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from ledger.bootstrap import DEFAULT_DATABASE_URL, ConfigError, Settings, bootstrap

LOO = str(Path(sys.executable).with_name("loo"))


def run_loo(*args: str, cwd: Path, timeout: float = 60, **env: str) -> subprocess.CompletedProcess:
    """`loo ARGS` with only PATH/HOME/LANG from the outside, plus `env`."""
    base = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    return subprocess.run([LOO, *args], cwd=cwd, env={**base, **env}, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def assert_one_line_error(result: subprocess.CompletedProcess, variable: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {variable}: "), lines[0]
    assert "Traceback" not in result.stderr + result.stdout


# ---- Settings.from_env -------------------------------------------------------------------
def test_defaults_are_the_embedded_sqlite_file_and_in_process_jobs() -> None:
    s = Settings.from_env({})
    assert s == Settings(DEFAULT_DATABASE_URL, None, "loo", "INFO")
    assert s.database_url == "sqlite:///loo.db"


def test_empty_variables_count_as_unset() -> None:
    env = {"DATABASE_URL": "", "REDIS_URL": " ", "LOO_QUEUE_PREFIX": "", "LOO_LOG_LEVEL": ""}
    assert Settings.from_env(env) == Settings()


def test_settings_read_every_variable() -> None:
    s = Settings.from_env({"DATABASE_URL": "postgresql://u@h/db", "REDIS_URL": "redis://h:1/2",
                           "LOO_QUEUE_PREFIX": "club-a", "LOO_LOG_LEVEL": "debug"})
    assert s == Settings("postgresql://u@h/db", "redis://h:1/2", "club-a", "DEBUG")


@pytest.mark.parametrize(("env", "variable"), [
    ({"DATABASE_URL": "mysql://x"}, "DATABASE_URL"),
    ({"DATABASE_URL": "garbage"}, "DATABASE_URL"),
    ({"DATABASE_URL": "sqlite:///loo.db?mode=ro"}, "DATABASE_URL"),  # not a file name
    ({"DATABASE_URL": "sqlite:///"}, "DATABASE_URL"),  # no file at all
    ({"DATABASE_URL": "sqlite://rel/loo.db"}, "DATABASE_URL"),  # two slashes: not sqlite:///
    ({"REDIS_URL": "http://x"}, "REDIS_URL"),
    ({"REDIS_URL": "localhost:6379"}, "REDIS_URL"),
    ({"REDIS_URL": "redis://localhost:6379/abc"}, "REDIS_URL"),  # redis-py: db 0, silently
    ({"REDIS_URL": "redis://localhost:6379/1/5"}, "REDIS_URL"),  # redis-py: db 15, silently
    ({"LOO_QUEUE_PREFIX": "a queue"}, "LOO_QUEUE_PREFIX"),
    ({"LOO_LOG_LEVEL": "loud"}, "LOO_LOG_LEVEL"),
])
def test_bad_values_name_their_variable(env: dict[str, str], variable: str) -> None:
    with pytest.raises(ConfigError, match=f"^{variable}: "):
        Settings.from_env(env)


@pytest.mark.parametrize("url", ["redis://h:6379", "redis://h:6379/", "redis://h/8",
                                 "redis://h/8/", "rediss://u:p@h:6380/2",
                                 "unix:///run/redis.sock?db=3"])
def test_redis_urls_with_or_without_a_database_number_are_accepted(url: str) -> None:
    assert Settings.from_env({"REDIS_URL": url}).redis_url == url


def test_messages_never_show_a_password() -> None:
    with pytest.raises(ConfigError) as err:
        bootstrap(Settings.from_env({"DATABASE_URL": "postgresql://u:s3cret@127.0.0.1:1/x"}))
    assert "s3cret" not in str(err.value) and "u:***@" in str(err.value)


# ---- the console script ------------------------------------------------------------------
@pytest.mark.parametrize("url", ["postgresql://nobody@127.0.0.1:1/x", "mysql://x", "garbage"])
def test_bad_database_url_stops_db_upgrade_with_one_line(tmp_path: Path, url: str) -> None:
    result = run_loo("db", "upgrade", cwd=tmp_path, DATABASE_URL=url)
    assert_one_line_error(result, "DATABASE_URL")


@pytest.mark.parametrize("args", [("play",), ("replay", "abc", "1"), ("audit", "abc")])
@pytest.mark.parametrize(("variable", "value"), [
    ("DATABASE_URL", "mysql://x"), ("DATABASE_URL", "postgresql://nobody@127.0.0.1:1/x"),
    ("LOO_LOG_LEVEL", "loud"),
])
def test_game_commands_stop_on_bad_config_with_one_line(tmp_path: Path, args: tuple[str, ...],
                                                        variable: str, value: str) -> None:
    result = run_loo(*args, cwd=tmp_path, **{variable: value})
    assert_one_line_error(result, variable)


def test_play_needs_a_reachable_redis_url_but_replay_and_audit_only_read(
        tmp_path: Path) -> None:
    result = run_loo("play", cwd=tmp_path, REDIS_URL="redis://127.0.0.1:1/0")
    assert_one_line_error(result, "REDIS_URL")
    audit = run_loo("audit", "abc", cwd=tmp_path, REDIS_URL="redis://127.0.0.1:1/0")
    assert audit.returncode == 1 and "no table 'abc'" in audit.stderr, audit.stderr


def test_unreachable_database_names_the_url(tmp_path: Path) -> None:
    url = "postgresql://nobody@127.0.0.1:1/x"
    result = run_loo("db", "upgrade", cwd=tmp_path, DATABASE_URL=url)
    assert result.stderr.startswith("error: DATABASE_URL: ") and url in result.stderr


@pytest.mark.parametrize("url", ["redis://127.0.0.1:1/0", "http://x", "garbage"])
def test_bad_redis_url_stops_the_worker_with_one_line(tmp_path: Path, url: str) -> None:
    result = run_loo("worker", "--burst", cwd=tmp_path, REDIS_URL=url)
    assert_one_line_error(result, "REDIS_URL")


def test_worker_without_redis_url_says_it_needs_one(tmp_path: Path) -> None:
    result = run_loo("worker", "--burst", cwd=tmp_path)
    assert_one_line_error(result, "REDIS_URL")
    assert "not set" in result.stderr


def test_bad_database_url_stops_serve_before_it_listens(tmp_path: Path) -> None:
    result = run_loo("serve", "--port", "1", cwd=tmp_path, DATABASE_URL="mysql://x")
    assert_one_line_error(result, "DATABASE_URL")


# README "Rotating the checkpoint key": a public key (hex or base64) per entry, comma-separated.
GOOD_PUBLIC = "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"
BAD_RETIRED = ["not-a-key", GOOD_PUBLIC + ",abc", GOOD_PUBLIC[:-2], "AAAA" * 11 + "AA==",
               GOOD_PUBLIC + GOOD_PUBLIC]


@pytest.mark.parametrize("value", BAD_RETIRED)
def test_checkpoints_a_bad_retired_key_is_a_one_line_error_naming_the_entry(value: str) -> None:
    """Before, LOO_CHECKPOINT_RETIRED_KEYS was not read at all: a typo in it would have left
    every table signed with that key failing its audit, with nothing said at start."""
    with pytest.raises(ConfigError, match="^LOO_CHECKPOINT_RETIRED_KEYS: entry [12] ") as err:
        Settings.from_env({"LOO_CHECKPOINT_RETIRED_KEYS": value})
    assert "\n" not in str(err.value) and "32 bytes" in str(err.value)


@pytest.mark.parametrize("value", BAD_RETIRED)
def test_checkpoints_a_bad_revoked_key_is_a_one_line_error_naming_the_entry(value: str) -> None:
    with pytest.raises(ConfigError, match="^LOO_CHECKPOINT_REVOKED_KEYS: entry [12] ") as err:
        Settings.from_env({"LOO_CHECKPOINT_REVOKED_KEYS": value})
    assert "\n" not in str(err.value) and "32 bytes" in str(err.value)
    assert Settings.from_env({"LOO_CHECKPOINT_REVOKED_KEYS": GOOD_PUBLIC + ","}
                             ).checkpoint_revoked_keys == (GOOD_PUBLIC,)


def test_checkpoints_retired_keys_take_hex_and_base64_and_skip_empty_entries() -> None:
    import base64

    b64 = base64.b64encode(bytes.fromhex(GOOD_PUBLIC)).decode()
    s = Settings.from_env({"LOO_CHECKPOINT_RETIRED_KEYS": f" {GOOD_PUBLIC} , {b64},"})
    assert s.checkpoint_retired_keys == (GOOD_PUBLIC, b64)
    assert Settings.from_env({}).checkpoint_retired_keys == ()


def test_checkpoints_the_current_private_key_among_the_retired_ones_is_refused(
        tmp_path: Path) -> None:
    seed = "11" * 32
    settings = Settings.from_env({"DATABASE_URL": f"sqlite:///{tmp_path}/loo.db",
                                  "LOO_CHECKPOINT_KEY": seed,
                                  "LOO_CHECKPOINT_RETIRED_KEYS": f"{GOOD_PUBLIC},{seed}"})
    with pytest.raises(ConfigError, match="^LOO_CHECKPOINT_RETIRED_KEYS: entry 2 is the current "
                                          "checkpoint key's private key"):
        bootstrap(settings)


@pytest.mark.parametrize("args", [("serve", "--port", "0"), ("worker", "--burst"),
                                  ("audit", "abc"), ("db", "upgrade")])
def test_checkpoints_a_bad_retired_key_stops_every_entry_point_with_one_line(
        tmp_path: Path, args: tuple[str, ...]) -> None:
    # This checkout's code (the console script may be another checkout's editable install).
    root = str(Path(__file__).resolve().parents[2])
    result = run_loo(*args, cwd=tmp_path, LOO_CHECKPOINT_RETIRED_KEYS=f"{GOOD_PUBLIC},oops",
                     REDIS_URL="redis://127.0.0.1:1/0", PYTHONPATH=root)
    assert_one_line_error(result, "LOO_CHECKPOINT_RETIRED_KEYS")
    assert "entry 2 ('oops')" in result.stderr


def test_db_upgrade_on_the_default_creates_loo_db_in_the_working_directory(
        tmp_path: Path) -> None:
    result = run_loo("db", "upgrade", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "loo.db").is_file()
    again = run_loo("db", "upgrade", cwd=tmp_path)  # idempotent
    assert again.returncode == 0, again.stderr


@pytest.mark.postgres
def test_db_upgrade_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    result = run_loo("db", "upgrade", cwd=tmp_path, DATABASE_URL=pg_url)
    assert result.returncode == 0, result.stderr
    assert "event store ready" in result.stdout


@pytest.mark.postgres
@pytest.mark.parametrize("option", ["search_path%3Dno_such_schema",
                                    "default_transaction_read_only%3Don"])
def test_a_postgresql_database_that_refuses_the_schema_stops_with_one_line(
        tmp_path: Path, pg_url: str, option: str) -> None:
    """The server answers but the migration fails (nowhere to create, read-only): still the
    variable and the reason on one line, not a psycopg traceback. A database of its own,
    never migrated (an up-to-date schema is only read, and would start)."""
    import psycopg

    name = f"loo_refuses_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"'.encode())
    try:
        url = f"{pg_url.rsplit('/', 1)[0]}/{name}?options=-c{option}"
        for args in (("db", "upgrade"), ("play",), ("audit", "abc")):
            assert_one_line_error(run_loo(*args, cwd=tmp_path, DATABASE_URL=url),
                                  "DATABASE_URL")
    finally:
        with psycopg.connect(pg_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'.encode())


@pytest.mark.postgres
@pytest.mark.redis
def test_worker_burst_with_good_config_exits_cleanly(tmp_path: Path, pg_url: str,
                                                     redis_url: str) -> None:
    result = run_loo("worker", "--burst", cwd=tmp_path, DATABASE_URL=pg_url,
                     REDIS_URL=redis_url, LOO_QUEUE_PREFIX=f"t{uuid.uuid4().hex[:8]}")
    assert result.returncode == 0, result.stderr


# ---- /readyz reports what was configured -------------------------------------------------
@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    for var in ("DATABASE_URL", "REDIS_URL", "LOO_QUEUE_PREFIX", "LOO_LOG_LEVEL"):
        monkeypatch.delenv(var, raising=False)
    yield tmp_path


def test_readyz_reports_sqlite_and_inline_jobs_by_default(in_tmp: Path) -> None:
    from ledger.api.app import create_app

    app = create_app()
    body = app.test_client().get("/readyz").get_json()
    assert body["store"]["backend"] == "sqlite"
    assert body["queue"] == {"backend": "inline"}
    assert (in_tmp / "loo.db").is_file()
    app.extensions["loo_container"].close()


@pytest.mark.postgres
@pytest.mark.redis
def test_readyz_reports_postgresql_and_rq(in_tmp: Path, pg_url: str, redis_url: str) -> None:
    from ledger.api.app import create_app

    queue = f"t{uuid.uuid4().hex[:8]}"
    app = create_app(test_config={"DATABASE_URL": pg_url, "REDIS_URL": redis_url,
                                  "LOO_QUEUE_PREFIX": queue})
    r = app.test_client().get("/readyz")
    assert r.status_code == 200, r.get_json()
    body = r.get_json()
    assert body["store"]["backend"] == "postgresql"
    assert body["queue"]["backend"] == "rq" and body["queue"]["queue"] == queue
    app.extensions["loo_container"].close()


class StoreDown:
    def ping(self) -> dict:
        raise OSError("connection refused")


@pytest.mark.parametrize("down", ["store", "queue"])
def test_readyz_is_503_problem_when_a_dependency_is_down(down: str) -> None:
    from ledger.api.app import create_app
    from workers.queue import RqDispatcher, make_queue

    container = bootstrap(Settings.from_env({"DATABASE_URL": "memory://"}))
    if down == "queue":  # a Redis that stopped answering after start-up
        dead = make_queue("redis://127.0.0.1:1/0", "loo", socket_timeout=1)
        container = replace(container, queue=dead, dispatcher=RqDispatcher(dead))
    else:
        container = replace(container, store=StoreDown())
    r = create_app(container).test_client().get("/readyz")
    assert r.status_code == 503
    assert r.mimetype == "application/problem+json"
    assert r.get_json()["code"] == f"{down}_unavailable"
    assert "Traceback" not in r.get_data(as_text=True)


# ---- the queue REDIS_URL selects ---------------------------------------------------------
@pytest.mark.postgres
@pytest.mark.redis
def test_worker_process_runs_the_jobs_the_api_enqueued(in_tmp: Path, pg_url: str,
                                                       redis_url: str) -> None:
    from ledger.api.app import create_app

    env = {"DATABASE_URL": pg_url, "REDIS_URL": redis_url,
           "LOO_QUEUE_PREFIX": f"t{uuid.uuid4().hex[:8]}"}
    app = create_app(test_config=env)
    client = app.test_client()
    seats = [{"name": f"Bot {i}", "bot": "heuristic"} for i in range(3)]
    created = client.post("/v1/tables", json={"seats": seats, "first_dealer": 0})
    assert created.status_code == 201, created.get_json()
    table_id, version = created.get_json()["id"], created.get_json()["version"]
    container = app.extensions["loo_container"]
    assert container.queue.count == 1  # the bots' turn waits for a worker
    result = run_loo("worker", "--burst", "--reconcile-every", "0", cwd=in_tmp, **env)
    assert result.returncode == 0, result.stderr
    assert container.queue.count == 0
    assert container.ledger.store.version(table_id) > version  # the bots played
    container.queue.delete(delete_jobs=True)
    container.close()


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


@pytest.mark.redis
@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_the_worker_runs_rqs_scheduler_without_a_child_process(tmp_path: Path,
                                                               redis_url: str) -> None:
    """rq's scheduler forked a child that a killed worker left behind (or, dead, left as
    a zombie): `loo worker` runs it in a thread instead, and scheduled jobs still run."""
    from datetime import UTC, datetime, timedelta

    from rq.job import JobStatus

    from workers.queue import make_queue

    name = f"t{uuid.uuid4().hex[:8]}"
    env = {k: os.environ[k] for k in ("PATH", "HOME") if k in os.environ}
    env |= {"DATABASE_URL": "memory://", "REDIS_URL": redis_url, "LOO_QUEUE_PREFIX": name}
    queue = make_queue(redis_url, name)
    worker = subprocess.Popen([LOO, "worker", "--reconcile-every", "0"], cwd=tmp_path, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        job = queue.enqueue_at(datetime.now(UTC) + timedelta(seconds=1),
                               "os.getpid")
        deadline = time.monotonic() + 30
        while job.get_status() != JobStatus.FINISHED:
            assert worker.poll() is None and time.monotonic() < deadline, job.get_status()
            time.sleep(0.05)
        assert _children(worker.pid) == []  # nothing forked: nothing to outlive it
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
        queue.delete(delete_jobs=True)


@pytest.mark.redis
def test_rq_dispatcher_dedupes_retries_and_serialises_as_json(redis_url: str) -> None:
    from rq.serializers import JSONSerializer

    from workers.queue import RqDispatcher, make_queue

    queue = make_queue(redis_url, f"t{uuid.uuid4().hex[:8]}")
    try:
        d = RqDispatcher(queue)
        d.enqueue("workers.jobs.advance", "table1", 7, job_id="advance:table1:7")
        d.enqueue("workers.jobs.advance", "table1", 7, job_id="advance:table1:7")
        assert queue.count == 1  # the duplicate of a queued job is a no-op
        job = queue.jobs[0]
        assert job.id == "advance_table1_7"  # rq ids allow only [A-Za-z0-9_-]
        assert job.func_name == "workers.jobs.advance" and job.args == ["table1", 7]
        assert (job.retries_left, job.retry_intervals) == (3, [0, 5, 15])
        assert queue.serializer is JSONSerializer
        d.enqueue("workers.jobs.advance", "table1", 8, job_id="advance:table1:8")
        assert queue.count == 2
    finally:
        queue.delete(delete_jobs=True)


CHAIN: list[tuple[str, int, str]] = []
INLINE = None  # the dispatcher chain_job enqueues its follow-up on


def chain_job(name: str, depth: int, *, tag: str) -> None:
    """A job that enqueues its follow-up, as a long bot run does."""
    CHAIN.append((name, depth, tag))
    if depth < 3:
        INLINE.enqueue(f"{__name__}.chain_job", name, depth + 1, job_id=f"{name}:{depth + 1}")
        assert CHAIN[-1] == (name, depth, tag)  # the follow-up waits: no recursion


def test_inline_dispatcher_runs_follow_ups_in_order_without_recursing() -> None:
    global INLINE
    from workers.queue import InlineDispatcher

    INLINE = InlineDispatcher()
    INLINE.bind(tag="bound")  # what bootstrap does with the ledger
    CHAIN.clear()
    INLINE.enqueue(f"{__name__}.chain_job", "a", 0, job_id="a:0")
    assert CHAIN == [("a", 0, "bound"), ("a", 1, "bound"), ("a", 2, "bound"),
                     ("a", 3, "bound")]


def test_inline_dispatcher_logs_a_failing_job_and_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    from workers.queue import InlineDispatcher

    InlineDispatcher().enqueue("os.path.nonexistent_function", job_id="x:1")
    assert "in-process job x:1 failed" in caplog.text

