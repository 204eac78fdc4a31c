"""Every collection answers {"items": [...], "next": cursor | null} the same way (API.md
Lists): ?limit=1..500 (default 50), an opaque ?cursor, and only the filters a list names;
an unknown filter or a bad value is a 422, never ignored."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Callable, Sequence
from typing import Any

from flask import request

from ledger.api.auth import ledger
from ledger.core.errors import Invalid

DEFAULT_LIMIT, MAX_LIMIT = 50, 500
Filter = Callable[[str], Any]  # parses a query value (raises ValueError when it is bad)


def boolean(raw: str) -> bool:
    if raw not in ("true", "false"):
        raise ValueError("true or false")
    return raw == "true"


def one_of(*choices: str) -> Filter:
    def parse(raw: str) -> str:
        if raw not in choices:
            raise ValueError(" or ".join(choices))
        return raw
    return parse


def whole(raw: str) -> int:
    if not digits(raw) or len(raw) > 18:
        raise ValueError("a whole number >= 0")
    return int(raw)


def text(raw: str) -> str:
    if not 1 <= len(raw) <= 200:
        raise ValueError("1 to 200 characters")
    return raw


def digits(raw: str) -> bool:
    """ASCII digits only: str.isdigit() also takes '²' (which int() refuses) and '٣'."""
    return raw.isascii() and raw.isdigit()


PAGED, WHOLE, BY_LIMIT = ("limit", "cursor"), (), ("limit",)


def query(filters: dict[str, Filter], paging: tuple[str, ...] = PAGED,
          ) -> tuple[dict[str, Any], int, int]:
    """The parsed filters, the limit and the offset the cursor stands for. An answer that
    is not paged (WHOLE: standings, NDJSON exports) takes no limit or
    cursor, and one paged by position (BY_LIMIT: the club feed's ?after=) no cursor: sent
    to them they would be ignored, so they are unknown parameters."""
    allowed = set(filters) | set(paging)
    unknown = sorted(set(request.args) - allowed)
    if unknown:
        raise Invalid("unknown_filter", f"unknown query parameter(s): {', '.join(unknown)}; "
                      f"this list takes {', '.join(sorted(allowed))}", field=unknown[0])
    parsed: dict[str, Any] = {}
    for name, parse in filters.items():
        raw = request.args.get(name)
        if raw is None:
            continue
        try:
            parsed[name] = parse(raw)
        except ValueError as err:
            raise Invalid("invalid_filter", f"{name}: {raw!r} is not valid ({err})",
                          field=name) from None
    raw_limit = request.args.get("limit", str(DEFAULT_LIMIT))
    if not digits(raw_limit) or not 1 <= int(raw_limit) <= MAX_LIMIT:
        raise Invalid("invalid_filter", f"limit must be a whole number from 1 to {MAX_LIMIT}",
                      field="limit")
    cursor = request.args.get("cursor")
    offset = 0 if cursor is None else _opened(cursor)
    return parsed, int(raw_limit), offset


# A cursor is base64url("o:<offset>:<list tag>" + SEAL bytes of an HMAC under the deployment's
# secret (Ledger.mac) over the offset and the list it pages): the service recognises every
# cursor it gave out, in any of its processes and after a restart (the secret is the
# store's), and nobody can make one up or edit one. Before, a cursor was its plain text, so a
# made-up cursor pointing inside its list (a tag is computable from the path) paged it.
SEAL = 16


def _opened(cursor: str) -> int:
    """The offset a cursor of the list being answered stands for (a 422 for any other)."""
    try:
        raw = base64.urlsafe_b64decode(cursor.encode() + b"==")
        kind, number, tag = raw[:-SEAL].decode("ascii").split(":")
        if (kind != "o" or not digits(number) or len(number) > 18 or len(raw) <= SEAL
                or _encoded(raw) != cursor.rstrip("=")):
            raise ValueError(cursor)
        offset = int(number)
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise Invalid("invalid_cursor", "cursor is not one this list gave out: pass the "
                      "`next` of the page before as it is", field="cursor") from None
    if hmac.compare_digest(raw[-SEAL:], _seal(offset)):
        return offset
    if tag != _list_tag():
        raise Invalid("invalid_cursor", "cursor was given out by another list, or by this "
                      "one with other filters: page with the filters it came with",
                      field="cursor")
    raise Invalid("invalid_cursor", "cursor is not one this service gave out (edited, made "
                  "up, or of a release before cursors were signed): pass the `next` of the "
                  "page before as it is, or start again without a cursor", field="cursor")


def _list() -> tuple[str, list[tuple[str, str]]]:
    """Which list a cursor belongs to: its path and filters (not its limit, which a client
    may change between pages), so a cursor of another list, or of the same one filtered
    otherwise, is refused rather than read as an offset into the wrong items."""
    return request.path, sorted((k, v) for k, v in request.args.items(multi=True)
                                if k not in ("cursor", "limit"))


def _list_tag() -> str:
    """A short name of the list, in the cursor: only to say which refusal it is."""
    return hashlib.sha256(repr(_list()).encode()).hexdigest()[:10]


def _seal(offset: int) -> bytes:
    return ledger().mac(repr(("list cursor", offset, *_list())))[:SEAL]


def _encoded(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def cursor(offset: int) -> str:
    """The opaque cursor of the page starting at `offset` of the list being answered."""
    return _encoded(f"o:{offset}:{_list_tag()}".encode() + _seal(offset))


def within(offset: int, length: int) -> None:
    """A cursor's place is in its list: every list only grows and gives `next` only while
    an item follows (0 < offset < length), so a place at or past its end (a made-up
    cursor) is a 422 invalid_cursor, never an empty page. Offset 0 is the first page."""
    if offset and offset >= length:
        raise Invalid("invalid_cursor", "cursor is not one this list gave out: it points "
                      "past the list's end; start again without a cursor", field="cursor")


def page(items: Sequence[Any], limit: int, offset: int) -> dict[str, Any]:
    """One page of a list in its stable order (oldest first: new items only append)."""
    within(offset, len(items))
    chunk = list(items[offset:offset + limit])
    end = offset + len(chunk)
    nxt = cursor(end) if end < len(items) else None
    return {"items": chunk, "next": nxt}


def page_of(every: Sequence[Any], view: Callable[[Any], Any], limit: int,
            offset: int) -> dict[str, Any]:
    """One page of the items of `every` that `view` answers (None: not in this list: revoked,
    removed, filtered out). `every` is everything the list ever held, in its stable order
    (oldest first, appended to only), and the cursor is a place in it, not a count of the
    items listed so far: an item that leaves the list between two pages (a token revoked, a
    member archived under ?archived=false, a table finished under ?status=playing) moves no
    other across the page boundary, so every item in the list throughout is listed exactly
    once (API.md Lists). `next` is null when no item after the page is in the list."""
    within(offset, len(every))
    chunk: list[Any] = []
    at = offset
    while at < len(every) and len(chunk) < limit:
        shown = view(every[at])
        if shown is not None:
            chunk.append(shown)
        at += 1
    more = any(view(item) is not None for item in every[at:])
    return {"items": chunk, "next": cursor(at) if more else None}


# ---- the same lists as the OpenAPI spec says them (blp.doc(parameters=params(...))) ---------
TEXT = {"type": "string", "minLength": 1, "maxLength": 200}
BOOLEAN = {"type": "boolean"}
DATE = {"type": "string", "format": "date"}
POSITION = {"type": "integer", "minimum": 0, "maximum": 2**63 - 1}
VERSION = {"type": "integer", "minimum": 0, "maximum": 10**18 - 1,
           "description": "the club's version the client last saw: stale is a 409"}
TABLE_VERSION = VERSION | {"description": "the table's version the client last saw: stale is "
                                          "a 409"}


def enum(*choices: str) -> dict[str, Any]:
    return {"type": "string", "enum": list(choices)}


def params(filters: dict[str, dict[str, Any]] | None = None,
           paging: tuple[str, ...] = PAGED) -> list[dict[str, Any]]:
    """The query parameters `query(filters, paging)` takes, as OpenAPI parameters."""
    out = [{"in": "query", "name": name, "required": False, "schema": schema}
           for name, schema in (filters or {}).items()]
    if "limit" in paging:
        out.append({"in": "query", "name": "limit", "required": False,
                    "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT,
                               "default": DEFAULT_LIMIT}})
    if "cursor" in paging:
        out.append({"in": "query", "name": "cursor", "required": False,
                    "schema": {"type": "string"},
                    "description": "opaque: the `next` of the page before, sent as it is. "
                                   "The service seals it, so one edited or made up is a 422 "
                                   "invalid_cursor, as is one of another list or filters; "
                                   "the limit may change between pages"})
    return out
