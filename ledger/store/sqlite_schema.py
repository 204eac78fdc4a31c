"""SQLite schema migrations, applied in order by SqliteStore.upgrade()."""

from __future__ import annotations

_REFUSE = "BEGIN SELECT RAISE(ABORT, '{table} is append-only: {op} refused'); END"

# Each migration is a list of statements (sqlite3 runs one at a time), applied once in one
# transaction and recorded in schema_migrations.
MIGRATIONS: list[tuple[int, list[str]]] = [
    (1, [
        """CREATE TABLE events (
            table_id    TEXT    NOT NULL,
            version     INTEGER NOT NULL CHECK (version > 0),
            position    INTEGER NOT NULL UNIQUE,
            type        TEXT    NOT NULL,
            hand        INTEGER,
            data        TEXT    NOT NULL,  -- canonical JSON
            causation   TEXT,
            recorded_at TEXT    NOT NULL,
            prev_hash   TEXT    NOT NULL,
            hash        TEXT    NOT NULL,
            PRIMARY KEY (table_id, version))""",
        """CREATE TABLE idempotency (
            table_id      TEXT    NOT NULL,
            key           TEXT    NOT NULL,
            request_hash  TEXT    NOT NULL,
            first_version INTEGER NOT NULL,
            last_version  INTEGER NOT NULL,
            PRIMARY KEY (table_id, key))""",
        *(f"CREATE TRIGGER {t}_no_{op.lower()} BEFORE {op} ON {t} "
          + _REFUSE.format(table=t, op=op)
          for t in ("events", "idempotency") for op in ("UPDATE", "DELETE")),
    ]),
    # A random secret of this deployment (every process on this database shares it): the
    # table id and tokens of a create with an Idempotency-Key are HMACs under it, so nobody
    # can compute them from the key offline. Written once, here; never changed.
    (2, [
        """CREATE TABLE server_secret (
            id     INTEGER PRIMARY KEY CHECK (id = 1),
            secret TEXT    NOT NULL)""",
        "INSERT INTO server_secret VALUES (1, lower(hex(randomblob(32))))",
        *(f"CREATE TRIGGER server_secret_no_{op.lower()} BEFORE {op} ON server_secret "
          + _REFUSE.format(table="server_secret", op=op) for op in ("UPDATE", "DELETE")),
    ]),
    # Signed checkpoints (API.md "Checkpoints"): heads of each table's chain, signed with a
    # key kept outside the database. Kept apart from the events so that deleting the last
    # events of a table leaves the checkpoint that names them (the audit then fails).
    (3, [
        """CREATE TABLE checkpoints (
            table_id TEXT    NOT NULL,
            version  INTEGER NOT NULL,
            data     TEXT    NOT NULL,  -- the signed checkpoint, as JSON
            PRIMARY KEY (table_id, version))""",
        *(f"CREATE TRIGGER checkpoints_no_{op.lower()} BEFORE {op} ON checkpoints "
          + _REFUSE.format(table="checkpoints", op=op) for op in ("UPDATE", "DELETE")),
    ]),
    # Read models (projections kept up to date from the global position, e.g. club
    # standings): rows of JSON by (name, scope, key) and each model's position. Derived data,
    # rebuilt from the events at will: the one place rows are replaced (never the events).
    (4, [
        """CREATE TABLE read_model_positions (
            name     TEXT    PRIMARY KEY,
            position INTEGER NOT NULL)""",
        """CREATE TABLE read_model_rows (
            name  TEXT NOT NULL,
            scope TEXT NOT NULL,
            key   TEXT NOT NULL,
            data  TEXT NOT NULL,  -- JSON
            PRIMARY KEY (name, scope, key))""",
    ]),
    # Webhooks (API.md Webhooks): each endpoint's cursor (the last position delivered, the
    # failed attempts of the next message, when to retry, and the lease of the one job
    # delivering to it) and the log of delivery attempts. What is owed is derived from the
    # events after the cursor; the endpoints themselves are events of the club's stream.
    (5, [
        """CREATE TABLE webhook_cursors (
            webhook_id  TEXT    PRIMARY KEY,
            club_id     TEXT    NOT NULL,
            position    INTEGER NOT NULL,
            attempt     INTEGER NOT NULL DEFAULT 0,
            retry_at    REAL,
            lease_owner TEXT,
            lease_until REAL)""",
        """CREATE TABLE webhook_deliveries (
            id         INTEGER PRIMARY KEY AUTOINCREMENT,
            webhook_id TEXT    NOT NULL,
            data       TEXT    NOT NULL)  -- JSON: event, position, status, attempt, ...""",
        "CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries (webhook_id, id)",
        *(f"CREATE TRIGGER webhook_deliveries_no_{op.lower()} BEFORE {op} ON webhook_deliveries "
          + _REFUSE.format(table="webhook_deliveries", op=op) for op in ("UPDATE", "DELETE")),
    ]),
    # The first event of every stream by position (a partial index: one row a table), so a
    # club feed finds the tables begun in a span of the log before the club lists them.
    (6, [
        "CREATE INDEX events_first_by_position ON events (position) WHERE version = 1",
    ]),
]
