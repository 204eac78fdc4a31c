"""Rate limits (on `limits`): a budget per bearer token and one per client address.

Requests fall in three classes, each with its own budget, shared by every route of the
class: `create` (a new table or club: POST /v1/tables, /v1/clubs, /v1/clubs/{id}/tables and
its import), `write` (any other POST, PUT, PATCH or DELETE) and `read` (the rest). A request
with a bearer token spends from that token's budget (the token is kept only as a hash) and
from its address's; one without a token from its address's alone. Over budget: 429
problem+json with Retry-After, before the body is read. The probes (/healthz, /readyz),
/metrics and the page assets are never limited, nor (by default, LOO_RATE_LIMIT_LOOPBACK) a
client on the service's own host that no proxy forwarded: the operator's scripts and a
club's software beside the service run at full speed, which a public server's budgets would
refuse (a test suite playing whole games makes hundreds of writes a second).

Counters live in Redis when REDIS_URL is set (keys under `LIMITS:LIMITER/<LOO_QUEUE_PREFIX>/`,
so every API process shares them), in the process's memory otherwise. With Redis, a request's
counters (its token's and its address's, and the reset time of a refusal) are spent in one
round trip, one Lua script. If Redis stops answering, each process counts in memory until it
is back, rather than failing requests.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Mapping
from typing import Any

from flask import Flask, Request, Response
from limits import RateLimitItem, parse_many
from limits.storage import RedisStorage, Storage, storage_from_string
from limits.strategies import FixedWindowRateLimiter

from ledger.api.auth import token_digest
from ledger.api.context import current_request, request_state
from ledger.bootstrap import ConfigError

log = logging.getLogger(__name__)

# (variable, class, keyed by, default). Defaults are generous for people at a table and a
# club's server behind one address, and stop a script creating hundreds of tables.
LIMIT_VARS: tuple[tuple[str, str, str, str], ...] = (
    ("LOO_RATE_LIMIT_CREATE", "create", "token", "30/minute"),
    ("LOO_RATE_LIMIT_CREATE_ADDRESS", "create", "address", "60/minute"),
    ("LOO_RATE_LIMIT_WRITE", "write", "token", "50/second"),
    ("LOO_RATE_LIMIT_WRITE_ADDRESS", "write", "address", "200/second"),
    ("LOO_RATE_LIMIT_READ", "read", "token", "100/second"),
    ("LOO_RATE_LIMIT_READ_ADDRESS", "read", "address", "500/second"),
)
SWITCH_VAR = "LOO_RATE_LIMITS"  # "off" turns every limit off (a trusted load test)
# "exempt" (the default): a client on this host, straight to the API, is not limited (the
# operator's scripts, a club's own software beside the service, a test run); "limit": it is.
LOOPBACK_VAR = "LOO_RATE_LIMIT_LOOPBACK"
ENV_VARS = (SWITCH_VAR, LOOPBACK_VAR, *(v[0] for v in LIMIT_VARS))
# A loopback peer sending one of these is a proxy on this host: its clients are anyone.
FORWARDING_HEADERS = ("HTTP_X_FORWARDED_FOR", "HTTP_FORWARDED", "HTTP_X_REAL_IP")
CREATE_RULES = frozenset({"/v1/tables", "/v1/clubs", "/v1/clubs/<club_id>/tables",
                          "/v1/clubs/<club_id>/tables/import"})
UNLIMITED_PREFIXES = ("/healthz", "/readyz", "/metrics", "/assets/")
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def request_class(req: Request | None = None) -> str:
    state = request_state()
    cls = state.get("loo_limit_class")
    if cls is None:
        req = req or current_request()
        cls = "read"
        if req.method in WRITE_METHODS:
            rule = req.url_rule.rule if req.url_rule is not None else ""
            cls = "create" if req.method == "POST" and rule in CREATE_RULES else "write"
        state.loo_limit_class = cls
    return cls


def bearer(req: Request | None = None) -> str | None:
    scheme, _, token = (req or current_request()).headers.get("Authorization", "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def by_address(req: Request | None = None) -> str:
    return "address:" + ((req or current_request()).remote_addr or "unknown")


def local_client(req: Request) -> bool:
    """A client on this host talking to the API directly: its address (the TCP peer, or the
    one the trusted proxies name) is a loopback one, and nothing in the request says a proxy
    forwarded it. A proxy on this host (nginx in front, LOO_TRUSTED_PROXIES unset) has a
    loopback address too, but sends X-Forwarded-For: its clients are counted, as one
    address. A client elsewhere cannot pass for this one: the peer's address is the
    kernel's, and behind trusted proxies the address is the one the nearest proxy saw."""
    addr = req.remote_addr or ""
    if not (addr.startswith("127.") or addr == "::1" or addr.startswith("::ffff:127.")):
        return False
    environ = req.environ
    return not any(h in environ for h in FORWARDING_HEADERS)


def exempts_loopback(environ: Mapping[str, str]) -> bool:
    """LOO_RATE_LIMIT_LOOPBACK: exempt (the default) or limit."""
    value = environ.get(LOOPBACK_VAR, "").strip().lower()
    if value in {"", "exempt"}:
        return True
    if value == "limit":
        return False
    raise ConfigError(f"{LOOPBACK_VAR}: {value!r} is neither exempt nor limit")


def parse_limits(environ: Mapping[str, str]) -> dict[str, str] | None:
    """Each variable's limit string, checked (None: limits switched off)."""
    switch = environ.get(SWITCH_VAR, "").strip().lower()
    if switch in {"off", "0", "false", "no"}:
        return None
    if switch not in {"", "on", "1", "true", "yes"}:
        raise ConfigError(f"{SWITCH_VAR}: {switch!r} is neither on nor off")
    out = {}
    for var, _cls, _key, default in LIMIT_VARS:
        value = environ.get(var, "").strip() or default
        try:
            if not parse_many(value):
                raise ValueError("no limit")
        except ValueError:
            raise ConfigError(f"{var}: {value!r} is not a rate limit (e.g. 30/minute, "
                              "or 10/second;500/hour)") from None
        out[var] = value
    return out


class LocalStorage(Storage):
    """Fixed-window counters in this process (no REDIS_URL, or while Redis is down).

    limits' own memory:// storage starts a thread every 10 ms of traffic to expire keys;
    measured here a request then paid 1.4 ms for rate limiting (the thread starts block on
    the GIL), against about 0.1 ms with this dict under one lock, swept once a minute.
    """

    STORAGE_SCHEME = ["loo-local"]
    SWEEP_EVERY = 60.0

    def __init__(self, uri: str | None = None, wrap_exceptions: bool = False,
                 **options: Any) -> None:
        self._counts: dict[str, list[float]] = {}  # key: [count, expires at]
        self._lock = threading.Lock()
        self._next_sweep = time.time() + self.SWEEP_EVERY
        super().__init__(uri, wrap_exceptions=wrap_exceptions, **options)

    @property
    def base_exceptions(self) -> type[Exception]:
        return ValueError

    def incr(self, key: str, expiry: float, amount: int = 1) -> int:
        now = time.time()
        with self._lock:
            if now >= self._next_sweep:
                self._counts = {k: v for k, v in self._counts.items() if v[1] > now}
                self._next_sweep = now + self.SWEEP_EVERY
            entry = self._counts.get(key)
            if entry is None or entry[1] <= now:
                entry = self._counts[key] = [0, now + expiry]
            entry[0] += amount
            return int(entry[0])

    def get(self, key: str) -> int:
        entry = self._counts.get(key)
        return int(entry[0]) if entry is not None and entry[1] > time.time() else 0

    def get_expiry(self, key: str) -> float:
        entry = self._counts.get(key)
        return entry[1] if entry is not None and entry[1] > time.time() else time.time()

    def check(self) -> bool:
        return True

    def reset(self) -> int | None:
        with self._lock:
            n, self._counts = len(self._counts), {}
        return n

    def clear(self, key: str) -> None:
        with self._lock:
            self._counts.pop(key, None)


def storage_for(redis_url: str | None) -> tuple[str, dict[str, Any]]:
    if redis_url is None:
        return "loo-local://", {}
    uri = "redis+unix://" + redis_url.split("://", 1)[1] if redis_url.startswith(
        "unix://") else redis_url
    # Short timeouts: a Redis outage must not hold requests (they fall back to memory).
    return uri, {"socket_timeout": 1, "socket_connect_timeout": 1}


def install(app: Flask, environ: Mapping[str, str], redis_url: str | None,
            prefix: str) -> RateLimits | None:
    limits = parse_limits(environ)
    if limits is None:
        return None
    exempt = exempts_loopback(environ)
    uri, options = storage_for(redis_url)
    storage = LocalStorage() if redis_url is None else storage_from_string(
        uri, wrap_exceptions=True, **options)
    limiter = RateLimits(limits, storage, prefix, exempt_loopback=exempt)
    app.extensions["loo_limiter"] = limiter
    app.before_request(limiter.check)
    return limiter


# The fixed window of `limits` for every counter of a request at once: KEYS in the order
# they are spent (the token's limits, then the address's), ARGV two per key (its window in
# seconds, its limit). Each is incremented as limits' incr_expire.lua does, stopping at the
# first over its limit: {its index from 1, seconds until its window resets}; {0, 0} if none.
SPEND_LUA = """
for i, key in ipairs(KEYS) do
    local n = redis.call("incrby", key, 1)
    if n == 1 then
        redis.call("expire", key, ARGV[2 * i - 1])
    end
    if n > tonumber(ARGV[2 * i]) then
        return {i, redis.call("ttl", key)}
    end
end
return {0, 0}
"""


class RateLimits:
    """The two budgets a request spends from (its token's, its address's), checked in one
    before_request hook on `limits`' fixed window.

    flask-limiter did the same through its generic machinery (limit groups resolved and
    their strings parsed anew on every request, exemption scopes per blueprint, its context
    through werkzeug's locals about 70 times a request): 150 us of CPU a request in the
    hooks alone, half the API's loss against the bare app in `loo bench api`. Here the
    limits are parsed once and a request costs two counter increments; with Redis, one
    script (SPEND_LUA) in one round trip, where limits' own calls took one per counter and
    another for a refusal's reset time.
    """

    RECHECK = 5.0  # seconds between looks at a storage that failed (counting in memory)

    def __init__(self, limits: Mapping[str, str], storage: Storage, prefix: str,
                 exempt_loopback: bool = False) -> None:
        self.exempt_loopback = exempt_loopback
        # (class, keyed by) -> (variable, its text, the parsed limits)
        self.budgets: dict[tuple[str, str], tuple[str, str, list[RateLimitItem]]] = {
            (cls, keyed): (var, limits[var], parse_many(limits[var]))
            for var, cls, keyed, _ in LIMIT_VARS}
        self.prefix = prefix
        self.storage = storage
        self.strategy = FixedWindowRateLimiter(storage)
        # While the storage (Redis) fails, each process counts in memory, looking again
        # every RECHECK seconds.
        self.memory = FixedWindowRateLimiter(LocalStorage())
        self.down = False
        self._look_again = 0.0
        self.spend_script = None
        if isinstance(storage, RedisStorage):
            self.spend_script = storage.get_connection().register_script(SPEND_LUA)
            self.key_prefix = storage.key_prefix

    def check(self) -> Response | None:
        """429 problem+json when the request is over a budget (nothing else is run)."""
        req = current_request()  # one proxy lookup (ledger/api/context.py)
        rule = req.url_rule
        if rule is None or req.path.startswith(UNLIMITED_PREFIXES) \
                or rule.endpoint.rpartition(".")[2] == "static":
            return None  # unknown paths (404, 405) and what is never limited
        if self.exempt_loopback and local_client(req):
            return None  # this host's own client (LOO_RATE_LIMIT_LOOPBACK)
        cls = request_class(req)
        token = bearer(req)
        spends = [("address", by_address(req))]
        if token is not None:
            spends.insert(0, ("token", "token:" + token_digest(token)[:32]))
        if self.spend_script is not None and self._current() is self.strategy:
            try:
                return self._spend_in_one_script(cls, spends)
            except Exception as err:  # noqa: BLE001 - a storage that fails must not fail
                self._storage_failed(err)  # requests: counted in memory meanwhile
        for keyed, key in spends:
            refused = self._spend(cls, keyed, key)
            if refused is not None:
                return refused
        return None

    def _spend_in_one_script(self, cls: str, spends: list[tuple[str, str]]) -> Response | None:
        keys: list[str] = []
        args: list[int] = []
        which: list[tuple[str, RateLimitItem]] = []
        for keyed, key in spends:
            for item in self.budgets[(cls, keyed)][2]:
                keys.append(f"{self.key_prefix}:{item.key_for(self.prefix, key, cls)}")
                args += (item.get_expiry(), item.amount)
                which.append((keyed, item))
        assert self.spend_script is not None
        index, ttl = self.spend_script(keys, args)
        if not index:
            return None
        keyed, item = which[int(index) - 1]
        var, text, _ = self.budgets[(cls, keyed)]
        return self._refusal(f"{var}: {text} per {keyed}", max(1, int(ttl)))

    def _storage_failed(self, err: Exception) -> None:
        log.warning("rate limit counters unreachable, counting in memory: %s",
                    " ".join(str(err).split())[:200])
        self.down, self._look_again = True, time.monotonic() + self.RECHECK

    def _spend(self, cls: str, keyed: str, key: str) -> Response | None:
        var, text, items = self.budgets[(cls, keyed)]
        for item in items:
            if not self._hit(item, key, cls):
                return self._refuse(item, key, cls, f"{var}: {text} per {keyed}")
        return None

    def _hit(self, item: RateLimitItem, key: str, cls: str) -> bool:
        strategy = self._current()
        try:
            return strategy.hit(item, self.prefix, key, cls)
        except Exception as err:  # noqa: BLE001 - a storage that fails must not fail requests
            if strategy is self.memory:
                raise
            self._storage_failed(err)
            return self.memory.hit(item, self.prefix, key, cls)

    def _current(self) -> FixedWindowRateLimiter:
        """The storage's strategy, or memory's while it is down."""
        if not self.down:
            return self.strategy
        if time.monotonic() >= self._look_again:
            self._look_again = time.monotonic() + self.RECHECK
            try:
                back = self.storage.check()
            except Exception:  # noqa: BLE001 - still down
                back = False
            if back:
                log.warning("rate limit counters reachable again")
                self.down = False
                return self.strategy
        return self.memory

    def _refuse(self, item: RateLimitItem, key: str, cls: str, what: str) -> Response:
        retry = 1
        try:
            reset = self._current().get_window_stats(item, self.prefix, key, cls).reset_time
            retry = max(1, math.ceil(reset - time.time()))
        except Exception:  # noqa: BLE001 - the storage went away: a second is a fair guess
            retry = 1
        return self._refusal(what, retry)

    @staticmethod
    def _refusal(what: str, retry: int) -> Response:
        from ledger.api.errors import problem

        return problem(429, "rate_limited", "Too many requests",
                       f"over the rate limit ({what}); retry after {retry} s",
                       headers={"Retry-After": str(retry)})
