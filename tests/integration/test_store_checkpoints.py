"""Checkpoints saved by an append, in its own transaction (EventStore.append `checkpoints`),
run against the memory store, SQLite and PostgreSQL: saved with the events or not at all."""

from __future__ import annotations

from typing import Any

import pytest

from ledger.store.base import NewCheckpoints, StoredEvent, VersionConflict
from tests.integration.conftest import Backend
from tests.integration.test_store_contract import events, new_table


def sign(version: int, hash_: str, at: str) -> dict[str, Any]:
    # Keys on both sides of "position", which the store adds, and text to escape.
    return {"at": at, "hash": hash_, "version": version, "note": "é \" \\ }"}


def signer(seen: list[tuple[int, str, str]]) -> NewCheckpoints:
    """Checkpoints for the batch's second and last events."""
    def signing(*head: Any) -> dict[str, Any]:
        seen.append(head)
        return sign(*head)

    return NewCheckpoints((1, 2), signing)


def saved(head: StoredEvent) -> dict[str, Any]:
    """What the store keeps for `head`: the signed data and the event's position."""
    return {**sign(head.version, head.hash, head.recorded_at), "position": head.position}


def named(head: StoredEvent) -> tuple[int, str, str]:
    return head.version, head.hash, head.recorded_at


@pytest.mark.parametrize("key", [None, "key-1"])
def test_an_append_saves_its_checkpoints_naming_its_events_as_stored(
        backend: Backend, key: str | None) -> None:
    # key: PostgreSQL's two ways in (the checked INSERT, loo_append).
    t, seen = new_table(), []
    backend.store.append(t, events(2), 0)
    stored = backend.store.append(t, events(3, 2), 2, idempotency_key=key,
                                  request_hash="r" if key else None, checkpoints=signer(seen))
    assert seen == [named(stored[1]), named(stored[2])]
    assert backend.store.checkpoints(t) == [saved(stored[1]), saved(stored[2])]
    assert backend.store.load(t)[2:] == stored


def test_checkpoints_ride_the_fallback_on_a_wrong_cached_hash(postgres_backend: Backend) -> None:
    store, t, seen = postgres_backend.store, new_table(), []
    store.append(t, events(2), 0)
    store._heads[t] = (2, "f" * 64)  # type: ignore[attr-defined]
    stored = store.append(t, events(3, 2), 2, checkpoints=signer(seen))
    assert seen[-2:] == [named(stored[1]), named(stored[2])]
    assert store.checkpoints(t) == [saved(stored[1]), saved(stored[2])]


def test_a_refused_append_saves_no_checkpoint(backend: Backend) -> None:
    t = new_table()
    backend.store.append(t, events(2), 0)
    for stale in (1, 3):
        with pytest.raises(VersionConflict):
            backend.store.append(t, events(3), stale, checkpoints=signer([]))
    assert backend.store.checkpoints(t) == []


def test_a_checkpoint_that_cannot_be_made_appends_nothing(backend: Backend) -> None:
    t = new_table()
    backend.store.append(t, events(2), 0)

    def fail(*head: Any) -> dict[str, Any]:
        raise RuntimeError("no key")

    with pytest.raises(RuntimeError):
        backend.store.append(t, events(3, 2), 2, checkpoints=NewCheckpoints((2,), fail))
    assert backend.store.version(t) == 2 and backend.store.checkpoints(t) == []
    stored = backend.store.append(t, events(1, 2), 2)  # the table goes on where it was
    assert stored[0].version == 3


def test_an_existing_checkpoint_of_the_version_is_kept(backend: Backend) -> None:
    t, seen = new_table(), []
    backend.store.save_checkpoint(t, 2, {"first": True})
    stored = backend.store.append(t, events(3), 0, checkpoints=signer(seen))
    assert backend.store.checkpoints(t) == [{"first": True}, saved(stored[2])]


def test_postgres_events_and_checkpoints_commit_in_one_transaction(
        postgres_backend: Backend) -> None:
    store, t = postgres_backend.store, new_table()
    store.append(t, events(3), 0, checkpoints=signer([]))
    store.append(t, events(1, 3), 3, idempotency_key="k", request_hash="r",
                 checkpoints=NewCheckpoints((0,), sign))
    with store._conn() as conn:  # type: ignore[attr-defined]
        rows = conn.execute("SELECT version, xmin::text FROM events WHERE table_id = %s"
                            " UNION ALL SELECT version, xmin::text FROM checkpoints"
                            " WHERE table_id = %s ORDER BY 1", (t, t)).fetchall()
    xids = {}
    for version, xid in rows:
        xids.setdefault(version, set()).add(xid)
    # Each checkpoint's row was written by the transaction that wrote the event it names.
    assert [len(xids[v]) for v in (2, 3, 4)] == [1, 1, 1]
    assert xids[2] == xids[3] != xids[4]


@pytest.mark.parametrize("data", [{}, {"a": 1}, {"z": [1, {"q": None}]}, {"a": "x", "z": "ü"},
                                  {"pos": 1, "positio": 2, "positions": 3, "Position": 4}])
def test_postgres_joins_the_canonical_json_around_the_position(data: dict[str, Any]) -> None:
    from ledger.store.hashing import canonical_json
    from ledger.store.postgres import _around_position

    pre, post = _around_position(data)
    assert pre + "123" + post == canonical_json({**data, "position": 123})
