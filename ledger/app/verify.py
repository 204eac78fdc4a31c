"""Verify loo-hh 1.0 files offline (API.md "Hand history"): no server, no database.

Checks, in order, and names the first failure: the format and spec_version, the JSON Schema,
the hash chain of the hand's events, the commitment (SHA-256 of the seed), the deal
re-derived from the seed, every action legal and every event the rules produce from them
(tricks and winners, settlement per RULES.md), the summary fields against the events, and
the checkpoint (its hash; its signature when a public key is given).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import IO, Any

import orjson

from ledger.app import checkpoints as cps
from ledger.app.history import FORMAT, SPEC_VERSION, hand_document, schema
from ledger.core import events as ev
from ledger.core.errors import LedgerError
from ledger.core.rules import hand as hd
from ledger.core.rules import table as tb
from ledger.core.rules.actions import Action, Decide, Discard, Play
from ledger.core.rules.deal import deal, shuffle
from ledger.core.rules.options import make_options
from ledger.core.rules.tiles import NAMES, parse_tile
from ledger.store.hashing import GENESIS, event_hash

MAX_LINE = 64 * 1024 * 1024  # a single hand is a few kB; refuse anything absurd early


class VerifyError(Exception):
    """The first problem found, in words that name where it is."""


class NotJson(VerifyError):
    """A line (or the one file) is not JSON at all: malformed, not a file to check."""


@dataclass(frozen=True, slots=True)
class Verified:
    table: str
    number: int


_validator: Any = None


def _schema_errors(doc: Any) -> str | None:
    global _validator
    if _validator is None:
        from jsonschema import Draft202012Validator

        _validator = Draft202012Validator(schema())
    errors = sorted(_validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    err = errors[0]
    where = "/".join(str(p) for p in err.absolute_path) or "(the document)"
    return f"schema: at {where}: {err.message[:300]}"


def before_state(doc: dict[str, Any]) -> tb.Table:
    """The table as it stood before the hand, from the file's table and hand.before."""
    table, hand = doc["table"], doc["hand"]
    seats = sorted(table["seats"], key=lambda s: s["seat"])
    players = len(seats)
    mode = table.get("deal") or hand["mode"]
    opts = make_options(table["variant"], table["scoring"], players, table["options"], mode)
    t = tb.replay([ev.TableCreated(variant=opts.variant, scoring=opts.scoring, deal=mode,
                                   players=players, options=table["options"],
                                   first_dealer=hand["dealer"], tokens={}),
                   *[ev.SeatFilled(seat=s["seat"], name=s["name"], bot=s.get("bot"))
                     for s in seats],
                   ev.DealerChosen(seat=hand["dealer"], method="named")])
    before = hand.get("before") or {}
    per_seat = range(players)
    prior = None
    if hand["number"] > 1:
        prior = replace(hd.new_hand(hand["number"] - 1, (hand["dealer"] - 1) % players, opts,
                                    mode, 0), phase="complete")
    return replace(t, hand=prior, settled=True, pool=int(before.get("pool", 0)),
                   balances=tuple(int(before.get("balances", {}).get(str(s), 0))
                                  for s in per_seat),
                   scores=tuple(int(before["scores"][str(s)]) for s in per_seat)
                   if "scores" in before else t.scores)


def _action(a: dict[str, Any]) -> Action:
    seat = a["seat"]
    if a["type"] == "decide":
        drawn = a.get("drawn")
        return Decide(seat, a["choice"], bool(a.get("take_turn_up", False)),
                      tuple(parse_tile(x) for x in a.get("discard", [])),
                      bool(a.get("for_pool", False)),
                      tuple(parse_tile(x) for x in drawn) if drawn is not None else None)
    if a["type"] == "discard":
        return Discard(seat, tuple(parse_tile(x) for x in a["tiles"]))
    return Play(seat, parse_tile(a["tile"]), a.get("suit"))


def _describe(k: int, a: dict[str, Any]) -> str:
    what = a.get("choice") or a.get("tile") or ",".join(a.get("tiles", []))
    return f"action {k + 1} (seat {a.get('seat')} {a.get('type')} {what})"


def rule_events(doc: dict[str, Any]) -> list[ev.Event]:
    """Every event the rules give for the hand from its deal (or seed) and its actions."""
    hand = doc["hand"]
    t = before_state(doc)
    mode = hand["mode"]
    if mode == "shuffled":
        out = tb.start_hand(t, seed=bytes.fromhex(hand["seed"]))
    elif mode == "recorded":
        players = len(doc["table"]["seats"])
        hands = tuple(tuple(parse_tile(x) for x in hand["deal"][str(s)]) for s in range(players))
        out = tb.start_hand(t, recorded=(hands, parse_tile(hand["turn_up"])))
    else:
        try:
            out = tb.start_hand(t, result=dict(hand["result"]))
        except LedgerError as err:
            raise VerifyError(f"hand {hand['number']}: impossible result: {err.detail}") from None
    t = tb.replay(out, t)
    for k, a in enumerate(hand["actions"]):
        try:
            more = tb.act(t, _action(a))
        except LedgerError as err:
            raise VerifyError(f"hand {hand['number']}, {_describe(k, a)}: illegal: "
                              f"{err.detail}" + (f" (rule {err.rule})" if err.rule else "")
                              ) from None
        except (KeyError, ValueError, TypeError) as err:
            raise VerifyError(f"hand {hand['number']}, {_describe(k, a)}: unreadable "
                              f"({err})") from None
        out += more
        t = tb.replay(more, t)
    if not tb.needs_settlement(t):
        raise VerifyError(f"hand {hand['number']}: the actions do not complete the hand "
                          f"(after {len(hand['actions'])} actions it waits for seat "
                          f"{t.hand.turn if t.hand else None})")
    return out + tb.settle(t)


def _chain(doc: dict[str, Any]) -> None:
    events = doc["events"]
    table_id = doc["table"]["id"]
    prev = events[0]["prev_hash"]
    if events[0]["version"] == 1 and prev != GENESIS:
        raise VerifyError("hash chain: version 1 must follow 64 zeros")
    last = len(events) - 1
    for i, e in enumerate(events):
        if i and e["version"] != events[i - 1]["version"] + 1:
            # A hand voided back to (API.md "Corrections") was voided after later hands:
            # its hand_voided, the file's last event, follows them. Its own hash is checked
            # below; the events between are the later hands' files.
            late_void = (i == last and e["type"] == "hand_voided"
                         and e["hand"] == doc["hand"]["number"]
                         and e["version"] > events[i - 1]["version"])
            if not late_void:
                raise VerifyError(f"hash chain: version {events[i - 1]['version'] + 1} is "
                                  f"missing (found {e['version']})")
            prev = e["prev_hash"]
        if e["prev_hash"] != prev:
            raise VerifyError(f"hash chain: version {e['version']}: prev_hash does not match "
                              "the hash of the event before it")
        want = event_hash(prev, e.get("table_id", table_id), e["version"], e["type"], e["hand"],
                          e["data"], e["causation"], e["recorded_at"])
        if want != e["hash"]:
            raise VerifyError(f"hash chain: version {e['version']} ({e['type']}): hash does "
                              "not match its content")
        prev = e["hash"]


def _first_difference(a: Any, b: Any, path: str) -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if a.get(k) != b.get(k):
                return _first_difference(a.get(k), b.get(k), f"{path}.{k}")
    if isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
        if len(a) != len(b):
            return f"{path}: {len(a)} items, the events give {len(b)}"
    return f"{path}: the file says {str(a)[:80]}, the events give {str(b)[:80]}"


class _Stored:
    """A file event with the attributes the builder reads from stored events."""

    def __init__(self, e: dict[str, Any], table_id: str) -> None:
        self.table_id = e.get("table_id", table_id)
        self.version, self.position = e["version"], e.get("position", 0)
        self.type, self.hand, self.data = e["type"], e["hand"], e["data"]
        self.causation, self.recorded_at = e["causation"], e["recorded_at"]
        self.hash, self.prev_hash = e["hash"], e["prev_hash"]


def verify_document(doc: Any, key: Any = None) -> Verified:
    """Check one loo-hh file; raises VerifyError naming the first failure."""
    if not isinstance(doc, dict):
        raise VerifyError("not a loo-hh file: a JSON object is expected")
    if doc.get("format") != FORMAT:
        raise VerifyError(f"format {doc.get('format')!r} is not {FORMAT!r}")
    if doc.get("spec_version") != SPEC_VERSION:
        raise VerifyError(f"spec_version {doc.get('spec_version')!r} is not supported "
                          f"(this reads loo-hh {SPEC_VERSION})")
    problem = _schema_errors(doc)
    if problem:
        raise VerifyError(problem)
    hand, number = doc["hand"], doc["hand"]["number"]
    _chain(doc)
    events = doc["events"]
    if hand["mode"] == "shuffled":
        if not hand["seed"] or not hand["commitment"]:
            raise VerifyError(f"hand {number}: a shuffled hand needs its seed and commitment")
        if hashlib.sha256(bytes.fromhex(hand["seed"])).hexdigest() != hand["commitment"]:
            raise VerifyError(f"hand {number}: the seed does not match the commitment "
                              "(commitment must be SHA-256 of the seed)")
        players = len(doc["table"]["seats"])
        again = deal(shuffle(bytes.fromhex(hand["seed"])), players, hand["dealer"])
        dealt = {str(s): [NAMES[x] for x in again.hands[s]] for s in range(players)}
        if hand["deal"] != dealt or hand["turn_up"] != NAMES[again.turn_up]:
            seat = next((s for s in dealt if (hand["deal"] or {}).get(s) != dealt[s]), None)
            where = f"seat {seat}'s tiles" if seat is not None else "the turn-up"
            raise VerifyError(f"hand {number}: the deal is not the one the seed gives "
                              f"({where} differ)")
    try:
        expected = rule_events(doc)
    except VerifyError:
        raise
    except (LedgerError, KeyError, ValueError, TypeError, IndexError) as err:
        detail = getattr(err, "detail", None) or str(err)
        raise VerifyError(f"hand {number}: cannot be replayed by the rules ({detail})") from None
    # The chain links through table-level events and notices; the rules give neither.
    played = [e for e in events if e["type"] not in ev.ASIDE and e["type"] not in ev.NOTICES]
    for i, want in enumerate(expected):
        got = played[i] if i < len(played) else None
        if got is None:
            raise VerifyError(f"hand {number}: the events end before {want.type} "
                              "that the rules give")
        if got["type"] != want.type or got["data"] != ev.to_data(want):
            raise VerifyError(f"hand {number}: event version {got['version']} "
                              f"({got['type']}) is not what the rules give "
                              f"({want.type} {orjson.dumps(ev.to_data(want)).decode()[:160]})")
    extra = played[len(expected):]
    if extra and not hand.get("voided"):
        raise VerifyError(f"hand {number}: event version {extra[0]['version']} "
                          f"({extra[0]['type']}) follows the settlement")
    table_id = doc["table"]["id"]
    stored = [_Stored(e, table_id) for e in events]
    rebuilt = hand_document(table_id, before_state(doc), stored, doc.get("checkpoint"))
    for part in ("hand",):
        mine = {k: v for k, v in doc[part].items() if k in rebuilt[part]}
        if mine != rebuilt[part]:
            raise VerifyError(f"hand {number}: " + _first_difference(mine, rebuilt[part],
                                                                   part).lstrip("."))
    cp = doc.get("checkpoint")
    if cp is not None:
        by_version = {e["version"]: e for e in events}
        named = by_version.get(cp["version"])
        if cp["table"] != table_id or named is None or named["hash"] != cp["hash"]:
            raise VerifyError(f"hand {number}: the checkpoint (version {cp['version']}) does "
                              "not name an event of this hand with its hash")
        if key is not None:
            bad = cps.verify(cp, key)
            if bad:
                raise VerifyError(f"hand {number}: checkpoint at version {cp['version']}: {bad}")
    return Verified(table_id, number)


def documents(stream: IO[bytes]) -> Iterator[tuple[int, Any]]:
    """(line number, parsed JSON) for an NDJSON stream or one (pretty-printed) file."""
    n = 1
    first = stream.readline(MAX_LINE + 1)
    while first and not first.strip():  # blank lines before the first file, as between files
        n += 1
        first = stream.readline(MAX_LINE + 1)
    if not first:
        raise VerifyError("line 1: empty input: a loo-hh file or NDJSON is expected")
    try:
        yield n, orjson.loads(first)
    except orjson.JSONDecodeError:
        rest = stream.read(MAX_LINE)
        try:
            whole = orjson.loads(first + rest)
        except orjson.JSONDecodeError as err:
            raise NotJson(f"line {n}: not JSON ({str(err)[:120]})") from None
        if isinstance(whole, list):
            yield from ((n, d) for d in whole)
        else:
            yield n, whole
        return
    for line in iter(lambda: stream.readline(MAX_LINE + 1), b""):
        n += 1
        if len(line) > MAX_LINE:
            raise VerifyError(f"line {n}: longer than {MAX_LINE} bytes: not a loo-hh file")
        if not line.strip():
            continue
        try:
            yield n, orjson.loads(line)
        except orjson.JSONDecodeError as err:
            raise NotJson(f"line {n}: not JSON ({str(err)[:120]})") from None


def verify_stream(docs: Iterable[tuple[int, Any]], key: Any = None) -> Iterator[Verified]:
    """Verify each document; the first failure raises VerifyError naming its line."""
    for line, doc in docs:
        try:
            yield verify_document(doc, key)
        except VerifyError as err:
            raise VerifyError(f"line {line}: {err}") from None
