"""Prometheus metrics (prometheus-client), served at GET /metrics.

Under gunicorn every worker process counts into files in PROMETHEUS_MULTIPROC_DIR (`loo
serve` makes a temporary one it owns, unless the variable is set) and a scrape of any
worker adds up all of them. prometheus-client chooses its mode when it is first imported,
so the variable must be set before this module is: `loo serve` does so first thing.

The queue's depth and its jobs by state are read from RQ's registries at scrape time.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Histogram,
    disable_created_metrics,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector

MULTIPROC_VAR = "PROMETHEUS_MULTIPROC_DIR"
disable_created_metrics()  # no *_created series: half the lines, nothing a rate() needs

HTTP_REQUESTS = Counter("loo_http_requests_total", "HTTP requests answered, by route "
                        "template and status", ["method", "route", "status"])
HTTP_LATENCY = Histogram("loo_http_request_duration_seconds", "Time to answer an HTTP "
                         "request, by route template", ["method", "route"],
                         buckets=(.002, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10))
EVENTS_APPENDED = Counter("loo_events_appended_total", "Events appended to the store by "
                          "this service's processes, by type", ["type"])
JOBS_ENQUEUED = Counter("loo_jobs_enqueued_total", "Follow-up jobs (bot turns, settlement) "
                        "handed to the queue, by backend", ["backend"])
JOBS_INLINE = Counter("loo_jobs_inline_total", "Jobs run in-process (no REDIS_URL), by "
                      "outcome", ["outcome"])

WEBHOOK_DELIVERIES = Counter("loo_webhook_deliveries_total", "Webhook delivery attempts, by "
                             "outcome: delivered (a 2xx answer), rejected (another status), "
                             "timeout, refused, blocked (the address guard), error",
                             ["outcome"])
WEBHOOK_OUTCOMES = ("delivered", "rejected", "timeout", "refused", "blocked", "error")


def count_webhook_attempt(status: int | str) -> None:
    """One POST to a webhook endpoint: its HTTP status, or how it failed without one."""
    if isinstance(status, int):
        outcome = "delivered" if 200 <= status < 300 else "rejected"
    else:
        outcome = status if status in WEBHOOK_OUTCOMES else "error"
    WEBHOOK_DELIVERIES.labels(outcome).inc()


# Each label set's children, looked up once: `labels()` checks and joins its values and
# takes the metric's lock on every call, three to four times a request. Bounded (a client
# may send any method; past the bound `labels()` is asked as before).
_CHILDREN_MAX = 10_000
_request_children: dict[tuple[str, str, int], tuple[Any, Any]] = {}
_appended_children: dict[str, Any] = {}


def count_request(method: str, route: str, status: int, seconds: float) -> None:
    """One HTTP request answered: its count by route and status, its latency by route."""
    key = (method, route, status)
    children = _request_children.get(key)
    if children is None:
        children = (HTTP_REQUESTS.labels(method, route, str(status)),
                    HTTP_LATENCY.labels(method, route))
        if len(_request_children) < _CHILDREN_MAX:
            _request_children[key] = children
    children[0].inc()
    children[1].observe(seconds)


def count_appended(stored: Any) -> None:
    for event in stored:
        child = _appended_children.get(event.type)
        if child is None:
            child = EVENTS_APPENDED.labels(event.type)
            if len(_appended_children) < _CHILDREN_MAX:
                _appended_children[event.type] = child
        child.inc()


class CountingStore:
    """The event store, counting what it appends (every other call passes through)."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def append(self, *args: Any, **kwargs: Any) -> Any:
        stored = self._store.append(*args, **kwargs)
        count_appended(stored)
        return stored

    def append_batches(self, *args: Any, **kwargs: Any) -> Any:
        outs = self._store.append_batches(*args, **kwargs)
        for stored in outs:
            count_appended(stored)
        return outs


class QueueCollector:
    """RQ's own view of the queue at scrape time: depth, jobs by state, live workers.

    "dequeued" counts jobs a worker took off the queue and has not started yet (rq's
    intermediate list): more than a moment there means the worker died (a `loo worker`
    retries them after 5 s). A worker counts while its registration lives: it heartbeats
    it, and a killed worker's expires about a minute and a half later.
    """

    def __init__(self, queue: Any) -> None:
        self.queue = queue

    def collect(self) -> Iterator[GaugeMetricFamily]:
        q = self.queue
        depth = GaugeMetricFamily("loo_queue_depth", "Jobs waiting in the RQ queue",
                                  labels=["queue"])
        jobs = GaugeMetricFamily("loo_jobs", "Jobs of the RQ queue by state",
                                 labels=["queue", "state"])
        workers = GaugeMetricFamily("loo_workers", "RQ workers registered on the queue",
                                    labels=["queue"])
        try:
            from rq import Worker

            live = len(Worker.all(queue=q))
            counts = {
                "queued": q.count,
                "dequeued": len(q.intermediate_queue.get_job_ids()),
                "started": q.started_job_registry.count,
                "deferred": q.deferred_job_registry.count,
                "scheduled": q.scheduled_job_registry.count,
                "finished": q.finished_job_registry.count,
                "failed": q.failed_job_registry.count,
            }
        except Exception:  # noqa: BLE001 - Redis down: no queue figures in this scrape
            return
        depth.add_metric([q.name], counts["queued"])
        for state, n in counts.items():
            jobs.add_metric([q.name, state], n)
        workers.add_metric([q.name], live)
        yield depth
        yield jobs
        yield workers


def exposition(queue: Any | None) -> tuple[bytes, str]:
    """The text exposition of every process's metrics (and the queue's), and its type."""
    if os.environ.get(MULTIPROC_VAR):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)
    else:
        registry = CollectorRegistry()
        registry.register(_Default())
    if queue is not None:
        registry.register(QueueCollector(queue))
    return generate_latest(registry), CONTENT_TYPE_LATEST


class _Default:
    """The process's own registry, inside a scrape registry of its own (so the queue
    collector is not registered globally once per app)."""

    def collect(self) -> Iterator[Any]:
        yield from REGISTRY.collect()


def now() -> float:
    return time.perf_counter()
