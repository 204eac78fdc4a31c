"""In-memory event store for unit tests: the same contract, no persistence."""

from __future__ import annotations

import copy
import itertools
import os
import threading
from collections.abc import Collection, Sequence
from typing import Any

from ledger.store.base import (
    AlreadyApplied,
    Batch,
    IdempotencyConflict,
    IdempotentResult,
    NewCheckpoints,
    NewEvent,
    RawEvent,
    StoredEvent,
    VersionConflict,
    Watch,
    check_batches,
)
from ledger.store.hashing import GENESIS, canonical_json, positioned, seal


class MemoryStore:
    """One lock serialises appends, so positions are gap-free and in commit order."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tables: dict[str, list[StoredEvent]] = {}
        self._all: list[StoredEvent] = []
        self._keys: dict[tuple[str, str], IdempotentResult] = {}
        self._secret = os.urandom(32)
        self._checkpoints: dict[str, dict[int, dict[str, Any]]] = {}
        self._cursors: dict[str, dict[str, Any]] = {}
        self._deliveries: dict[str, list[dict[str, Any]]] = {}
        self._positions: dict[str, int] = {}
        self._rows: dict[tuple[str, str, str], dict[str, Any]] = {}
        self._watch = Watch()
        self._watch.live = True  # one process: every append bumps it

    def upgrade(self) -> None:
        return None

    def append(self, table_id: str, events: Sequence[NewEvent], expected_version: int, *,
               idempotency_key: str | None = None, request_hash: str | None = None,
               checkpoints: NewCheckpoints | None = None) -> list[StoredEvent]:
        b = Batch(table_id, events, expected_version, idempotency_key, request_hash,
                  checkpoints)
        with self._lock:
            self._check(b)
            if not events:
                if idempotency_key is not None:  # nothing written: kept as (v + 1, v)
                    self._keys[(table_id, idempotency_key)] = IdempotentResult(
                        idempotency_key, request_hash or "", expected_version + 1,
                        expected_version)
                return []
            out = self._keep(b, *self._prepare(b, len(self._all) + 1))
        self._watch.bump(out[-1].position)
        return out

    def append_batches(self, batches: Sequence[Batch]) -> list[list[StoredEvent]]:
        check_batches(batches)
        with self._lock:
            ready = []
            start = len(self._all) + 1
            for b in batches:  # every check and signature before anything is kept
                self._check(b)
                ready.append(self._prepare(b, start))
                start += len(b.events)
            outs = [self._keep(b, *r) for b, r in zip(batches, ready, strict=True)]
        self._watch.bump(outs[-1][-1].position)
        return outs

    def _check(self, b: Batch) -> None:
        """`append`'s refusals of the batch (under the lock): a used key, a stale version."""
        if b.idempotency_key is not None:
            found = self._keys.get((b.table_id, b.idempotency_key))
            if found is not None:
                if found.request_hash != (b.request_hash or ""):
                    raise IdempotencyConflict(b.idempotency_key)
                raise AlreadyApplied(found)
        rows = self._tables.get(b.table_id, [])
        if len(rows) != b.expected_version:
            raise VersionConflict(b.table_id, b.expected_version, len(rows))

    def _prepare(self, b: Batch, start: int,
                 ) -> tuple[list[StoredEvent], list[tuple[int, dict[str, Any]]]]:
        """A checked, non-empty batch as it will be stored from position `start`, and its
        checkpoints, signed before anything is kept (a failing sign appends nothing)."""
        rows = self._tables.get(b.table_id, [])
        sealed = seal(b.table_id, b.expected_version, rows[-1].hash if rows else GENESIS,
                      b.events)
        out = positioned(b.table_id, sealed, start)
        signed = [(out[i].version, b.checkpoints.data(out[i]))
                  for i in b.checkpoints.indexes] if b.checkpoints else []
        return list(out), signed

    def _keep(self, b: Batch, out: list[StoredEvent],
              signed: list[tuple[int, dict[str, Any]]]) -> list[StoredEvent]:
        for version, data in signed:
            self._checkpoints.setdefault(b.table_id, {}).setdefault(version, data)
        self._tables.setdefault(b.table_id, []).extend(out)
        self._all.extend(out)
        if b.idempotency_key is not None:
            self._keys[(b.table_id, b.idempotency_key)] = IdempotentResult(
                b.idempotency_key, b.request_hash or "", out[0].version, out[-1].version)
        return out

    def watch(self) -> Watch:
        return self._watch

    def load(self, table_id: str, after_version: int = 0,
             up_to_version: int | None = None) -> list[StoredEvent]:
        with self._lock:
            return self._tables.get(table_id, [])[after_version:up_to_version]

    def load_raw(self, table_id: str, after_version: int = 0,
                 up_to_version: int | None = None) -> list[RawEvent]:
        return [RawEvent(s.version, s.position, s.type, s.hand, canonical_json(s.data),
                         s.recorded_at, s.causation, s.prev_hash, s.hash)
                for s in self.load(table_id, after_version, up_to_version)]

    def load_types(self, table_id: str, types: Collection[str],
                   up_to_version: int | None = None) -> list[StoredEvent]:
        wanted = frozenset(types)
        return [s for s in self.load(table_id, 0, up_to_version) if s.type in wanted]

    def version(self, table_id: str) -> int:
        with self._lock:
            return len(self._tables.get(table_id, []))

    def read_all(self, after_position: int = 0, limit: int = 1000) -> list[StoredEvent]:
        with self._lock:
            return self._all[after_position : after_position + limit]

    def held_back(self, after_position: int) -> bool:
        return False  # appends are serialised: every committed event is read

    def read_streams(self, table_ids: Collection[str], after_position: int = 0,
                     limit: int = 1000) -> list[StoredEvent]:
        wanted = set(table_ids)
        with self._lock:
            found = (s for s in self._all[after_position:] if s.table_id in wanted)
            return list(itertools.islice(found, max(0, limit)))

    def read_streams_before(self, table_ids: Collection[str], before_position: int,
                            limit: int = 1000) -> list[StoredEvent]:
        wanted = set(table_ids)
        with self._lock:
            found = (s for s in reversed(self._all[:max(0, before_position - 1)])
                     if s.table_id in wanted)
            return list(itertools.islice(found, max(0, limit)))[::-1]

    def first_events(self, after_position: int, up_to_position: int) -> list[StoredEvent]:
        with self._lock:
            return [s for s in self._all[after_position:up_to_position] if s.version == 1]

    def last_position(self) -> int:
        with self._lock:
            return len(self._all)

    def load_after_position(self, table_id: str, after_position: int,
                            limit: int = 1000) -> list[StoredEvent]:
        with self._lock:
            rows = self._tables.get(table_id, [])
            return [s for s in rows if s.position > after_position][:limit]

    def idempotent_result(self, table_id: str, key: str) -> IdempotentResult | None:
        with self._lock:
            return self._keys.get((table_id, key))

    def table_ids(self) -> list[str]:
        with self._lock:
            return sorted(self._tables)

    def save_checkpoint(self, table_id: str, version: int, data: dict[str, Any]) -> None:
        with self._lock:
            self._checkpoints.setdefault(table_id, {}).setdefault(version, dict(data))

    def checkpoints(self, table_id: str) -> list[dict[str, Any]]:
        with self._lock:
            found = self._checkpoints.get(table_id, {})
            return [dict(found[v]) for v in sorted(found)]

    def head_position(self) -> int:
        with self._lock:
            return len(self._all)

    def read_model_position(self, name: str) -> int:
        with self._lock:
            return self._positions.get(name, 0)

    def read_model_rows(self, name: str, scope: str,
                        keys: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
        with self._lock:
            wanted = None if keys is None else set(keys)
            return {k: copy.deepcopy(v) for (n, s, k), v in self._rows.items()
                    if n == name and s == scope and (wanted is None or k in wanted)}

    def save_read_model(self, name: str, from_position: int, to_position: int,
                        rows: dict[tuple[str, str], dict[str, Any]]) -> bool:
        with self._lock:
            if self._positions.get(name, 0) != from_position:
                return False
            for (scope, key), data in rows.items():
                self._rows[(name, scope, key)] = copy.deepcopy(data)
            self._positions[name] = to_position
            return True

    def reset_read_model(self, name: str) -> None:
        with self._lock:
            self._positions.pop(name, None)
            for k in [k for k in self._rows if k[0] == name]:
                del self._rows[k]

    def webhook_claim(self, webhook_id: str, club_id: str, start: int, owner: str,
                      now: float, until: float) -> dict[str, Any] | None:
        with self._lock:
            row = self._cursors.setdefault(webhook_id, {
                "webhook_id": webhook_id, "club_id": club_id, "position": start, "attempt": 0,
                "retry_at": None, "lease_owner": None, "lease_until": None})
            if row["lease_owner"] not in (None, owner) and row["lease_until"] >= now:
                return None
            row["lease_owner"], row["lease_until"] = owner, until
            return dict(row)

    def webhook_save(self, webhook_id: str, owner: str, position: int, attempt: int,
                     retry_at: float | None, until: float | None) -> bool:
        with self._lock:
            row = self._cursors.get(webhook_id)
            if row is None or row["lease_owner"] != owner:
                return False
            row.update(position=position, attempt=attempt, retry_at=retry_at,
                       lease_owner=owner if until is not None else None, lease_until=until)
            return True

    def webhook_cursor(self, webhook_id: str) -> dict[str, Any] | None:
        with self._lock:
            row = self._cursors.get(webhook_id)
            return dict(row) if row else None

    def webhook_log(self, webhook_id: str, rows: list[dict[str, Any]]) -> None:
        with self._lock:
            self._deliveries.setdefault(webhook_id, []).extend(dict(r) for r in rows)

    def webhook_deliveries(self, webhook_id: str, offset: int, limit: int,
                           ) -> list[dict[str, Any]]:
        with self._lock:
            return [dict(r) for r in self._deliveries.get(webhook_id, [])[offset:offset + limit]]

    def server_secret(self) -> bytes:
        return self._secret

    def ping(self) -> dict[str, Any]:
        return {"backend": "memory", "tables": len(self._tables), "events": len(self._all)}

    def close(self) -> None:
        return None
