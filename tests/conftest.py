"""Shared fixtures: one fresh PostgreSQL database and one Redis db per test session."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

# Property tests check what is true, not how fast: no per-example deadline (on a loaded
# 2-core machine one slow example would fail a true property), same example budget.
settings.register_profile("loo", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("loo")

PG_ADMIN_URL = os.environ.get("LOO_TEST_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_BASE_URL = os.environ.get("LOO_TEST_REDIS_URL", "redis://127.0.0.1:6379")
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}

# Rate limits stay on in the suite (their cost is in every request), but high enough that
# no test playing a game at full speed meets one; tests of the limits set their own. Set in
# the environment, so `loo serve` processes the tests start inherit them.
for _var in ("LOO_RATE_LIMIT_CREATE", "LOO_RATE_LIMIT_CREATE_ADDRESS", "LOO_RATE_LIMIT_WRITE",
             "LOO_RATE_LIMIT_WRITE_ADDRESS", "LOO_RATE_LIMIT_READ", "LOO_RATE_LIMIT_READ_ADDRESS"):
    os.environ.setdefault(_var, "100000/second")
# The suite's clients are on this host: counted all the same (test_rate_limits.py tests the
# default, that such a client is not limited).
os.environ.setdefault("LOO_RATE_LIMIT_LOOPBACK", "limit")


def _unavailable(what: str, err: Exception) -> None:
    """In CI a missing server fails the run; on a laptop the test is skipped."""
    msg = f"{what} unavailable: {err}"
    if IN_CI:
        pytest.fail(msg, pytrace=False)
    pytest.skip(msg)


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """A PostgreSQL database created for this test session and dropped after it."""
    try:
        import psycopg

        admin = psycopg.connect(PG_ADMIN_URL, autocommit=True, connect_timeout=5)
    except Exception as err:  # noqa: BLE001 - any connection failure means "no server"
        _unavailable("PostgreSQL", err)
    name = f"loo_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    base = PG_ADMIN_URL.rsplit("/", 1)[0]
    try:
        yield f"{base}/{name}"
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """An empty Redis db number of its own for this session (flushed after it)."""
    try:
        import redis

        probe = redis.Redis.from_url(REDIS_BASE_URL + "/0", socket_connect_timeout=3)
        probe.ping()
    except Exception as err:  # noqa: BLE001
        _unavailable("Redis", err)
    # Claim an empty db number atomically, so parallel runs never share one and no db that
    # holds anything (a developer's queue, another program's data) is ever flushed.
    try:
        dbs = int(probe.config_get("databases").get("databases", 16))
    except Exception:  # noqa: BLE001 - CONFIG may be disabled: assume Redis's default
        dbs = 16
    for db in range(1, dbs):
        claim = redis.Redis.from_url(f"{REDIS_BASE_URL}/{db}")
        if claim.dbsize() != 0 or not claim.set("loo:test-claim", str(os.getpid()),
                                                  nx=True, ex=3600):
            continue
        if claim.dbsize() != 1:  # somebody else wrote to it meanwhile: not ours after all
            claim.delete("loo:test-claim")
            continue
        try:
            yield f"{REDIS_BASE_URL}/{db}"
        finally:
            claim.flushdb()
        return
    pytest.fail("no empty Redis db number (1..databases-1) for this test session: the tests "
                "flush only an empty one; empty one you do not need (redis-cli -n N flushdb)")
