"""Migration bookkeeping shared by both stores: each applied migration keeps a checksum of
its text, and a migration edited after it was applied is refused (the database would no
longer be what the code believes it is)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from ledger.store.base import StoreError


class MigrationChanged(StoreError):
    """An applied migration's text differs from the one the database recorded."""


def checksum(sql: str | Iterable[str]) -> str:
    text = sql if isinstance(sql, str) else "\n;\n".join(sql)
    return hashlib.sha256(text.encode()).hexdigest()


def check(version: int, recorded: str | None, sql: str | Iterable[str]) -> None:
    """Refuse a migration whose text changed since it was applied (None: not yet recorded,
    a database migrated before checksums were kept; its checksum is recorded now)."""
    if recorded is not None and recorded != checksum(sql):
        raise MigrationChanged(
            f"migration {version} was changed after it was applied to this database "
            f"(checksum {recorded[:12]}… recorded, {checksum(sql)[:12]}… now): a migration "
            "is never edited once released; add a new one instead")
