"""The append's checks hold whatever a store instance believes: stores with their own head
caches (processes) racing on one table never fork or gap its chain, and a head cached
before the database went back (a restore, a failover to a replica behind) is refused."""

from __future__ import annotations

import threading
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.store.base import EventStore, NewEvent, VersionConflict
from ledger.store.hashing import verify_chain
from tests.integration.conftest import Backend


def one(n: int) -> list[NewEvent]:
    return [NewEvent("tile_played", 1, {"n": n})]


def test_a_head_cached_before_the_database_went_back_is_refused(sql_backend: Backend) -> None:
    store, t = sql_backend.store, f"table-{uuid.uuid4().hex}"
    for v in range(4):
        store.append(t, one(v), v)  # the store now knows version 4 and its hash
    # The database goes back to version 2 behind the store's back (as its owner could).
    if sql_backend.name == "sqlite":
        sql_backend.raw("DROP TRIGGER events_no_delete")
    else:
        sql_backend.raw("ALTER TABLE events DISABLE TRIGGER events_append_only")
    sql_backend.raw(f"DELETE FROM events WHERE table_id = '{t}' AND version > 2")
    if sql_backend.name != "sqlite":
        sql_backend.raw("ALTER TABLE events ENABLE TRIGGER events_append_only")
    with pytest.raises(VersionConflict) as err:
        store.append(t, one(4), 4)  # onto the version it remembers: gone
    assert err.value.actual == 2
    for size in (1, 3):  # the one-event statement and the batch
        with pytest.raises(VersionConflict):
            store.append(t, [*one(4)] * size, 4)
    assert [e.version for e in store.load(t)] == [1, 2]
    assert [e.version for e in store.append(t, one(2), 2)] == [3]
    assert verify_chain(store.load(t)) is None


# Each step: which store instance appends, and what it claims the head is relative to the
# truth (0: right, -k: stale, +k: ahead), and how many events.
_steps = st.lists(st.tuples(st.integers(0, 2), st.sampled_from([0, 0, 0, -1, -2, 1, 3]),
                            st.integers(1, 3)), min_size=1, max_size=12)


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=_steps)
def test_stores_with_their_own_caches_append_only_onto_the_true_head(
        postgres_backend: Backend, steps: list[tuple[int, int, int]]) -> None:
    stores = [postgres_backend.store, postgres_backend.reopen(), postgres_backend.reopen()]
    t, head, n = f"table-{uuid.uuid4().hex}", 0, 0
    try:
        for who, off, size in steps:
            claimed = head + off
            if claimed < 0:
                continue
            batch = [NewEvent("tile_played", 1, {"n": n + i}) for i in range(size)]
            if off == 0:
                stored = stores[who].append(t, batch, claimed)
                assert [e.version for e in stored] == list(range(head + 1, head + size + 1))
                head, n = head + size, n + size
            else:
                with pytest.raises(VersionConflict) as err:
                    stores[who].append(t, batch, claimed)
                assert err.value.actual == head
        for store in stores:
            loaded = store.load(t)
            assert [e.data["n"] for e in loaded] == list(range(n))
            assert verify_chain(loaded) is None
    finally:
        for store in stores[1:]:
            store.close()


def test_concurrent_appenders_with_their_own_caches_never_fork_the_chain(
        postgres_backend: Backend) -> None:
    """Four store instances (as four processes) race on one table from stale beliefs:
    every event lands exactly once, versions run 1..n, the chain verifies."""
    stores: list[EventStore] = [postgres_backend.reopen() for _ in range(4)]
    t, per_writer = f"shared-{uuid.uuid4().hex}", 25
    conflicts = [0] * len(stores)
    errors: list[BaseException] = []
    gate = threading.Barrier(len(stores))

    def write(k: int) -> None:
        store, believed = stores[k], 0
        try:
            gate.wait()
            for i in range(per_writer):
                while True:  # retried here, on purpose; the store never retries
                    try:
                        believed = store.append(t, one(k * 1000 + i), believed)[-1].version
                        break
                    except VersionConflict as err:
                        conflicts[k] += 1
                        believed = err.actual
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=write, args=(k,)) for k in range(len(stores))]
    try:
        for th in threads:
            th.start()
        for th in threads:
            th.join(120)
        assert errors == []
        loaded = postgres_backend.store.load(t)
        assert [e.version for e in loaded] == list(range(1, 4 * per_writer + 1))
        assert sorted(e.data["n"] for e in loaded) == sorted(
            k * 1000 + i for k in range(4) for i in range(per_writer))
        assert verify_chain(loaded) is None
        positions = [e.position for e in loaded]
        assert positions == sorted(positions)  # within a table, positions follow versions
        assert sum(conflicts) > 0  # they did race
    finally:
        for store in stores:
            store.close()
