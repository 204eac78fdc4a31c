"""Rate limits (issue 16): per token and per address, creation harder than reads, 429
problem+json with Retry-After, probes never limited, counters in Redis when configured."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from ledger.api.app import create_app
from ledger.bootstrap import ConfigError, Settings, bootstrap
from tests.e2e.club import Club

SEATS = [{"name": n} for n in ("Ann", "Bob", "Cat", "Dan")]


@pytest.fixture
def limited(backend_url: str) -> Iterator[Any]:
    """An app factory on this backend with the given limit variables."""
    containers = []

    def make(settings: Settings | None = None, **limits: str) -> Any:
        container = bootstrap(settings or Settings(database_url=backend_url))
        containers.append(container)
        app = create_app(container, limits)
        app.config["TESTING"] = True
        return app

    yield make
    for container in containers:
        container.close()


def assert_429(r: Any) -> dict[str, Any]:
    assert r.status_code == 429, (r.status_code, r.get_json())
    assert r.mimetype == "application/problem+json"
    assert int(r.headers["Retry-After"]) >= 1
    body = r.get_json()
    assert body["code"] == "rate_limited" and body["status"] == 429
    return body


def test_creation_over_its_limit_is_429_and_creates_nothing(limited: Any) -> None:
    app = limited(LOO_RATE_LIMIT_CREATE_ADDRESS="3/minute")
    c = app.test_client()
    store = app.extensions["loo_container"].store
    made = [c.post("/v1/tables", json={"seats": SEATS}) for _ in range(3)]
    assert [r.status_code for r in made] == [201, 201, 201]
    before = set(store.table_ids())
    for _ in range(5):
        assert_429(c.post("/v1/tables", json={"seats": SEATS}))
        assert_429(c.post("/v1/clubs", json={"name": "Red Lion"}))  # the same budget
    assert set(store.table_ids()) == before  # nothing was created
    # Reads under their limit are unaffected, and so are the probes.
    table = made[0].get_json()
    for _ in range(20):
        r = c.get(f"/v1/tables/{table['id']}",
                  headers={"Authorization": f"Bearer {table['admin_token']}"})
        assert r.status_code == 200
    assert c.get("/healthz").status_code == 200
    assert c.get("/readyz").status_code == 200


def test_two_tokens_have_separate_budgets(limited: Any) -> None:
    app = limited(LOO_RATE_LIMIT_CREATE="2/minute")
    club = Club(app.test_client())
    r = club.c.post("/v1/clubs", json={"name": "Red Lion"})
    assert r.status_code == 201
    cid, owner = r.get_json()["id"], r.get_json()["token"]
    r = club.c.post(f"/v1/clubs/{cid}/tokens", json={"role": "scorer", "label": "s"},
                    headers=Club.auth(owner))
    scorer = r.get_json()["token"]

    def new_table(token: str) -> Any:
        return club.c.post(f"/v1/clubs/{cid}/tables", json={"seats": SEATS},
                           headers=Club.auth(token))

    assert [new_table(owner).status_code for _ in range(2)] == [201, 201]
    assert_429(new_table(owner))
    assert [new_table(scorer).status_code for _ in range(2)] == [201, 201]  # its own budget
    assert_429(new_table(scorer))
    # Reads with the owner's token still pass: another class, another budget.
    assert club.c.get(f"/v1/clubs/{cid}", headers=Club.auth(owner)).status_code == 200


def test_reads_have_their_own_limit_and_probes_have_none(limited: Any) -> None:
    app = limited(LOO_RATE_LIMIT_READ="5/minute")
    club = Club(app.test_client())
    t = club.create()
    assert [club.get(t).status_code for _ in range(5)] == [200] * 5
    assert_429(club.get(t))
    assert club.get(t, token=t.seats[0]).status_code == 200  # a seat token: its own budget
    for _ in range(50):
        assert club.c.get("/healthz").status_code == 200
        assert club.c.get("/readyz").status_code == 200


def test_limits_can_be_switched_off_and_bad_values_are_refused(limited: Any) -> None:
    app = limited(LOO_RATE_LIMITS="off", LOO_RATE_LIMIT_CREATE_ADDRESS="1/minute")
    c = app.test_client()
    assert [c.post("/v1/tables", json={"seats": SEATS}).status_code
            for _ in range(3)] == [201] * 3
    with pytest.raises(ConfigError, match="LOO_RATE_LIMIT_READ"):
        limited(LOO_RATE_LIMIT_READ="lots")


@pytest.mark.redis
def test_counters_are_kept_in_redis_when_configured(tmp_path: Any, redis_url: str) -> None:
    """Two API processes (two apps) on one Redis share a budget; the keys carry the prefix."""
    prefix = f"loo-rl-{uuid.uuid4().hex[:8]}"
    settings = Settings(database_url=f"sqlite:///{tmp_path}/loo.db", redis_url=redis_url,
                        queue_name=prefix)
    apps, containers = [], []
    for _ in range(2):
        containers.append(bootstrap(settings))
        apps.append(create_app(containers[-1], {"LOO_RATE_LIMIT_CREATE_ADDRESS": "3/minute"}))
    try:
        a, b = (x.test_client() for x in apps)
        assert a.post("/v1/tables", json={"seats": SEATS}).status_code == 201
        assert b.post("/v1/tables", json={"seats": SEATS}).status_code == 201
        assert a.post("/v1/tables", json={"seats": SEATS}).status_code == 201
        assert_429(b.post("/v1/tables", json={"seats": SEATS}))
        keys = [k.decode() for k in redis.Redis.from_url(redis_url).keys(f"*{prefix}*")]
        assert any("address:127.0.0.1" in k and "create" in k for k in keys), keys
    finally:
        for container in containers:
            container.close()


def test_a_redis_that_stops_answering_does_not_fail_requests(tmp_path: Any) -> None:
    """Counters in a Redis that is down: requests are served, counted in memory meanwhile."""
    import time
    from dataclasses import replace

    container = bootstrap(Settings(database_url=f"sqlite:///{tmp_path}/loo.db"))
    dead = replace(container, settings=replace(container.settings,
                                               redis_url="redis://127.0.0.1:1/0"))
    try:
        app = create_app(dead, {"LOO_RATE_LIMIT_CREATE_ADDRESS": "2/minute"})
        c = app.test_client()
        started = time.monotonic()
        answers = [c.post("/v1/tables", json={"seats": SEATS}).status_code for _ in range(3)]
        assert answers == [201, 201, 429]  # still limited: in memory until Redis is back
        assert time.monotonic() - started < 5
    finally:
        container.close()


def test_redis_back_after_an_outage_holds_the_counters_again(tmp_path: Any) -> None:
    """Counted in memory while Redis is down; once it answers (looked at again every
    RECHECK seconds) the counters are Redis's again, shared with every other process."""
    from dataclasses import replace

    from tests.integration.redis_server import RedisServer

    server = RedisServer()  # not started yet: down from the first request
    container = bootstrap(Settings(database_url=f"sqlite:///{tmp_path}/loo.db"))
    # The limiter's counters in that Redis; jobs stay in-process.
    container = replace(container, settings=replace(container.settings, redis_url=server.url,
                                                    queue_name="loo-rl-back"))
    try:
        app = create_app(container, {"LOO_RATE_LIMIT_CREATE_ADDRESS": "2/minute"})
        limiter = app.extensions["loo_limiter"]
        limiter.RECHECK = 0.0  # look again at every request while it is down
        c = app.test_client()
        assert c.post("/v1/tables", json={"seats": SEATS}).status_code == 201
        assert limiter.down
        server.start()
        assert c.post("/v1/tables", json={"seats": SEATS}).status_code == 201
        assert not limiter.down
        keys = [k.decode() for k in redis.Redis.from_url(server.url).keys("*loo-rl-back*")]
        assert any("address:127.0.0.1" in k and "/create/" in k for k in keys), keys
        # Redis counted one of the two: a second process sharing it may create one more.
        other = create_app(container, {"LOO_RATE_LIMIT_CREATE_ADDRESS": "2/minute"})
        assert other.test_client().post("/v1/tables", json={"seats": SEATS}).status_code == 201
        assert_429(c.post("/v1/tables", json={"seats": SEATS}))
    finally:
        container.close()
        server.remove()


def test_a_variable_with_several_limits_refuses_on_the_one_spent(limited: Any) -> None:
    app = limited(LOO_RATE_LIMIT_CREATE_ADDRESS="50/minute;2/hour")
    c = app.test_client()
    assert [c.post("/v1/tables", json={"seats": SEATS}).status_code
            for _ in range(2)] == [201, 201]
    body = assert_429(r := c.post("/v1/tables", json={"seats": SEATS}))
    assert "LOO_RATE_LIMIT_CREATE_ADDRESS: 50/minute;2/hour per address" in body["detail"]
    assert 60 < int(r.headers["Retry-After"]) <= 3600  # the hour's window, not the minute's


def test_unknown_paths_are_not_counted(limited: Any) -> None:
    app = limited(LOO_RATE_LIMIT_READ_ADDRESS="2/minute")
    c = app.test_client()
    for _ in range(5):
        assert c.get("/v1/nowhere").status_code == 404
    t = c.post("/v1/tables", json={"seats": SEATS}).get_json()
    auth = {"Authorization": f"Bearer {t['admin_token']}"}
    assert [c.get(f"/v1/tables/{t['id']}", headers=auth).status_code
            for _ in range(3)] == [200, 200, 429]


# ---- behind a proxy: X-Forwarded-For counts only when the operator trusts proxies ----------
PROXY = {"REMOTE_ADDR": "10.0.0.2"}  # every request arrives from the proxy's address


def _create(c: Any, forwarded_for: str) -> int:
    return c.post("/v1/tables", json={"seats": SEATS}, environ_base=PROXY,
                  headers={"X-Forwarded-For": forwarded_for}).status_code


def test_without_trusted_proxies_x_forwarded_for_cannot_buy_a_fresh_budget(limited: Any) -> None:
    app = limited(LOO_RATE_LIMIT_CREATE_ADDRESS="3/minute")
    c = app.test_client()
    # A client writing a new address in the header each time is still one address.
    assert [_create(c, f"203.0.113.{i}") for i in range(3)] == [201, 201, 201]
    assert _create(c, "203.0.113.99") == 429


def test_with_one_trusted_proxy_each_client_address_has_its_budget(limited: Any) -> None:
    app = limited(LOO_RATE_LIMIT_CREATE_ADDRESS="3/minute", LOO_TRUSTED_PROXIES="1")
    c = app.test_client()
    assert [_create(c, "198.51.100.1") for _ in range(3)] == [201, 201, 201]
    assert _create(c, "198.51.100.1") == 429
    assert _create(c, "198.51.100.2") == 201  # another client behind the same proxy
    # The client's own X-Forwarded-For is kept by the proxy, which appends the address it
    # saw: only that last entry counts, so a forged one buys nothing.
    assert _create(c, "192.0.2.50, 198.51.100.1") == 429
    assert _create(c, "198.51.100.1, 198.51.100.3") == 201  # and cannot borrow another's


def test_trusted_proxies_takes_a_small_count(limited: Any) -> None:
    for bad in ("yes", "-1", "11", "1.5"):
        with pytest.raises(ConfigError, match="LOO_TRUSTED_PROXIES"):
            limited(LOO_TRUSTED_PROXIES=bad)


def test_with_redis_a_request_spends_its_token_and_address_budgets_in_one_round_trip(
        tmp_path: Any) -> None:
    """Both counters (and a refusal's reset time) in one Lua script: one command a request,
    where limits' own calls took one per counter and another for the refusal. Spent in the
    same order as before: a token refused spends nothing of its address's budget."""
    from dataclasses import replace

    from tests.integration.redis_server import RedisServer

    server = RedisServer()  # its own server: the command counts are this test's alone
    server.start()
    container = bootstrap(Settings(database_url=f"sqlite:///{tmp_path}/loo.db"))
    container = replace(container, settings=replace(container.settings, redis_url=server.url,
                                                    queue_name="loo-rl-one"))
    try:
        app = create_app(container, {"LOO_RATE_LIMIT_READ": "3/minute",
                                     "LOO_RATE_LIMIT_READ_ADDRESS": "5/minute"})
        c = Club(app.test_client())
        t = c.create(first_dealer=0)
        r = redis.Redis.from_url(server.url)

        def calls() -> dict[str, int]:  # a script's own commands are counted too
            return {k.removeprefix("cmdstat_"): v["calls"]
                    for k, v in r.info("commandstats").items()}

        before = calls()
        answers = [c.get(t).status_code for _ in range(4)]  # the admin token: 3 a minute
        assert answers == [200, 200, 200, 429]
        spent = {k: n - before.get(k, 0) for k, n in calls().items() if n != before.get(k, 0)}
        # One script a request, the refusal's included (limits' own calls were a script per
        # counter and a GET and a TTL for the refusal); inside, a counter each and a TTL.
        assert spent.pop("evalsha") == 4 and spent.pop("info") == 1
        assert spent == {"incrby": 2 * 3 + 1, "expire": 2, "ttl": 1}  # 2 new windows
        body = assert_429(c.get(t))
        assert "LOO_RATE_LIMIT_READ: 3/minute per token" in body["detail"]
        # The refused token spent nothing of the address's 5: two reads without a token
        # (404s of an unknown table are counted too) pass, the third is refused.
        anon = [app.test_client().get(f"/v1/tables/{t.id}x").status_code for _ in range(3)]
        assert anon == [404, 404, 429]
        keys = sorted(k.decode() for k in r.keys("LIMITS:LIMITER/loo-rl-one/*/read/*"))
        assert [k.split("/")[2].split(":")[0] for k in keys] == ["address", "token"], keys
        assert all(0 < r.ttl(k) <= 60 for k in keys)
    finally:
        container.close()
        server.remove()


# ---- a client on this host ------------------------------------------------------------------
def test_a_client_on_this_host_is_not_limited_unless_asked(limited: Any) -> None:
    """LOO_RATE_LIMIT_LOOPBACK=exempt (the default): the operator's scripts and a club's own
    software beside the service run at full speed; anyone else is counted as before."""
    app = limited(LOO_RATE_LIMIT_CREATE_ADDRESS="3/minute", LOO_RATE_LIMIT_CREATE="3/minute",
                  LOO_RATE_LIMIT_READ="3/minute", LOO_RATE_LIMIT_LOOPBACK="exempt")
    c = app.test_client()
    for local in ("127.0.0.1", "127.0.1.1", "::1"):
        assert [c.post("/v1/tables", json={"seats": SEATS},
                       environ_base={"REMOTE_ADDR": local}).status_code
                for _ in range(5)] == [201] * 5, local
    t = c.post("/v1/tables", json={"seats": SEATS}).get_json()
    auth = {"Authorization": f"Bearer {t['admin_token']}"}
    assert {c.get(f"/v1/tables/{t['id']}", headers=auth).status_code for _ in range(6)} == {200}
    away = {"REMOTE_ADDR": "192.0.2.7"}
    assert [c.post("/v1/tables", json={"seats": SEATS}, environ_base=away).status_code
            for _ in range(4)] == [201, 201, 201, 429]
    # The token a local client used is limited where someone else uses it.
    assert [c.get(f"/v1/tables/{t['id']}", headers=auth, environ_base=away).status_code
            for _ in range(4)] == [200, 200, 200, 429]


@pytest.mark.parametrize("header", ["X-Forwarded-For", "Forwarded", "X-Real-IP"])
def test_a_proxy_on_this_host_is_counted_though_its_address_is_loopback(
        limited: Any, header: str) -> None:
    """nginx on the same host without LOO_TRUSTED_PROXIES: every request comes from
    127.0.0.1, but names a client: counted (all of them as one address), never exempt."""
    app = limited(LOO_RATE_LIMIT_CREATE_ADDRESS="3/minute", LOO_RATE_LIMIT_LOOPBACK="exempt")
    c = app.test_client()
    value = "for=198.51.100.4" if header == "Forwarded" else "198.51.100.4"
    assert [c.post("/v1/tables", json={"seats": SEATS}, headers={header: value}).status_code
            for _ in range(4)] == [201, 201, 201, 429]


def test_behind_trusted_proxies_a_forged_loopback_address_buys_nothing(limited: Any) -> None:
    app = limited(LOO_RATE_LIMIT_CREATE_ADDRESS="3/minute", LOO_TRUSTED_PROXIES="1",
                  LOO_RATE_LIMIT_LOOPBACK="exempt")
    c = app.test_client()
    # The client wrote 127.0.0.1; the proxy appended the address it saw, which counts.
    assert [_create(c, "127.0.0.1, 198.51.100.9") for _ in range(4)] == [201, 201, 201, 429]
    # A client on the proxy's host comes through the proxy: counted too.
    assert [_create(c, "127.0.0.1") for _ in range(4)] == [201, 201, 201, 429]


def test_loopback_takes_exempt_or_limit(limited: Any) -> None:
    with pytest.raises(ConfigError, match="LOO_RATE_LIMIT_LOOPBACK"):
        limited(LOO_RATE_LIMIT_LOOPBACK="sometimes")
    app = limited(LOO_RATE_LIMIT_CREATE_ADDRESS="2/minute", LOO_RATE_LIMIT_LOOPBACK="limit")
    c = app.test_client()
    assert [c.post("/v1/tables", json={"seats": SEATS}).status_code
            for _ in range(3)] == [201, 201, 429]
