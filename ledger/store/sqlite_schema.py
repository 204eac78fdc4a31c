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
]
