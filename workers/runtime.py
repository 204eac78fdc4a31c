"""The ledger a worker process uses: built once from the environment (bootstrap)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ledger.app.service import Ledger

_lock = threading.Lock()
_ledger: Ledger | None = None


def install(ledger: Ledger) -> None:
    """Use this ledger for jobs run in this process (the worker command sets it)."""
    global _ledger
    _ledger = ledger


def current_ledger() -> Ledger:
    """The installed ledger, or one composed from the environment on first use."""
    global _ledger
    with _lock:
        if _ledger is None:
            from ledger.bootstrap import Settings, build_ledger

            _ledger = build_ledger(Settings.from_env())
        return _ledger
