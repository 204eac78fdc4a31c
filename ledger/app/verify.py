"""Verify loo-hh 1.0 files offline (API.md "Hand history"): no server, no database.

Checks, in order, and names the first failure: the format and spec_version, the JSON Schema,
the hash chain of the hand's events, the commitment (SHA-256 of the seed), the deal
re-derived from the seed, every action legal and every event the rules produce from them
(tricks and winners, settlement per RULES.md), the summary fields against the events, and
the checkpoints (`checkpoint`, and a voided hand's `void_checkpoint`: each names an event of
the file with its hash; its signature is checked when a public key, or a checkpoints.Keyring
of several, is given: with the key its key_id names), and the table's `close` carried by a
closed table's last complete hand (its events continue the chain up to table_closed, which
is what the rules give for closing the table they leave, and its checkpoint names it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import IO, Any

import orjson

from ledger.app import checkpoints as cps
from ledger.app import encoding
from ledger.app.history import FORMAT, SPEC_VERSION, hand_document, schema
from ledger.core import events as ev
from ledger.core.errors import LedgerError
from ledger.core.names import name_problem
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
    checkpoint: bool = False  # the file carries a checkpoint (its signature checked with a key)
    voided: bool = False  # the hand is voided
    void_checkpoint: bool = False  # the file carries its void's checkpoint (checked the same)
    closed: bool = False  # the file carries the table's close
    close_checkpoint: bool = False  # ... and the checkpoint naming its table_closed


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


def _shape(doc: dict[str, Any]) -> None:
    """What the schema cannot say: the seats are 0..n-1 once each, each with a name a table
    can have, the dealer is one of them, the hand's mode is the table's deal, a recorded
    hand has its deal and turn-up, and hand.before holds numbers. A file that contradicts
    itself there is named, never replayed into an internal error (an AssertionError,
    'tuple index out of range')."""
    table, hand, number = doc["table"], doc["hand"], doc["hand"]["number"]
    seats = sorted(s["seat"] for s in table["seats"])
    if seats != list(range(len(seats))):
        raise VerifyError(f"table.seats must number the seats 0 to {len(seats) - 1}, each "
                          f"once (found {seats})")
    for seat in table["seats"]:  # a name no table could be created with (ledger.core.names)
        problem = name_problem(seat.get("name"))
        if problem is not None:
            raise VerifyError(f"table.seats[{seat['seat']}].name: {problem}")
    if hand["dealer"] >= len(seats):
        raise VerifyError(f"hand {number}: dealer {hand['dealer']} is not a seat of this "
                          f"{len(seats)}-seat table")
    if table.get("deal") is not None and table["deal"] != hand["mode"]:
        raise VerifyError(f"hand {number}: hand.mode {hand['mode']!r} is not the table's "
                          f"deal {table['deal']!r}")
    if hand["mode"] == "recorded" and (
            hand["deal"] is None or hand["turn_up"] is None
            or sorted(hand["deal"]) != [str(s) for s in seats]):
        raise VerifyError(f"hand {number}: a recorded hand needs its deal (five tiles for "
                          "each seat) and its turn_up")
    before = hand.get("before")
    if before is None:
        return
    if not isinstance(before, dict):
        raise VerifyError(f"hand {number}: hand.before must be an object")
    numbers = [("pool", before["pool"])] if "pool" in before else []
    for part in ("balances", "scores"):
        if part in before:
            if not isinstance(before[part], dict):
                raise VerifyError(f"hand {number}: hand.before.{part} must be an object")
            numbers += [(f"{part}.{k}", v) for k, v in before[part].items()]
    for where, v in numbers:
        if type(v) is not int:
            raise VerifyError(f"hand {number}: hand.before.{where} must be a whole number "
                              f"(found {str(v)[:40]!r})")


def _chain(doc: dict[str, Any]) -> None:
    events = doc["events"]
    table_id = doc["table"]["id"]
    other = next((e for e in events if e.get("table_id", table_id) != table_id), None)
    if other is not None:
        raise VerifyError(f"hash chain: version {other['version']} is an event of table "
                          f"{str(other['table_id'])[:64]}, not of table.id {table_id}")
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


def _seat_names(doc: dict[str, Any]) -> None:
    """table.seats' names are those the hand's hand_started (in the hash chain) gives, in a
    file whose hand_started names the seats (hands started since it does): an edited name
    fails here, naming the seat. (An older file's names are in no event of it.)"""
    started = next((e for e in doc["events"] if e["type"] == "hand_started"), None)
    chained = started["data"].get("seat_names") if started is not None else None
    if chained is None:
        return
    seats = sorted(doc["table"]["seats"], key=lambda s: s["seat"])
    named = [s["name"] for s in seats]
    if not isinstance(chained, list) or len(chained) != len(named):
        raise VerifyError(f"hand {doc['hand']['number']}: table.seats lists {len(named)} "
                          f"seats, the hand's hand_started (version {started['version']}) "
                          f"names {len(chained) if isinstance(chained, list) else 'no'} seats")
    for seat, (mine, theirs) in enumerate(zip(named, chained, strict=True)):
        if mine != theirs:
            raise VerifyError(f"table.seats[{seat}].name: the file says {str(mine)[:80]!r}, "
                              f"but hand {doc['hand']['number']}'s hand_started (version "
                              f"{started['version']}, in the hash chain) names "
                              f"{str(theirs)[:80]!r}: the name was edited")


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
    _shape(doc)
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
            where = f"seat {seat}'s tiles differ" if seat is not None else "the turn-up differs"
            raise VerifyError(f"hand {number}: the deal is not the one the seed gives "
                              f"({where})")
    try:
        expected = rule_events(doc)
    except VerifyError:
        raise
    except (LedgerError, KeyError, ValueError, TypeError, IndexError) as err:
        detail = getattr(err, "detail", None) or str(err)
        raise VerifyError(f"hand {number}: cannot be replayed by the rules ({detail})") from None
    _seat_names(doc)
    # The chain links through table-level events and notices; the rules give neither.
    played = [e for e in events if e["type"] not in ev.ASIDE and e["type"] not in ev.NOTICES]
    for i, want in enumerate(expected):
        got = played[i] if i < len(played) else None
        if got is None:
            raise VerifyError(f"hand {number}: the events end before {want.type} "
                              "that the rules give")
        wanted = ev.to_data(want)
        if want.type == "hand_started" and "seat_names" not in got["data"]:
            del wanted["seat_names"]  # a hand started before hand_started named the seats
        if got["type"] != want.type or got["data"] != wanted:
            raise VerifyError(f"hand {number}: event version {got['version']} "
                              f"({got['type']}) is not what the rules give "
                              f"({want.type} {encoding.dumps(ev.to_data(want)).decode()[:160]})")
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
    by_version = {e["version"]: e for e in events}
    cp = doc.get("checkpoint")
    if cp is not None:
        named = by_version.get(cp["version"])
        if cp["table"] != table_id or named is None or named["hash"] != cp["hash"]:
            raise VerifyError(f"hand {number}: the checkpoint (version {cp['version']}) does "
                              "not name an event of this hand with its hash")
        _signed(cp, key, f"hand {number}: checkpoint")
    void_cp = doc.get("void_checkpoint")
    if void_cp is not None:
        named = by_version.get(void_cp["version"])
        if void_cp["table"] != table_id or named is None or named["type"] != "hand_voided" \
                or named["hand"] != number or named["hash"] != void_cp["hash"]:
            raise VerifyError(f"hand {number}: the void_checkpoint (version "
                              f"{void_cp['version']}) does not name this hand's hand_voided "
                              "with its hash")
        _signed(void_cp, key, f"hand {number}: void_checkpoint")
    closed, close_cp = _close(doc, key)
    return Verified(table_id, number, cp is not None, bool(hand["voided"]),
                    void_cp is not None, closed, close_cp)


def _signed(cp: dict[str, Any], key: Any, what: str) -> None:
    """The checkpoint's signature checked with `key`, when one is given; `what` names it."""
    if key is not None:
        bad = cps.verify(cp, key)
        if bad:
            raise VerifyError(f"{what} at version {cp['version']}: {bad}")


def _close(doc: dict[str, Any], key: Any) -> tuple[bool, bool]:
    """The file's `close` (a closed table's last complete hand): its events continue the
    file's own chain, end with the table_closed (one whose event was deleted while its
    checkpoint stayed fails here), hold no later complete hand, and the close is what the
    rules give for the table they leave (leftover, abandoned hand, revealed seed); its
    checkpoint names the table_closed with its hash, signed (with a key). (Whether the table
    was closed, and stays so, is this part: a file from before the close has none.)"""
    close = doc.get("close")
    if close is None:
        return False, False
    number, table_id = doc["hand"]["number"], doc["table"]["id"]
    events, cp = close["events"], close.get("checkpoint")
    if not events or events[-1]["type"] != "table_closed":
        if cp is not None:
            raise VerifyError(f"hand {number}: close.checkpoint names version {cp['version']}, "
                              "the table's table_closed, but close.events does not end with "
                              "it: the close was deleted")
        raise VerifyError(f"hand {number}: close.events must end with the table's "
                          "table_closed")
    run, _late = _own_run(doc)
    prev, version = run[-1]["hash"], run[-1]["version"]
    for e in events:
        if e.get("table_id", table_id) != table_id:
            raise VerifyError(f"close: version {e['version']} is an event of table "
                              f"{str(e['table_id'])[:64]}, not of table.id {table_id}")
        if e["version"] != version + 1:
            raise VerifyError(f"close: version {version + 1} is missing (found "
                              f"{e['version']}): close.events must follow the file's events")
        if e["prev_hash"] != prev:
            raise VerifyError(f"hash chain: close: version {e['version']}: prev_hash does "
                              "not match the hash of the event before it")
        if event_hash(prev, table_id, e["version"], e["type"], e["hand"], e["data"],
                      e["causation"], e["recorded_at"]) != e["hash"]:
            raise VerifyError(f"hash chain: close: version {e['version']} ({e['type']}): hash "
                              "does not match its content")
        if e["type"] == "hand_settled" or (e["type"] == "table_closed" and e is not events[-1]):
            raise VerifyError(f"close: version {e['version']} ({e['type']}) comes before "
                              "the close: close.events are the events after the table's last "
                              "complete hand up to its one table_closed")
        prev, version = e["hash"], e["version"]
    closed = events[-1]
    _close_rules(doc, run, events, number)
    if cp is not None:
        if cp["table"] != table_id or cp["version"] != closed["version"] \
                or cp["hash"] != closed["hash"]:
            raise VerifyError(f"hand {number}: close.checkpoint (version {cp['version']}) "
                              f"does not name the table_closed (version {closed['version']}) "
                              "with its hash")
        _signed(cp, key, f"hand {number}: close checkpoint")
    return True, cp is not None


def _close_rules(doc: dict[str, Any], run: list[dict[str, Any]],
                 events: list[dict[str, Any]], number: int) -> None:
    """The close is what tb.close gives for the table as the file and the events before the
    close leave it: the chips left over, the hand it abandoned, that hand's seed revealed."""
    closed = events[-1]
    tail = 2 if len(events) > 1 and events[-2]["type"] == "seed_revealed" else 1
    try:
        t = tb.replay([e for e in (ev.from_data(x["type"], x["data"]) for x in run)
                       if type(e) in tb.EVOLVE], before_state(doc))
        for x in events[:-tail]:
            e = ev.from_data(x["type"], x["data"])
            if isinstance(e, ev.HandVoided):  # an earlier hand's, voided back to
                pool, balances = tb.moved(t.pool, t.balances, e.transfers)
                t = replace(t, pool=pool, balances=balances, scores=e.totals)
            else:
                t = tb.evolve(t, e)
        want = tb.close(t, closed["data"].get("reason"))
        got = [ev.from_data(x["type"], x["data"]) for x in events[-tail:]]
    except (LedgerError, KeyError, ValueError, TypeError, IndexError, AttributeError) as err:
        detail = getattr(err, "detail", None) or str(err)
        raise VerifyError(f"hand {number}: the close cannot be replayed by the rules "
                          f"({detail})") from None
    if got != want:
        raise VerifyError(f"hand {number}: the table's close (version {closed['version']}) is "
                          "not what the rules give for the table it closed ("
                          + "; ".join(f"{w.type} {encoding.dumps(ev.to_data(w)).decode()[:160]}"
                                      for w in want) + ")")


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
        parsed = encoding.loads(first)
    except orjson.JSONDecodeError:
        rest = stream.read(MAX_LINE)
        try:
            whole = encoding.loads(first + rest)
        except orjson.JSONDecodeError as err:
            raise NotJson(f"line {n}: not JSON ({str(err)[:120]})") from None
        if isinstance(whole, list):
            yield from ((n, d) for d in whole)
        else:
            yield n, whole
        return
    # A JSON array of files is read as its files, on one line as when spread over several.
    if isinstance(parsed, list):
        yield from ((n, d) for d in parsed)
    else:
        yield n, parsed
    for line in iter(lambda: stream.readline(MAX_LINE + 1), b""):
        n += 1
        if len(line) > MAX_LINE:
            raise VerifyError(f"line {n}: longer than {MAX_LINE} bytes: not a loo-hh file")
        if not line.strip():
            continue
        try:
            yield n, encoding.loads(line)
        except orjson.JSONDecodeError as err:
            raise NotJson(f"line {n}: not JSON ({str(err)[:120]})") from None


class _Link:
    """What a stream has shown of one table so far, so that its next hand is checked to
    follow: the last hand's number, the head of the table's log as far as the files reach
    (version and hash), the chips and points there, and the hand_voided events seen ahead
    of the head (a hand voided back to carries its void, which the log holds after later
    hands: they join the chain where their version falls)."""

    __slots__ = ("number", "version", "hash", "pool", "balances", "scores", "ahead", "voided",
                 "from_start")

    def __init__(self, doc: dict[str, Any]) -> None:
        # The stream holds the table from its first hand, so every void is in it.
        self.from_start = doc["hand"]["number"] == 1
        self.voided = False
        self.number = self.version = self.pool = 0
        self.hash = ""
        self.balances: tuple[int, ...] = ()
        self.scores: tuple[int, ...] = ()
        self.ahead: dict[int, dict[str, Any]] = {}

    def after(self, doc: dict[str, Any], events: list[dict[str, Any]]) -> None:
        """Move the head past `events` (the file's own run, its late void aside)."""
        level = [e for e in (ev.from_data(x["type"], x["data"]) for x in events)
                 if type(e) in tb.EVOLVE]
        t = tb.replay(level, before_state(doc))
        self.number, self.version, self.hash = (doc["hand"]["number"], events[-1]["version"],
                                                events[-1]["hash"])
        self.voided = bool(doc["hand"].get("voided"))
        self.pool, self.balances, self.scores = t.pool, t.balances, t.scores

    def absorb(self) -> None:
        """Take in the voids held ahead that the head has reached."""
        while (e := self.ahead.pop(self.version + 1, None)) is not None:
            if e["prev_hash"] != self.hash:
                raise VerifyError(f"hash chain: version {e['version']} (hand {e['hand']}'s "
                                  "hand_voided): prev_hash does not match the hash of the "
                                  "event before it")
            void = ev.from_data(e["type"], e["data"])
            assert isinstance(void, ev.HandVoided)
            self.pool, self.balances = tb.moved(self.pool, self.balances, void.transfers)
            self.scores = void.totals
            self.version, self.hash = e["version"], e["hash"]


def _own_run(doc: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """The file's events in one run of versions, and its late hand_voided if it has one."""
    events = doc["events"]
    if len(events) > 1 and events[-1]["version"] != events[-2]["version"] + 1:
        return events[:-1], events[-1]  # _chain allows only that gap
    return events, None


def _follows(link: _Link, doc: dict[str, Any]) -> None:
    """A table's next file in a stream: a later hand, whose first event comes next in the
    table's log (no hand left out, repeated or moved) and whose `before` is the table as the
    hands before it left it."""
    number = doc["hand"]["number"]
    if number <= link.number:
        raise VerifyError(f"hand {number} of table {doc['table']['id']} comes after hand "
                          f"{link.number}: a table's hands must come in order, each once")
    run, late = _own_run(doc)
    link.absorb()
    first = run[0]
    clash = [v for v in link.ahead if first["version"] <= v <= run[-1]["version"]]
    if clash:
        raise VerifyError(f"hand {number}: version {clash[0]} is also an earlier hand's "
                          "hand_voided")
    if first["version"] <= link.version:
        raise VerifyError(f"hand {number}: its events (from version {first['version']}) "
                          f"repeat versions the hands before it hold (up to {link.version})")
    if first["version"] != link.version + 1:
        if not link.from_start and link.voided and number == link.number + 1:
            # The voids of hands before the stream's first (voided back to, after the
            # voided hand before this one) lie between, in files the stream does not hold:
            # the chain and the chips pick up again from this hand.
            link.after(doc, run)
            if late is not None:
                link.ahead[late["version"]] = late
            return
        raise VerifyError(f"hand {number}: versions {link.version + 1} to "
                          f"{first['version'] - 1} of table {doc['table']['id']} are missing "
                          f"between hand {link.number} and it (a hand left out?)")
    if first["prev_hash"] != link.hash:
        raise VerifyError(f"hash chain: hand {number} does not follow hand {link.number}: "
                          f"version {first['version']}'s prev_hash is not the hash of "
                          f"version {link.version}")
    before = doc["hand"].get("before") or {}
    players = len(link.balances)
    claimed = (int(before.get("pool", 0)),
               tuple(int(before.get("balances", {}).get(str(s), 0)) for s in range(players)),
               tuple(int(before.get("scores", {}).get(str(s), 0)) for s in range(players)))
    if claimed != (link.pool, link.balances, link.scores):
        raise VerifyError(f"hand {number}: hand.before (pool {claimed[0]}, balances "
                          f"{list(claimed[1])}, scores {list(claimed[2])}) is not the table "
                          f"the hands before it left (pool {link.pool}, balances "
                          f"{list(link.balances)}, scores {list(link.scores)})")
    link.after(doc, run)
    if late is not None:
        link.ahead[late["version"]] = late


def verify_stream(docs: Iterable[tuple[int, Any]], key: Any = None) -> Iterator[Verified]:
    """Verify each document; the first failure raises VerifyError naming its line.

    Files of the same table are also checked to follow each other (`_follows`): a stream
    with a hand left out, repeated or moved, or a `before` edited to match no earlier hand,
    fails though each file is sound alone. A table's first file in the stream starts its
    chain wherever it stands (a club's export from a date on)."""
    links: dict[str, _Link] = {}
    for line, doc in docs:
        try:
            done = verify_document(doc, key)
            link = links.get(done.table)
            if link is None:
                link = links[done.table] = _Link(doc)
                run, late = _own_run(doc)
                link.after(doc, run)
                if late is not None:
                    link.ahead[late["version"]] = late
            else:
                _follows(link, doc)
        except VerifyError as err:
            raise VerifyError(f"line {line}: {err}") from None
        yield done
