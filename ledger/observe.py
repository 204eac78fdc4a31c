"""Logs as JSON lines, each with the request id of the request (or job) it belongs to.

The request id comes from the client's X-Request-Id (when it is a sane token) or is made
here; the API echoes it in the response, puts it in the meta of every RQ job the request
enqueues, and the job sets it again while it runs, so a move's log lines, its bot turns and
its settlement share one id, in the API process and in the worker alike.
"""

from __future__ import annotations

import contextvars
import logging
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from pythonjsonlogger.json import JsonFormatter

from ledger.core.ids import unique_hex

REQUEST_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar("loo_request_id",
                                                                       default=None)
_SANE = re.compile(r"[A-Za-z0-9._:-]{1,128}")
LOG_FORMATS = ("json", "text")


def request_id() -> str | None:
    return REQUEST_ID.get()


def new_request_id(offered: str | None = None) -> str:
    """The client's id when it is a plain token of at most 128 characters, else a new one."""
    return offered if offered and _SANE.fullmatch(offered) else unique_hex()


@contextmanager
def bound(rid: str | None) -> Iterator[None]:
    """Log lines inside carry `rid` (a job run, or a request outside Flask)."""
    token = REQUEST_ID.set(rid)
    try:
        yield
    finally:
        REQUEST_ID.reset(token)


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = REQUEST_ID.get()
        return True


def configure(level: str, fmt: str = "json") -> None:
    """The root logger: one handler on stderr, JSON lines (or plain text) with request_id."""
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(RequestIdFilter())
    if fmt == "json":
        handler.setFormatter(JsonFormatter(
            "%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s",
            rename_fields={"asctime": "time", "levelname": "level", "name": "logger"}))
    else:
        handler.setFormatter(logging.Formatter(
            "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"))
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, "loo_handler", False):
            root.removeHandler(old)
    handler.loo_handler = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
