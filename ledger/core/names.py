"""What a seat's or a member's name may be: shown to people and kept in the ledger, it is 1 to
60 characters, not blank, with no control character (a NUL cannot even be stored in
PostgreSQL) and no lone surrogate (no UTF-8 encodes one). The API's schemas, `loo play` and
the import of loo-hh files all check names here, so a name refused at one door is refused at
every door."""

from __future__ import annotations

import unicodedata
from typing import Any

NAME_MAX = 60


def name_problem(text: Any) -> str | None:
    """Why `text` cannot be a name, or None when it can."""
    if not isinstance(text, str):
        return "a name is text"
    if not text.strip():
        return "a name cannot be blank"
    if len(text) > NAME_MAX:
        return f"a name is 1 to {NAME_MAX} characters (this one has {len(text)})"
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in text):
        return "a name is printable text: no control characters or lone surrogates"
    return None
