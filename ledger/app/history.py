"""loo-hh 1.0 hand histories (API.md "Hand history"): events of a hand -> one open JSON file.

`hand_document` is pure: the table as it stood before the hand, the hand's stored events and
its checkpoints give the file: `checkpoint` names the end of the hand's settlement and, for a
voided hand whose void was signed (this release on), `void_checkpoint` its hand_voided. The
last complete hand of a closed table also carries `close` (`close_part`): the table's events
after the hand's own up to its table_closed, and the checkpoint naming the close.
`table_history` walks a table's events page by page (rows with their data as stored JSON
text, store.load_raw) and yields one file per complete hand, holding one hand's events at a
time (constant memory); `table_history_ndjson` gives the same files as the NDJSON lines the
history endpoints and `loo export` write, with less work per hand.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

from ledger.app import encoding
from ledger.app.projector import chip_ledger, decode
from ledger.core import events as ev
from ledger.core.rules import table as tb
from ledger.core.rules.actions import Action, Decide, Discard, Play
from ledger.core.rules.tiles import NAMES
from ledger.store.base import RawEvent
from ledger.store.bulk import gc_paused, load_json

FORMAT, SPEC_VERSION = "loo-hh", "1.0"
SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schemas" / "loo-hh-1.0.schema.json"
PAGE = 2000  # events read at a time when streaming a table


@lru_cache(maxsize=1)
def schema_text() -> str:
    return SCHEMA_PATH.read_text(encoding="utf-8")


def schema() -> dict[str, Any]:
    import json

    return json.loads(schema_text())


def events_json(table_id: str, stored: Sequence[Any], datas: Sequence[Any],
                ) -> list[dict[str, Any]]:
    """`event_json` of each of a table's events, with `datas` (each one's data as the file
    holds it) in one comprehension: a hand's hundred events, every export."""
    return [{"table_id": table_id, "version": s.version, "position": s.position,
             "type": s.type, "hand": s.hand, "data": d, "causation": s.causation,
             "recorded_at": s.recorded_at, "hash": s.hash, "prev_hash": s.prev_hash}
            for s, d in zip(stored, datas, strict=True)]


def actions_of(events: Sequence[ev.Event], ordered: bool,
               play: Callable[[int, int, int | None], Any] = Play) -> list[Action]:
    """The seats' actions that produced a hand's events (what a scorer would have sent);
    `play(seat, tile, suit)` makes each play's."""
    out: list[Action] = []
    i, n = 0, len(events)
    played, decided, discarded = ev.TilePlayed, ev.PlayerDecided, ev.TilesDiscarded
    while i < n:
        e = events[i]
        kind = type(e)  # the event classes are final: a type test per event, plays first
        if kind is played:
            out.append(play(e.seat, e.tile, e.suit))  # type: ignore[union-attr]
        elif kind is decided:
            assert isinstance(e, ev.PlayerDecided)
            discard: tuple[int, ...] = ()
            drawn = None
            if e.take_turn_up:
                disc = events[i + 2]
                assert isinstance(disc, ev.TilesDiscarded)
                discard = disc.tiles
                i += 2
            if e.choice == "miss" and i + 1 < len(events) \
                    and isinstance(events[i + 1], ev.MissDrawn):
                if not ordered:  # recorded tables name the tiles drawn
                    drawn = events[i + 1].tiles  # type: ignore[union-attr]
                i += 1
            out.append(Decide(e.seat, e.choice, e.take_turn_up, discard, e.for_pool, drawn))
        elif kind is discarded:
            out.append(Discard(e.seat, e.tiles))  # type: ignore[union-attr]
        i += 1
    return out


def action_json(a: Action) -> dict[str, Any]:
    return {"seat": a.seat, **a.body()}


def _actions(decoded: Sequence[ev.Event], ordered: bool) -> list[dict[str, Any]]:
    """`action_json` of each of `actions_of`, the plays (most of them) written straight from
    their events (tests/unit/test_history.py holds the two equal)."""
    return [a if type(a) is dict else action_json(a)  # type: ignore[arg-type]
            for a in actions_of(decoded, ordered, play=_play_json)]


def _play_json(seat: int, tile: int, suit: int | None) -> dict[str, Any]:
    """action_json(Play(seat, tile, suit)), without the Play."""
    if suit is None:
        return {"seat": seat, "type": "play", "tile": NAMES[tile]}
    return {"seat": seat, "type": "play", "tile": NAMES[tile], "suit": suit}


def complete(events: Sequence[Any]) -> bool:
    """A hand is exported once it is complete and settled."""
    return any(s.type == "hand_settled" for s in events)


def hand_document(table_id: str, before: tb.Table, stored: Sequence[Any],
                  checkpoint: dict[str, Any] | None = None,
                  void_checkpoint: dict[str, Any] | None = None,
                  close: dict[str, Any] | None = None) -> dict[str, Any]:
    """The loo-hh 1.0 file of one complete hand. `before`: the table before its hand_started;
    `checkpoint` and `void_checkpoint`: the ones naming `heads(stored)`; `close`: the
    table's close when this is its last complete hand (`close_part`)."""
    doc = _document(table_id, before, stored, [decode(s) for s in stored],
                    [s.data for s in stored], checkpoint, void_checkpoint)
    if close is not None:
        doc["close"] = close
    return doc


def close_part(table_id: str, after: Sequence[Any], checkpoints: dict[int, dict[str, Any]],
               datas: Sequence[Any] | None = None) -> dict[str, Any] | None:
    """The `close` of a hand's file: `after` are the table's events after the hand's own run
    (hand_events' run: its void aside), in log order. When they reach the table's
    table_closed with no complete hand before it (this is the last complete hand), the
    events up to it (an abandoned hand's, voids of earlier hands voided back to) and the
    checkpoint naming it (`checkpoints`, by version; a close of an earlier release has
    none); otherwise None. `datas`: each event's data as the file holds it (default .data)."""
    for i, s in enumerate(after):
        if s.type == "hand_settled":
            return None  # a later hand is complete: the close is in its file
        if s.type == "table_closed":
            upto = after[:i + 1]
            part: dict[str, Any] = {"events": events_json(
                table_id, upto, datas[:i + 1] if datas is not None else [x.data for x in upto])}
            cp = checkpoints.get(s.version)
            if cp is not None:
                part["checkpoint"] = cp
            return part
    return None


def own_run_length(stored: Sequence[Any], number: int) -> int:
    """How many of `stored` (a table's events from hand `number`'s hand_started on) are the
    hand's own run, as hand_events cuts it (`in_run`)."""
    voids = [s for s in stored if s.hand == number and s.type == "hand_voided"]
    void = voids[-1] if voids else None
    n = 0
    for s in stored:
        if n and not in_run(s, number, void):
            break
        n += 1
    return n


def heads(stored: Sequence[Any]) -> tuple[int, int | None]:
    """The versions of a complete hand's events that checkpoints name: the end of its
    settlement (game_won when the hand won the game, else hand_settled) and its hand_voided
    (None when it is not voided)."""
    ends = [s.version for s in stored if s.type in ("hand_settled", "game_won")]
    voids = [s.version for s in stored if s.type == "hand_voided"]
    return ends[-1], (voids[-1] if voids else None)


def _document(table_id: str, before: tb.Table, stored: Sequence[Any],
              decoded: Sequence[ev.Event], datas: Sequence[Any],
              checkpoint: dict[str, Any] | None,
              void_checkpoint: dict[str, Any] | None = None) -> dict[str, Any]:
    """hand_document, given the decoded events and each one's data as the file holds it.

    What the file says of the hand's play (decisions, tricks, a win without play) is read
    from its events, as the hand's fold sets it (tests/unit/test_history.py holds the two
    equal): the export folds only the table, not every move."""
    # The first event of each type, in one pass (the later ones are overwritten).
    first: dict[type, Any] = {type(e): e for e in reversed(decoded)}
    started: ev.HandStarted = first[ev.HandStarted]
    dealt: ev.TilesDealt | None = first.get(ev.TilesDealt)
    turned: ev.TrumpTurned | None = first.get(ev.TrumpTurned)
    revealed: ev.SeedRevealed | None = first.get(ev.SeedRevealed)
    done: ev.HandCompleted = first[ev.HandCompleted]
    won: ev.GameWon | None = first.get(ev.GameWon)
    opts = before.opts
    n = opts.players
    decisions: list[str | None] = [None] * n
    tricks: list[dict[str, Any]] = []
    without_play = None
    decided, trick_won = ev.PlayerDecided, ev.TrickWon
    for e in decoded:
        kind = type(e)
        if kind is decided:
            decisions[e.seat] = e.choice  # type: ignore[attr-defined]
        elif kind is trick_won:
            plays = e.plays  # type: ignore[attr-defined]
            tricks.append({"trick": len(tricks) + 1, "leader": plays[0][0],
                           "suit": e.suit,  # type: ignore[attr-defined]
                           "plays": [{"seat": s, "tile": NAMES[x]} for s, x in plays],
                           "winner": e.seat})  # type: ignore[attr-defined]
        elif kind is ev.HandWonWithoutPlay:
            without_play = e.seat  # type: ignore[attr-defined]
    result: dict[str, Any] = {
        "decisions": {str(s): d for s, d in enumerate(decisions) if d is not None},
        "tricks": {str(s): k for s, k in enumerate(done.tricks_won)},
        "for_pool": done.for_pool, "looed": list(done.looed),
    }
    if without_play is not None:
        result["won_without_play"] = without_play
    if won is not None:
        result["winner"] = won.seat
    hand: dict[str, Any] = {
        "number": started.number, "dealer": started.dealer, "mode": started.mode,
        "commitment": started.commitment, "seed": revealed.seed if revealed else None,
        "deal": ({str(s): [NAMES[x] for x in dealt.hands[s]] for s in range(n)}
                 if dealt else None),
        "boneyard": ([NAMES[x] for x in dealt.boneyard] if dealt and dealt.ordered else None),
        "turn_up": NAMES[turned.tile] if turned else None,
        "trump": turned.trump if turned else None,
        # results hands have no moves: their decisions and tricks are the result
        "actions": (_actions(decoded, dealt.ordered if dealt is not None else True)
                    if started.mode != "results" else []),
        "tricks": tricks,
        "result": result,
        "voided": ev.HandVoided in first,
        "before": {"pool": before.pool, "balances": {str(s): b for s, b in
                                                      enumerate(before.balances)},
                   "scores": {str(s): b for s, b in enumerate(before.scores)}},
    }
    if opts.scoring == "pool":
        hand["transfers"] = [{"hand": x["hand"], "version": x["version"], "from": x["from"],
                              "to": x["to"], "amount": x["amount"], "reason": x["reason"]}
                             for x in chip_ledger(stored, n, decoded)["transfers"]]
    else:
        hand["scores"] = [{"hand": s.hand, "version": s.version, "seat": seat,
                           "delta": delta, "reason": reason}
                          for s, e in zip(stored, decoded, strict=True)
                          if type(e) is ev.PointsScored
                          for seat, delta, reason in e.deltas]
    seats = []
    for s in range(n):
        seat: dict[str, Any] = {"seat": s, "name": before.names[s]}
        if s < len(before.members) and before.members[s] is not None:  # a club's member
            seat["member"] = before.members[s]
        if before.bots[s] is not None:
            seat["bot"] = before.bots[s]
        seats.append(seat)
    doc: dict[str, Any] = {
        "format": FORMAT, "spec_version": SPEC_VERSION,
        "table": {"id": table_id, "variant": opts.variant, "scoring": opts.scoring,
                  "deal": opts.deal, "options": opts.to_dict(), "seats": seats},
        "hand": hand,
        "events": events_json(table_id, stored, datas),
    }
    if checkpoint is not None:
        doc["checkpoint"] = checkpoint
    if void_checkpoint is not None:
        doc["void_checkpoint"] = void_checkpoint
    return doc


def hand_events(stored: Sequence[Any], number: int) -> list[Any]:
    """Hand `number`'s events from a run of a table's events that starts at its deal: its own
    run (with the table-level events that fell in it, ev.ASIDE, so the hand's chain links),
    as the NDJSON export cuts it, and its hand_voided when it was voided later, after other
    hands (voided back to it: API.md "Corrections")."""
    run = list(stored[:own_run_length(stored, number)])
    return run + [s for s in stored[len(run):] if s.hand == number and s.type == "hand_voided"]


def in_run(s: Any, number: int, void: Any) -> bool:
    """Whether event `s` continues hand `number`'s run (its file's events in one run of
    versions): the hand's own events, the table-level asides that fall in it, and a close
    of the table that the hand's `void` (its hand_voided, None if it has none) follows, so
    the chain links from the hand to that void (a void at a closed table undoes the close:
    ledger/core/rules/table.py `void`; nothing but asides comes between)."""
    if s.hand == number:
        return s.type != "hand_started"
    return s.hand is None and (s.type in ev.ASIDE or s.type == "table_closed"
                               and void is not None and void.version > s.version)


def table_history(table_id: str, load: Callable[[int, int], Sequence[RawEvent]], up_to: int,
                  checkpoints: Sequence[dict[str, Any]] = (),
                  numbers: Callable[[int], bool] = lambda n: True,
                  voided: Collection[int] | None = None) -> Iterator[dict[str, Any]]:
    """One file per complete hand of a table, in order; `load(after, up_to)` reads events
    (the store's load_raw). `numbers` picks hands. `voided`: the numbers of the table's voided
    hands when the caller knows them (its folded state), else None: they are looked for."""
    return _files(table_id, load, up_to, checkpoints, numbers, encoded=False, voided=voided)


def table_history_ndjson(table_id: str, load: Callable[[int, int], Sequence[RawEvent]],
                         up_to: int, checkpoints: Sequence[dict[str, Any]] = (),
                         numbers: Callable[[int], bool] = lambda n: True,
                         voided: Collection[int] | None = None) -> Iterator[bytes]:
    """table_history's files as NDJSON lines, what the history endpoints and `loo export`
    write: each line orjson.dumps of the file (by encoding.dumps: integers beyond 64 bits
    too). Recurring events' data are encoded once per export (orjson.Fragment), so the same
    bytes come out with less work."""
    dumps, newline = encoding.dumps, orjson.OPT_APPEND_NEWLINE
    docs = _files(table_id, load, up_to, checkpoints, numbers, encoded=True, voided=voided)
    while True:
        # A hand's objects are acyclic. Never paused across a yield: the collector runs
        # between hands (it is process-wide; the store's loads pause it the same way).
        with gc_paused():
            doc = next(docs, None)
            if doc is None:
                return
            line = dumps(doc, option=newline)
            del doc  # freed here: the collection that follows finds little to look at
        yield line


def _late_voids(load: Callable[[int, int], Sequence[RawEvent]], up_to: int,
                voided: Collection[int] | None) -> dict[int, RawEvent]:
    """The hand_voided rows of the table by hand number (only those events are kept). A hand
    voided back to, after later hands were voided, has its hand_voided after their events,
    and its file must still carry it: one more read of the table, only when it has voids."""
    if voided is not None and not voided:
        return {}
    found: dict[int, RawEvent] = {}
    after = 0
    while after < up_to:
        page = load(after, min(after + PAGE, up_to))
        if not page:
            break
        found.update((s.hand, s) for s in page if s.type == "hand_voided" and s.hand)
        after = page[-1].version
    return found


def _files(table_id: str, load: Callable[[int, int], Sequence[RawEvent]], up_to: int,
           checkpoints: Sequence[dict[str, Any]], numbers: Callable[[int], bool],
           encoded: bool, voided: Collection[int] | None = None) -> Iterator[dict[str, Any]]:
    """table_history; `encoded`: recurring events' data as orjson Fragments.

    Only one hand's events and the folded table are held at a time (constant memory); each
    event is decoded once, its JSON parsed at most once; a hand is folded in one batch.
    A complete hand's file waits until the next complete hand's run ends: when the table's
    table_closed comes first, the file is its last complete hand's and carries `close`
    (close_part: the events since its run, held meanwhile: at most an abandoned hand's).
    """
    by_version = {cp["version"]: cp for cp in checkpoints}
    voids = _late_voids(load, up_to, voided)
    memo: dict[tuple[str, str], tuple[ev.Event, Any]] = {}
    t = tb.replay([])
    current: list[RawEvent] = []
    number = 0
    after = 0
    held: dict[str, Any] | None = None  # the last complete hand's file, not yet given out
    since: list[RawEvent] = []  # the events after its run
    while after < up_to:
        page = load(after, min(after + PAGE, up_to))
        if not page:
            break
        for s in page:
            if current and in_run(s, number, voids.get(number)):
                current.append(s)
                continue
            if current:  # the hand is over: its file, and the table after it
                done = complete(current)
                doc, t = _finish(table_id, t, current, by_version, numbers(number), memo,
                                 encoded, voids.get(number))
                if done:  # the file held is not the last complete hand's
                    if held is not None:
                        yield held
                    held, since = doc, []
                elif held is not None:
                    since += current  # an abandoned hand's run
                current = []
            e = ev.from_data(s.type, load_json(s.data))
            if isinstance(e, ev.HandStarted):
                current, number = [s], e.number
            else:
                t = tb.evolve(t, e)
                if held is not None:
                    since.append(s)
                    if isinstance(e, ev.TableClosed):
                        close = close_part(table_id, since, by_version,
                                           [load_json(x.data) for x in since])
                        if close is not None:
                            held["close"] = close
                        yield held
                        held, since = None, []
        after = page[-1].version
    if current:
        done = complete(current)
        doc, t = _finish(table_id, t, current, by_version, numbers(number), memo, encoded,
                         voids.get(number))
        if done:
            if held is not None:
                yield held
            held = doc
    if held is not None:
        yield held


# Events whose data recur across hands (a play is a seat, a tile, a trick and a suit; a
# hand's completion its trick counts and looes; a discard one or two tiles): decoded once per
# export and shared (events are frozen values), found by their stored JSON text. In 300
# hands: 300 completions are 96 distinct texts, 581 discards 256.
MEMO = 20_000  # decoded events kept per export at most
_RECURRING = frozenset({"tile_played", "player_decided", "stake_posted", "player_looed",
                        "turn_up_taken", "penalty_assessed", "trump_turned", "hand_completed",
                        "tiles_discarded"})


def _decode_raw(stored: Sequence[RawEvent], memo: dict[tuple[str, str], tuple[ev.Event, Any]],
                encoded: bool) -> tuple[list[ev.Event], list[Any]]:
    """Each event decoded, and its data as the file holds it: parsed, or when `encoded`
    for the _RECURRING types the Fragment of orjson's encoding of it (`memo`: by type and
    text, each event and Fragment made once)."""
    decoded: list[ev.Event] = []
    datas: list[Any] = []
    loads, from_data, fragment, dumps = load_json, ev.from_data, orjson.Fragment, encoding.dumps
    for s in stored:
        kind, text = s.type, s.data
        if kind in _RECURRING:
            key = (kind, text)
            hit = memo.get(key)
            if hit is None:
                data = loads(text)
                hit = (from_data(kind, data), fragment(dumps(data)))
                if len(memo) < MEMO:
                    memo[key] = hit
                decoded.append(hit[0])
                datas.append(hit[1] if encoded else data)
                continue
            decoded.append(hit[0])
            datas.append(hit[1] if encoded else loads(text))
        else:
            data = loads(text)
            decoded.append(from_data(kind, data))
            datas.append(data)
    return decoded, datas


# The table-level events: the table after a hand is their fold (the hand's moves change
# only its hand, which the next hand_started replaces).
_TABLE_LEVEL = frozenset(tb.EVOLVE)


def _finish(table_id: str, before: tb.Table, stored: list[RawEvent],
            checkpoints: dict[int, dict[str, Any]], wanted: bool,
            memo: dict[tuple[str, str], tuple[ev.Event, Any]], encoded: bool,
            late_void: RawEvent | None = None) -> tuple[dict[str, Any] | None, tb.Table]:
    """The hand's file (when wanted and complete) and the table after the hand's run.
    `late_void`: the hand's hand_voided when it came after other hands (the file carries
    it; the table meets it where it stands in the log)."""
    decoded, datas = _decode_raw(stored, memo, encoded)
    level = _TABLE_LEVEL
    after = tb.replay([e for e in decoded if type(e) in level], before)
    if not wanted or not complete(stored):
        return None, after
    if late_void is not None and late_void.version > stored[-1].version:
        more, more_datas = _decode_raw([late_void], memo, encoded)
        stored, decoded, datas = [*stored, late_void], [*decoded, *more], [*datas, *more_datas]
    settled, voided = heads(stored)
    return _document(table_id, before, stored, decoded, datas, checkpoints.get(settled),
                     checkpoints.get(voided) if voided is not None else None), after
