"""The game-agnostic event store: `open_store(DATABASE_URL)` picks the backend."""

from __future__ import annotations

from ledger.store.base import EventStore, StoreUnavailable

DEFAULT_SQLITE_PATH = "./loo.db"


# Backends are imported lazily so the SQLite default never needs psycopg installed.
def open_store(url: str | None) -> EventStore:
    """None/"" -> ./loo.db, sqlite:///path, memory://, postgresql://... (or postgres://)."""
    if not url:
        from ledger.store.sqlite import SqliteStore

        return SqliteStore(DEFAULT_SQLITE_PATH)
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme == "sqlite" and url.startswith("sqlite:///") and len(url) > len("sqlite:///"):
        from ledger.store.sqlite import SqliteStore

        return SqliteStore(url[len("sqlite:///"):])
    if scheme == "memory" and url.rstrip("/") == "memory:":
        from ledger.store.memory import MemoryStore

        return MemoryStore()
    if scheme in {"postgresql", "postgres"}:
        from ledger.store.postgres import PostgresStore

        return PostgresStore(url)
    shown = scheme or url[:40]
    raise StoreUnavailable(f"unsupported DATABASE_URL {shown!r}: use sqlite:///PATH, "
                           "postgresql://USER@HOST/DB or memory://")
