"""The EventStore contract, run against the memory store, SQLite and PostgreSQL."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

from ledger.store.base import (
    AlreadyApplied,
    Batch,
    EventStore,
    IdempotencyConflict,
    NewCheckpoints,
    NewEvent,
    RawEvent,
    StoredEvent,
    StoreError,
    VersionConflict,
)
from ledger.store.bulk import load_json
from ledger.store.hashing import GENESIS, event_hash, verify_chain
from tests.integration.conftest import Backend


def new_table() -> str:
    return f"table-{uuid.uuid4().hex}"


def events(n: int, start: int = 0) -> list[NewEvent]:
    return [NewEvent("tile_played", 1, {"seat": (start + i) % 4, "tile": [i % 7, 3], "n": i},
                     causation=f"cmd:{start + i}") for i in range(n)]


def read_all_until(store: EventStore, count: int, after: int = 0,
                   timeout: float = 20.0) -> list[StoredEvent]:
    """Follow read_all until `count` events arrived (PostgreSQL may hold back the newest
    while an unrelated transaction is open: delayed, never skipped)."""
    got: list[StoredEvent] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        batch = store.read_all(got[-1].position if got else after, limit=7)
        got.extend(batch)
        if not batch:
            time.sleep(0.01)
    return got


def test_appended_events_load_back_identical(backend: Backend) -> None:
    t = new_table()
    stored = backend.store.append(t, events(3), 0)
    assert [e.version for e in stored] == [1, 2, 3]
    assert backend.store.load(t) == stored
    assert [(e.type, e.hand, e.data, e.causation) for e in stored] == [
        ("tile_played", 1, {"seat": i, "tile": [i, 3], "n": i}, f"cmd:{i}") for i in range(3)]


def test_load_raw_gives_loads_events_with_their_data_as_json_text(backend: Backend) -> None:
    t = new_table()
    odd = {"z": [1, {"b": None, "a": "é\"\n"}], "a": 2**70, "m": -1, "nested": {"k": True}}
    backend.store.append(t, [*events(3), NewEvent("odd", None, odd)], 0)
    stored = backend.store.load(t)
    raw = backend.store.load_raw(t)
    assert [type(r) for r in raw] == [RawEvent] * 4
    assert [(*r[:4], *r[5:]) for r in raw] == [
        (s.version, s.position, s.type, s.hand, s.recorded_at, s.causation, s.prev_hash, s.hash)
        for s in stored]
    for r, s in zip(raw, stored, strict=True):  # the same data, keys in the same order
        assert isinstance(r.data, str)
        assert list(load_json(r.data).items()) == list(s.data.items())
        assert load_json(r.data) == s.data
    assert backend.store.load_raw(t, 1, 3) == raw[1:3]
    assert backend.store.load_raw(t, 4) == backend.store.load_raw("nobody") == []


def test_load_types_gives_loads_events_of_those_types_only(backend: Backend) -> None:
    t = new_table()
    mixed = [NewEvent(kind, 1, {"n": i}) for i, kind in enumerate(
        ["stake_posted", "tile_played", "hand_voided", "stake_posted", "trick_won"])]
    backend.store.append(t, mixed, 0)
    backend.store.append(new_table(), mixed, 0)  # another table's are not its
    stored = backend.store.load(t)
    assert backend.store.load_types(t, {"stake_posted", "hand_voided"}) == [
        stored[0], stored[2], stored[3]]
    assert backend.store.load_types(t, ["stake_posted"], up_to_version=3) == [stored[0]]
    assert backend.store.load_types(t, ["trick_won", "no_such_type"]) == [stored[4]]
    assert backend.store.load_types(t, []) == backend.store.load_types("nobody", ["x"]) == []


def test_versions_run_from_one_without_gaps(backend: Backend) -> None:
    t = new_table()
    for v in range(0, 10, 2):
        backend.store.append(t, events(2, v), v)
    loaded = backend.store.load(t)
    assert [e.version for e in loaded] == list(range(1, 11))
    assert backend.store.version(t) == 10
    assert [e.version for e in backend.store.load(t, after_version=3, up_to_version=6)] == [4, 5, 6]
    assert backend.store.load(t, after_version=10) == []


def test_unknown_table_is_at_version_zero_and_empty(backend: Backend) -> None:
    assert backend.store.version("nobody") == 0
    assert backend.store.load("nobody") == []


def test_stale_expected_version_raises_conflict_and_writes_nothing(backend: Backend) -> None:
    t = new_table()
    backend.store.append(t, events(2), 0)
    for stale in (0, 1, 3):
        with pytest.raises(VersionConflict) as err:
            backend.store.append(t, events(3), stale)
        assert (err.value.table_id, err.value.expected, err.value.actual) == (t, stale, 2)
    assert backend.store.version(t) == 2
    assert len(backend.store.load(t)) == 2


def test_batch_is_all_or_nothing(backend: Backend) -> None:
    t = new_table()
    backend.store.append(t, events(1), 0)
    with pytest.raises(VersionConflict):
        backend.store.append(t, events(5), 0)
    stored = backend.store.append(t, events(5, 1), 1)
    assert [e.version for e in stored] == [2, 3, 4, 5, 6]
    assert backend.store.load(t) == backend.store.load(t, 0, 1) + stored


def test_batch_failing_in_the_database_midway_writes_nothing(sql_backend: Backend) -> None:
    t = new_table()
    bad = [*events(4), NewEvent("tile_played", 2**70, {})]  # no integer column holds it
    with pytest.raises((StoreError, OverflowError)):
        sql_backend.store.append(t, bad, 0)
    assert sql_backend.store.version(t) == 0
    assert [e.version for e in sql_backend.store.append(t, events(2), 0)] == [1, 2]


def test_empty_batch_appends_nothing_but_still_checks_the_version(backend: Backend) -> None:
    t = new_table()
    assert backend.store.append(t, [], 0) == []
    with pytest.raises(VersionConflict):
        backend.store.append(t, [], 1)


def test_an_empty_batch_under_a_key_keeps_the_key_at_its_version(backend: Backend) -> None:
    """A write with nothing to append (a club's no-op) is still answered under its key: a
    repeat is AlreadyApplied (first_version v + 1, last_version v: nothing written), another
    request with the key an IdempotencyConflict; a stale version keeps nothing."""
    t = new_table()
    backend.store.append(t, events(2), 0)
    with pytest.raises(VersionConflict):
        backend.store.append(t, [], 1, idempotency_key="k", request_hash="h")
    assert backend.store.idempotent_result(t, "k") is None
    assert backend.store.append(t, [], 2, idempotency_key="k", request_hash="h") == []
    kept = backend.store.idempotent_result(t, "k")
    assert kept is not None
    assert (kept.request_hash, kept.first_version, kept.last_version) == ("h", 3, 2)
    backend.store.append(t, events(1), 2)  # the table moves on
    with pytest.raises(AlreadyApplied) as err:
        backend.store.append(t, [], 2, idempotency_key="k", request_hash="h")
    assert err.value.result == kept
    for batch in ([], events(1)):
        with pytest.raises(IdempotencyConflict):
            backend.store.append(t, batch, 3, idempotency_key="k", request_hash="other")
    assert backend.store.version(t) == 3


def test_repeated_idempotency_key_returns_the_first_result(backend: Backend) -> None:
    t = new_table()
    backend.store.append(t, events(1), 0)
    first = backend.store.append(t, events(2), 1, idempotency_key="k1", request_hash="h1")
    with pytest.raises(AlreadyApplied) as err:
        backend.store.append(t, events(2), 3, idempotency_key="k1", request_hash="h1")
    r = err.value.result
    assert (r.key, r.request_hash, r.first_version, r.last_version) == ("k1", "h1", 2, 3)
    assert backend.store.idempotent_result(t, "k1") == r
    # A stale version does not hide that the command was already applied.
    with pytest.raises(AlreadyApplied):
        backend.store.append(t, events(2), 1, idempotency_key="k1", request_hash="h1")
    assert backend.store.load(t)[1:] == first


def test_idempotency_key_reused_for_another_request_is_refused(backend: Backend) -> None:
    t = new_table()
    backend.store.append(t, events(1), 0, idempotency_key="k", request_hash="h1")
    with pytest.raises(IdempotencyConflict):
        backend.store.append(t, events(1), 1, idempotency_key="k", request_hash="h2")
    assert backend.store.version(t) == 1


def test_idempotency_keys_are_per_table(backend: Backend) -> None:
    a, b = new_table(), new_table()
    backend.store.append(a, events(1), 0, idempotency_key="k", request_hash="h")
    assert backend.store.append(b, events(1), 0, idempotency_key="k", request_hash="h")
    assert backend.store.idempotent_result(a, "other") is None


def test_idempotency_survives_a_new_store_instance(sql_backend: Backend) -> None:
    t = new_table()
    sql_backend.store.append(t, events(2), 0, idempotency_key="k", request_hash="h")
    other = sql_backend.reopen()
    try:
        with pytest.raises(AlreadyApplied) as err:
            other.append(t, events(2), 2, idempotency_key="k", request_hash="h")
        assert (err.value.result.first_version, err.value.result.last_version) == (1, 2)
    finally:
        other.close()


@pytest.mark.parametrize("statement", [
    "UPDATE events SET data = '{}'", "DELETE FROM events",
    "UPDATE idempotency SET request_hash = 'x'", "DELETE FROM idempotency",
    "UPDATE server_secret SET secret = 'x'", "DELETE FROM server_secret"])
def test_the_database_refuses_to_change_history(sql_backend: Backend, statement: str) -> None:
    t = new_table()
    sql_backend.store.append(t, events(2), 0, idempotency_key="k", request_hash="h")
    with pytest.raises(Exception, match="append-only"):
        sql_backend.raw(statement)
    assert sql_backend.store.load(t)[1].data == events(2)[1].data
    assert sql_backend.store.idempotent_result(t, "k") is not None


def test_hash_chain_links_every_event_to_the_one_before(backend: Backend) -> None:
    t = new_table()
    backend.store.append(t, events(2), 0)
    backend.store.append(t, [NewEvent("hand_started", None, {"n": "é"},
                                      recorded_at="2024-05-01T12:00:00.000000+00:00")], 2)
    loaded = backend.store.load(t)
    assert loaded[0].prev_hash == GENESIS
    assert [e.prev_hash for e in loaded[1:]] == [e.hash for e in loaded[:-1]]
    last = loaded[-1]
    assert last.recorded_at == "2024-05-01T12:00:00.000000+00:00"
    assert last.hash == event_hash(last.prev_hash, t, 3, "hand_started", None, {"n": "é"},
                                   None, last.recorded_at)
    assert verify_chain(loaded) is None


def test_tampering_by_the_owner_is_caught_at_the_first_broken_version(
        sql_backend: Backend) -> None:
    t = new_table()
    sql_backend.store.append(t, events(5), 0)
    if sql_backend.name == "sqlite":  # the owner drops the trigger...
        sql_backend.raw("DROP TRIGGER events_no_update")
        sql_backend.raw(f"UPDATE events SET data = '{{\"seat\": 9}}' "
                        f"WHERE table_id = '{t}' AND version = 3")
    else:  # ...or disables it
        sql_backend.raw("ALTER TABLE events DISABLE TRIGGER events_append_only")
        sql_backend.raw(f"UPDATE events SET data = '{{\"seat\": 9}}' "
                        f"WHERE table_id = '{t}' AND version = 3")
        sql_backend.raw("ALTER TABLE events ENABLE TRIGGER events_append_only")
    problem = verify_chain(sql_backend.store.load(t))
    assert problem is not None and problem.startswith("version 3:")


def test_read_all_follows_the_global_order_across_tables(backend: Backend) -> None:
    a, b = new_table(), new_table()
    backend.store.append(a, events(2), 0)
    backend.store.append(b, events(3), 0)
    backend.store.append(a, events(1, 2), 2)
    got = read_all_until(backend.store, 6)
    assert [(e.table_id, e.version) for e in got] == [
        (a, 1), (a, 2), (b, 1), (b, 2), (b, 3), (a, 3)]
    positions = [e.position for e in got]
    assert positions == sorted(set(positions))
    assert backend.store.read_all(positions[2], limit=2) == got[3:5]
    assert sorted(backend.store.table_ids()) == sorted([a, b])


def test_append_returns_the_positions_read_all_sees(backend: Backend) -> None:
    t = new_table()
    stored = backend.store.append(t, events(3), 0)
    assert read_all_until(backend.store, 3) == stored


def test_upgrade_twice_is_harmless(backend: Backend) -> None:
    t = new_table()
    backend.store.append(t, events(2), 0)
    backend.store.upgrade()
    backend.store.upgrade()
    assert len(backend.store.load(t)) == 2
    info = backend.store.ping()
    assert info["backend"] == {"memory": "memory", "sqlite": "sqlite",
                               "postgres": "postgresql"}[backend.name]
    if backend.name != "memory":
        from ledger.store import postgres_schema, sqlite_schema

        schema = sqlite_schema if backend.name == "sqlite" else postgres_schema
        assert info["schema_version"] == len(schema.MIGRATIONS)


def test_server_secret_is_random_shared_by_every_instance_and_kept(sql_backend: Backend) -> None:
    secret = sql_backend.store.server_secret()
    assert len(secret) >= 30 and secret != bytes(len(secret))
    other = sql_backend.reopen()
    try:
        other.upgrade()  # upgrading again never draws a new one
        assert other.server_secret() == secret
    finally:
        other.close()


def test_each_database_has_its_own_server_secret(backend: Backend, tmp_path) -> None:
    from ledger.store.sqlite import SqliteStore

    fresh = SqliteStore(str(tmp_path / "other.db"))
    try:
        fresh.upgrade()
        assert fresh.server_secret() != backend.store.server_secret()
    finally:
        fresh.close()


def test_postgres_checked_insert_falls_back_to_loo_append_on_a_wrong_cached_hash(
        postgres_backend: Backend) -> None:
    # The one-statement append inserts only onto the head it expects; with a wrong cached
    # hash it writes nothing, and loo_append then names the head's hash for a second pass.
    store = postgres_backend.store
    t = new_table()
    store.append(t, events(2), 0)
    store._heads[t] = (2, "f" * 64)  # type: ignore[attr-defined]
    stored = store.append(t, events(3, 2), 2)
    assert [e.version for e in stored] == [3, 4, 5]
    assert stored[0].prev_hash == store.load(t)[1].hash
    assert verify_chain(store.load(t)) is None
    with pytest.raises(VersionConflict) as err:  # and a stale version, with the cache right
        store.append(t, events(1), 4)
    assert err.value.actual == 5


def test_read_model_rows_and_position_move_together_or_not_at_all(backend: Backend) -> None:
    store, name = backend.store, f"model-{uuid.uuid4().hex}"
    assert store.read_model_position(name) == 0
    assert store.read_model_rows(name, "club_a") == {}
    assert store.save_read_model(name, 0, 10, {("club_a", "t:0"): {"chips": 5, "m": ["x"]},
                                               ("club_a", "t:1"): {"chips": -5},
                                               ("club_b", "t:0"): {"chips": 1}})
    assert store.read_model_position(name) == 10
    assert store.read_model_rows(name, "club_a") == {"t:0": {"chips": 5, "m": ["x"]},
                                                     "t:1": {"chips": -5}}
    assert store.read_model_rows(name, "club_a", ["t:1", "t:9"]) == {"t:1": {"chips": -5}}
    # A stale projector (it started from 0, another moved the model to 10) saves nothing.
    assert not store.save_read_model(name, 0, 20, {("club_a", "t:0"): {"chips": 99}})
    assert store.read_model_rows(name, "club_a", ["t:0"]) == {"t:0": {"chips": 5, "m": ["x"]}}
    assert store.save_read_model(name, 10, 20, {("club_a", "t:0"): {"chips": 7}})
    assert store.read_model_rows(name, "club_a", ["t:0"]) == {"t:0": {"chips": 7}}
    assert store.read_model_position(name) == 20
    other = f"model-{uuid.uuid4().hex}"  # models are apart
    assert store.read_model_position(other) == 0 and store.read_model_rows(other, "club_a") == {}
    store.reset_read_model(name)
    assert store.read_model_position(name) == 0 and store.read_model_rows(name, "club_a") == {}


def test_head_position_is_the_last_committed_position(backend: Backend) -> None:
    stored = backend.store.append(new_table(), events(3), 0)
    assert backend.store.head_position() >= stored[-1].position
    later = backend.store.append(new_table(), events(1), 0)
    assert backend.store.head_position() == later[-1].position > stored[-1].position


@pytest.mark.parametrize("window", [None, 1, 3])
def test_read_streams_follows_only_the_given_tables_in_global_order(
        backend: Backend, window: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same answers whether the given tables' events lie in the store's next window of
    events by position or past it (a window of 1 or 3 sends every read down both paths)."""
    if window is not None:
        for module in ("sqlite", "postgres"):
            monkeypatch.setattr(f"ledger.store.{module}.STREAMS_WINDOW", window)
    a, b, c = new_table(), new_table(), new_table()
    backend.store.append(a, events(2), 0)
    backend.store.append(b, events(3), 0)
    backend.store.append(c, events(2), 0)
    backend.store.append(a, events(1, 2), 2)
    everything = read_all_until(backend.store, 8)
    mine = [e for e in everything if e.table_id in (a, c)]
    assert [(e.table_id, e.version) for e in mine] == [(a, 1), (a, 2), (c, 1), (c, 2), (a, 3)]
    assert backend.store.read_streams({a, c}) == mine
    assert backend.store.read_streams([c, a, a], limit=2) == mine[:2]
    assert backend.store.read_streams({a, c}, after_position=mine[1].position, limit=2) \
        == mine[2:4]
    assert backend.store.read_streams({a, c}, after_position=mine[-1].position) == []
    assert backend.store.read_streams({b}) == [e for e in everything if e.table_id == b]
    assert backend.store.read_streams(set()) == []
    assert backend.store.read_streams({"no-such-table"}) == []


@pytest.mark.parametrize("window", [None, 1, 3])
def test_read_streams_before_gives_the_given_tables_last_events_in_global_order(
        backend: Backend, window: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """read_streams backwards (a club feed's latest events, and the ones before them): the
    last `limit` of the given tables' events before a position, oldest first, the same
    whether they lie in the store's window before it or past it."""
    if window is not None:
        for module in ("sqlite", "postgres"):
            monkeypatch.setattr(f"ledger.store.{module}.STREAMS_WINDOW", window)
    a, b, c = new_table(), new_table(), new_table()
    backend.store.append(a, events(2), 0)
    backend.store.append(b, events(3), 0)
    backend.store.append(c, events(2), 0)
    backend.store.append(a, events(1, 2), 2)
    backend.store.append(b, events(2, 3), 3)
    everything = read_all_until(backend.store, 10)
    mine = [e for e in everything if e.table_id in (a, c)]
    end = everything[-1].position + 1
    read = backend.store.read_streams_before
    assert read({a, c}, end) == mine
    assert read([c, a, a], end, limit=2) == mine[-2:]
    assert read({a, c}, mine[-1].position, limit=2) == mine[-3:-1]
    assert read({a, c}, mine[2].position) == mine[:2]
    assert read({a, c}, mine[0].position) == []
    assert read({a, c}, 2**62) == mine  # a position past the head: up to the head
    assert read({b}, end, limit=3) == [e for e in everything if e.table_id == b][-3:]
    assert read(set(), end) == [] and read({"no-such-table"}, end) == []
    assert read({a, c}, end, limit=0) == []


def test_postgres_last_position_reads_one_index_entry_however_long_the_log(
        postgres_backend: Backend) -> None:
    """last_position (the head every feed reads from: the hub's start, ?latest=, a club
    stream's catch-up) is one index probe backwards. Written as max(position) after the
    high-water mark's WITH, it read the whole index instead (PostgreSQL's min/max rewrite
    skips a query with a WITH): 22-35 ms at 200,000 events, growing with the log."""
    import psycopg

    from ledger.store.postgres import _LAST_POSITION

    store = postgres_backend.store
    for start in range(0, 3_000, 500):
        last = store.append("long", events(500, start), start)
    assert postgres_backend.spec is not None
    _, url, schema = postgres_backend.spec
    with psycopg.connect(url, autocommit=True, options=f"-c search_path={schema}") as conn:
        conn.execute("ANALYZE events")
        plan = conn.execute(("EXPLAIN (ANALYZE, FORMAT JSON) " + _LAST_POSITION).encode()
                            ).fetchone()[0][0]["Plan"]

    def scans(node: dict[str, Any]) -> list[dict[str, Any]]:
        found = [node] if node.get("Relation Name") == "events" else []
        return found + [s for child in node.get("Plans", []) for s in scans(child)]

    read = [(s["Node Type"], s["Actual Rows"] * s["Actual Loops"]) for s in scans(plan)]
    assert read and all(rows <= 1 for _, rows in read), read
    assert store.last_position() == last[-1].position


def odd_batch(n: int, start: int = 0) -> list[NewEvent]:
    """`n` events whose text columns hold what an array literal must escape."""
    texts = ['q"uote', "back\\slash", "{braces},comma", "NULL", "", " sp ", "é\n\t"]
    return [NewEvent(texts[i % len(texts)] or "t", None if i % 3 == 0 else i,
                     {"s": texts[(i + 1) % len(texts)], "i": start + i},
                     causation=None if i % 4 == 0 else texts[(i + 2) % len(texts)])
            for i in range(n)]


@pytest.mark.parametrize("n", [9, 40, 400])
def test_a_big_batch_loads_back_identical_and_chained(backend: Backend, n: int) -> None:
    # More events than PostgreSQL's VALUES-list INSERT takes go as arrays: text with quotes,
    # backslashes, braces, "NULL", empty strings and None come back exactly as given.
    t = new_table()
    backend.store.append(t, events(2), 0)
    stored = backend.store.append(t, odd_batch(n), 2)
    assert [e.version for e in stored] == list(range(3, n + 3))
    loaded = backend.store.load(t)
    assert loaded[2:] == stored
    assert [(e.type, e.hand, e.data, e.causation) for e in stored] == [
        (e.type, e.hand, e.data, e.causation) for e in odd_batch(n)]
    positions = [e.position for e in loaded]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    assert verify_chain(loaded) is None
    with pytest.raises(VersionConflict) as err:  # a stale version writes nothing
        backend.store.append(t, odd_batch(n), 2)
    assert err.value.actual == n + 2 and backend.store.version(t) == n + 2


def test_postgres_big_batch_is_one_checked_insert_with_its_fallback(
        postgres_backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    # Without a key, a batch of any size is one INSERT onto the expected head (not the
    # loo_append function); a wrong cached hash still falls back to loo_append once.
    import psycopg

    sent: list[str] = []
    real = psycopg.Cursor.execute  # conn.execute and the store's kept cursor both use it

    def execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        if "pg_notify" not in str(query):  # the notifier thread's
            sent.append(str(query))
        return real(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", execute)
    store, t = postgres_backend.store, new_table()
    store.append(t, odd_batch(30), 0)
    store.append(t, odd_batch(30, 30), 30)
    appends = [q for q in sent if "loo_append" in q or "INSERT INTO events" in q]
    assert len(appends) == 2 and all("unnest(" in q for q in appends), appends
    sent.clear()
    store._heads[t] = (60, "f" * 64)  # type: ignore[attr-defined]
    stored = store.append(t, odd_batch(20, 60), 60)
    assert ["unnest(" in q for q in sent if "events" in q or "loo_append" in q] == [
        True, False, False]  # refused, loo_append names the head, loo_append appends
    assert stored[0].prev_hash == store.load(t)[59].hash
    assert verify_chain(store.load(t)) is None


def test_postgres_refuses_text_with_a_nul_in_a_big_batch(postgres_backend: Backend) -> None:
    t = new_table()
    bad = [*events(10), NewEvent("tile_played", 1, {}, causation="a\x00b")]
    with pytest.raises(StoreError):
        postgres_backend.store.append(t, bad, 0)
    assert postgres_backend.store.version(t) == 0


def test_first_events_are_the_streams_begun_in_a_span(backend: Backend) -> None:
    """first_events(after, up_to): each stream's version 1 with after < position <= up_to,
    by position (the club feed finds the tables begun in the span of a page with it)."""
    a, b, c = new_table(), new_table(), new_table()
    backend.store.append(a, events(2), 0)
    backend.store.append(b, events(3), 0)
    backend.store.append(a, events(1, 2), 2)
    backend.store.append(c, events(1), 0)
    everything = read_all_until(backend.store, 7)
    firsts = [e for e in everything if e.version == 1]
    assert [e.table_id for e in firsts] == [a, b, c]
    assert backend.store.first_events(0, everything[-1].position) == firsts
    assert backend.store.first_events(firsts[0].position, firsts[1].position) == firsts[1:2]
    assert backend.store.first_events(firsts[1].position, everything[-2].position) == []
    assert backend.store.first_events(everything[-1].position, everything[-1].position) == []


# ---- append_batches: several streams in one transaction (a club table and its listing) ---

def test_append_batches_commit_together_in_the_order_given(backend: Backend) -> None:
    club, table = new_table(), new_table()
    backend.store.append(club, events(2), 0)
    first, then = backend.store.append_batches([Batch(club, events(1, 2), 2),
                                                Batch(table, events(3), 0)])
    assert [e.version for e in first] == [3] and [e.version for e in then] == [1, 2, 3]
    assert backend.store.load(club)[2:] == first and backend.store.load(table) == then
    assert verify_chain(backend.store.load(club)) is None
    assert verify_chain(backend.store.load(table)) is None
    got = read_all_until(backend.store, 6)
    assert got[2:] == first + then  # positions increase in the order given
    assert backend.store.version(table) == 3


def test_append_batches_a_refusal_of_any_batch_writes_none(backend: Backend) -> None:
    club, table, taken = new_table(), new_table(), new_table()
    backend.store.append(club, events(2), 0)
    backend.store.append(taken, events(1), 0)
    with pytest.raises(VersionConflict) as err:  # the first batch's version is stale
        backend.store.append_batches([Batch(club, events(1), 1), Batch(table, events(2), 0)])
    assert (err.value.table_id, err.value.expected, err.value.actual) == (club, 1, 2)
    with pytest.raises(VersionConflict) as err:  # a later batch's new stream exists already
        backend.store.append_batches([Batch(club, events(1), 2), Batch(taken, events(2), 0)])
    assert (err.value.table_id, err.value.actual) == (taken, 1)
    assert backend.store.version(club) == 2 and backend.store.version(table) == 0
    assert backend.store.version(taken) == 1
    assert len(read_all_until(backend.store, 3)) == 3
    assert backend.store.read_all(0, 100)[-1].table_id == taken


def test_append_batches_keys_are_checked_per_batch(backend: Backend) -> None:
    club, table = new_table(), new_table()
    backend.store.append(club, events(1), 0)
    batches = [Batch(club, events(1), 1), Batch(table, events(2), 0, "k", "h")]
    backend.store.append_batches(batches)
    with pytest.raises(AlreadyApplied) as err:
        backend.store.append_batches([Batch(club, events(1), 2),
                                      Batch(table, events(2), 0, "k", "h")])
    assert (err.value.result.first_version, err.value.result.last_version) == (1, 2)
    with pytest.raises(IdempotencyConflict):
        backend.store.append_batches([Batch(club, events(1), 2),
                                      Batch(table, events(2), 0, "k", "other")])
    assert backend.store.version(club) == 2 and backend.store.version(table) == 2


def test_append_batches_save_their_checkpoints_or_none(backend: Backend) -> None:
    club, table, taken = new_table(), new_table(), new_table()
    backend.store.append(taken, events(1), 0)

    def sign(version: int, hash_: str, at: str) -> dict[str, Any]:
        return {"version": version, "hash": hash_, "at": at}

    backend.store.append_batches([Batch(club, events(1), 0),
                                  Batch(table, events(3), 0,
                                        checkpoints=NewCheckpoints((2,), sign))])
    [cp] = backend.store.checkpoints(table)
    head = backend.store.load(table)[2]
    assert cp == {"version": 3, "hash": head.hash, "at": head.recorded_at,
                  "position": head.position}
    with pytest.raises(VersionConflict):
        backend.store.append_batches([Batch(club, events(1), 1,
                                            checkpoints=NewCheckpoints((0,), sign)),
                                      Batch(taken, events(1), 0)])
    assert backend.store.checkpoints(club) == []


def test_append_batches_take_each_stream_once_and_only_the_first_continues_one(
        backend: Backend) -> None:
    a, b = new_table(), new_table()
    backend.store.append(a, events(1), 0)
    backend.store.append(b, events(1), 0)
    for bad in ([], [Batch(a, [], 1)], [Batch(a, events(1), 1), Batch(a, events(1), 2)],
                [Batch(a, events(1), 1), Batch(b, events(1), 1)]):
        with pytest.raises(ValueError):
            backend.store.append_batches(bad)
    assert backend.store.version(a) == backend.store.version(b) == 1


def test_append_batches_failing_in_the_database_midway_writes_nothing(
        sql_backend: Backend) -> None:
    club, table = new_table(), new_table()
    bad = [*events(2), NewEvent("tile_played", 2**70, {})]  # no integer column holds it
    with pytest.raises((StoreError, OverflowError)):
        sql_backend.store.append_batches([Batch(club, events(1), 0), Batch(table, bad, 0)])
    assert sql_backend.store.version(club) == sql_backend.store.version(table) == 0


def test_append_batches_racing_on_one_streams_version_commit_one(backend: Backend) -> None:
    """Two writers with the same expected version of the first stream (real threads): one
    commits both its batches, the other is a VersionConflict that writes neither."""
    club = new_table()
    backend.store.append(club, events(1), 0)
    def write(gate: threading.Barrier, results: list[Any], i: int, version: int,
              table: str) -> None:
        gate.wait()
        try:
            results[i] = backend.store.append_batches([Batch(club, events(1), version),
                                                       Batch(table, events(2), 0)])
        except VersionConflict as err:
            results[i] = err

    for round_ in range(5):
        tables = [new_table(), new_table()]
        gate = threading.Barrier(2)
        results: list[Any] = [None, None]
        threads = [threading.Thread(target=write, args=(gate, results, i, round_ + 1,
                                                        tables[i])) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        won = [i for i in range(2) if isinstance(results[i], list)]
        assert len(won) == 1, results
        lost = 1 - won[0]
        assert isinstance(results[lost], VersionConflict)
        assert results[lost].table_id == club
        assert backend.store.version(tables[won[0]]) == 2
        assert backend.store.version(tables[lost]) == 0
    assert backend.store.version(club) == 6
