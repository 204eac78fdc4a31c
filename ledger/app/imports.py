"""Import loo-hh 1.0 files as a new recorded (or results) table (API.md "Hand history").

Every hand is entered through the same commands a scorer sends live (start the hand with its
deal or its result, then each action for its seat) and checked by the rules; all of it is
decided in memory first and appended in one batch, so an illegal file creates nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ledger.app.verify import NotJson, VerifyError, _action, _describe, verify_document
from ledger.core import commands as c
from ledger.core.errors import Invalid, LedgerError
from ledger.core.rules.tiles import parse_tile

LIVE_PLAY_ONLY = frozenset({"hints", "turn_seconds"})


class ImportRefused(Invalid):
    """The file cannot be imported; `detail` names the hand and action (nothing created)."""


@dataclass(frozen=True, slots=True)
class Plan:
    """What the import will do: the table to create and, per hand, its commands."""

    create: c.CreateTable
    hands: list[tuple[int, list[tuple[str, c.Command]]]]  # (number, [(what, command)])
    # Per seat, the club member the file names (table.seats[].member) or None: an import
    # into a club links them when they are its members (ledger/api/clubs.py), the CLI's
    # plain table keeps none.
    members: tuple[str | None, ...] = ()


def plan(docs: Iterable[tuple[int, Any]], key: Any = None) -> Plan:
    """Check the files (format, schema, chain, rules) and turn them into commands."""
    try:
        return _plan(docs, key)
    except NotJson:
        raise  # not JSON at all: malformed, for the caller to say so (an HTTP 400)
    except VerifyError as err:  # unreadable input (a line too long)
        raise ImportRefused("import_refused", str(err)) from None


def _plan(docs: Iterable[tuple[int, Any]], key: Any) -> Plan:
    first: dict[str, Any] | None = None
    hands: list[tuple[int, list[tuple[str, c.Command]]]] = []
    starts: list[int] = []  # the version of each hand's first event in the source table
    voids: list[tuple[int, int, str]] = []  # (version, hand, reason) of each hand_voided
    for line, doc in docs:
        try:
            verify_document(doc, key)
        except VerifyError as err:
            raise ImportRefused("import_refused", f"line {line}: {err}") from None
        if first is None:
            first = doc
        elif doc["table"]["id"] != first["table"]["id"]:
            raise ImportRefused("import_refused", f"line {line}: hand of table "
                                f"{doc['table']['id']}, not {first['table']['id']}: import "
                                "one table at a time")
        number = doc["hand"]["number"]
        if number != len(hands) + 1:
            raise ImportRefused("import_refused", f"line {line}: hand {number} where hand "
                                f"{len(hands) + 1} was expected: import a table's hands from "
                                "hand 1, in order, none missing")
        hands.append((number, _commands(doc)))
        starts.append(doc["events"][0]["version"])
        voids += [(e["version"], number, e["data"]["reason"]) for e in doc["events"]
                  if doc["hand"]["voided"] and e["type"] == "hand_voided"]
    if first is None:
        raise ImportRefused("import_refused", "the file holds no hand")
    _place_voids(hands, starts, voids)
    table = first["table"]
    mode = "results" if first["hand"]["mode"] == "results" else "recorded"
    # Bots play only shuffled tables: an imported seat keeps its name, a person now.
    in_order = sorted(table["seats"], key=lambda s: s["seat"])
    seats = tuple((s["name"], None) for s in in_order)
    # Hints and turn timers serve live play at a shuffled table; the scorer enters every
    # move of the recorded copy, which takes neither (the rules' options all stay).
    options = {k: v for k, v in table["options"].items() if k not in LIVE_PLAY_ONLY}
    create = c.CreateTable(table["variant"], table["scoring"], seats,
                           first["hand"]["dealer"], mode, options)
    return Plan(create, hands, tuple(s.get("member") for s in in_order))


def _place_voids(hands: list[tuple[int, list[tuple[str, c.Command]]]], starts: list[int],
                 voids: list[tuple[int, int, str]]) -> None:
    """A voided hand is voided again where its source voided it (API.md "Corrections": the
    record keeps it, marked voided, and the books are as before it): after the commands of
    the last hand that started before that hand_voided, in the source's order, so a table
    voided back over several hands is voided back in the same order."""
    for version, number, reason in sorted(voids):
        at = max(i for i, start in enumerate(starts) if start < version)
        hands[at][1].append((f"the void of hand {number}", c.VoidHand(number, reason)))


def _commands(doc: dict[str, Any]) -> list[tuple[str, c.Command]]:
    """A hand's commands as a scorer would send them on a recorded or results table."""
    hand = doc["hand"]
    n = len(doc["table"]["seats"])
    if hand["mode"] == "results":
        result = {k: hand["result"][k] for k in ("decisions", "tricks", "for_pool")}
        return [("the result", c.StartHand(result=result))]
    deal = tuple(tuple(parse_tile(x) for x in hand["deal"][str(s)]) for s in range(n))
    out: list[tuple[str, c.Command]] = [
        ("the deal", c.StartHand(hands=deal, turn_up=parse_tile(hand["turn_up"])))]
    # A shuffled hand's misses drew from the boneyard in order; recorded, they name the tiles.
    drawn = [e["data"]["tiles"] for e in doc["events"] if e["type"] == "miss_drawn"]
    for k, a in enumerate(hand["actions"]):
        if a["type"] == "decide" and a.get("choice") == "miss" and "drawn" not in a and drawn:
            a = {**a, "drawn": drawn.pop(0)}
        elif a["type"] == "decide" and a.get("choice") == "miss" and "drawn" in a and drawn:
            drawn.pop(0)
        out.append((_describe(k, a), c.Act(_action(a))))
    return out


def refuse(number: int, what: str, err: LedgerError) -> ImportRefused:
    rule = f" (rule {err.rule})" if err.rule else ""
    return ImportRefused("import_refused", f"hand {number}, {what}: {err.detail}{rule}",
                         hand=number)
