"""Rate limits (flask-limiter): a budget per bearer token and one per client address.

Requests fall in three classes, each with its own budget, shared by every route of the
class: `create` (a new table or club: POST /v1/tables, /v1/clubs, /v1/clubs/{id}/tables and
its import), `write` (any other POST, PUT, PATCH or DELETE) and `read` (the rest). A request
with a bearer token spends from that token's budget (the token is kept only as a hash) and
from its address's; one without a token from its address's alone. Over budget: 429
problem+json with Retry-After, before the body is read. The probes (/healthz, /readyz),
/metrics and the page assets are never limited.

Counters live in Redis when REDIS_URL is set (keys under `LIMITS:LIMITER/<LOO_QUEUE_PREFIX>/`,
so every API process shares them), in the process's memory otherwise. If Redis stops
answering, each process counts in memory until it is back, rather than failing requests.
"""

from __future__ import annotations

import hashlib
import math
import threading
import time
from collections.abc import Mapping
from typing import Any

from flask import Flask, Response, current_app, g, request
from flask_limiter import ApplicationLimit, Limiter, RateLimitExceeded
from limits import parse_many
from limits.storage import Storage

from ledger.bootstrap import ConfigError

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
ENV_VARS = (SWITCH_VAR, *(v[0] for v in LIMIT_VARS))
CREATE_RULES = frozenset({"/v1/tables", "/v1/clubs", "/v1/clubs/<club_id>/tables",
                          "/v1/clubs/<club_id>/tables/import"})
UNLIMITED_PREFIXES = ("/healthz", "/readyz", "/metrics", "/assets/")
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def request_class() -> str:
    cls = g.get("loo_limit_class")
    if cls is None:
        cls = "read"
        if request.method in WRITE_METHODS:
            rule = request.url_rule.rule if request.url_rule is not None else ""
            cls = "create" if request.method == "POST" and rule in CREATE_RULES else "write"
        g.loo_limit_class = cls
    return cls


def bearer() -> str | None:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


def by_token() -> str:
    token = bearer() or ""
    return "token:" + hashlib.sha256(token.encode()).hexdigest()[:32]


def by_address() -> str:
    return "address:" + (request.remote_addr or "unknown")


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
    """Fixed-window counters in this process (no REDIS_URL), for flask-limiter.

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
            prefix: str) -> Limiter | None:
    limits = parse_limits(environ)
    if limits is None:
        return None
    # Two limits a request, not six: each picks its class's limit when it is asked.
    chosen = {(cls, keyed): (var, limits[var]) for var, cls, keyed, _ in LIMIT_VARS}
    groups = [_limit(chosen, "token"), _limit(chosen, "address")]
    uri, options = storage_for(redis_url)
    limiter = Limiter(
        by_address, app=app, application_limits=groups, storage_uri=uri,
        storage_options=options, strategy="fixed-window", key_prefix=prefix,
        headers_enabled=False, swallow_errors=True, in_memory_fallback_enabled=True)
    limiter.request_filter(lambda: request.path.startswith(UNLIMITED_PREFIXES))
    app.extensions["loo_limiter"] = limiter
    app.register_error_handler(RateLimitExceeded, too_many_requests)
    return limiter


def _limit(chosen: dict[tuple[str, str], tuple[str, str]], keyed: str) -> ApplicationLimit:
    def value() -> str:
        return chosen[(request_class(), keyed)][1]

    def message() -> str:
        var, limit = chosen[(request_class(), keyed)]
        return f"{var}: {limit} per {keyed}"

    return ApplicationLimit(value, key_function=by_token if keyed == "token" else by_address,
                            scope=lambda _endpoint: request_class(),
                            exempt_when=(lambda: bearer() is None) if keyed == "token" else None,
                            error_message=message)


def too_many_requests(err: RateLimitExceeded) -> Response:
    from ledger.api.errors import problem

    limiter: Limiter = current_app.extensions["loo_limiter"]
    retry = 1
    current = limiter.current_limit
    if current is not None:
        try:
            retry = max(1, math.ceil(current.reset_at - time.time()))
        except Exception:  # noqa: BLE001 - the storage went away: a second is a fair guess
            retry = 1
    return problem(429, "rate_limited", "Too many requests",
                   f"over the rate limit ({err.description}); retry after {retry} s",
                   headers={"Retry-After": str(retry)})
