"""Club standings as a read model: folded event by event from the global position.

The projector reads `read_all(after=its position)` in batches and keeps, in the store's
read-model rows, one row per club table seat with a member (scope: the club id, key:
`table:seat`) and one bookkeeping row per club table (scope `tables`). Each batch's rows and
the new position are saved together, compare-and-set on the old position: a process that
dies mid-batch saves nothing, two processes catching up at once never count an event
twice, and a restarted service carries on from the saved position. A standings request
catches up (usually a few events) and sums the club's rows: no table is folded per request.

Every figure moves by the events themselves (what `table_figures` in ledger/app/clubs.py
derives from a whole table, the property tests check that the two agree):
stakes, trick payments and penalties move chips; points are the scores' totals;
`hand_voided` gives back the voided hand's chips (its compensating transfers), points
(its totals), hands, tricks, loos and looed chips (kept per hand for the last hands a
correction may reach) and un-wins its game. Each row also keeps `start`, the score its
seats started from (Rounce: the table's target), which a view mixing Loo for points and
Rounce needs (`standings_rows`); it is not a figure of the answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from ledger.app.projector import decode
from ledger.core import events as ev
from ledger.core.rules.options import make_options
from ledger.core.rules.scoring import initial_scores
from ledger.core.rules.table import VOIDABLE
from ledger.store.base import EventStore, StoredEvent

# The model's name: a new one when the fold changes (.2: loos of points and Rounce games;
# .3: `start`, the starting score, for views mixing Loo for points and Rounce), so a
# deployment's model is folded again from the first event, never half old, half new.
NAME = "standings.3"
TABLES = "tables"  # the scope of the per-table bookkeeping rows
AGG = "#members"  # club id + this: the scope of the rows a read sums (member x season ...)
BATCH = 2000
WAIT = 2.0  # seconds a read waits for events committed before it to become readable
FIGURES = ("hands", "chips", "points", "games_won", "tricks", "loos", "looed_chips")
FOLDED = (*FIGURES, "start")  # what a row keeps: the figures and the starting score
_PER_HAND = ("tricks", "loos", "looed_chips")
_EVENTS = frozenset({"seat_filled", "stake_posted", "tricks_paid", "penalty_assessed",
                     "hand_completed", "points_scored", "hand_settled", "game_won",
                     "hand_voided"})


def _seat(account: str) -> int | None:
    return int(account[5:]) if account.startswith("seat:") else None


class StandingsProjector:
    """Keeps the `standings` read model up to date; `rows(club)` reads it."""

    def __init__(self, store: EventStore, name: str = NAME, batch: int = BATCH) -> None:
        self.store, self.name, self.batch = store, name, batch

    # ---- reads -----------------------------------------------------------------------------
    def rows(self, club_id: str) -> tuple[int, list[dict[str, Any]]]:
        """(position folded up to, the club's rows: one per member and season, game and
        scoring, summed over its tables), caught up with every event committed before the
        call (read your writes: a scorer who has just voided a hand sees the standings
        without it). A read is as long as the club has members, not tables."""
        position = self.catch_up_to(self.store.head_position())
        return position, list(self.store.read_model_rows(self.name, club_id + AGG).values())

    def catch_up_to(self, head: int, wait: float = WAIT) -> int:
        """Catch up until `head` is folded in. On PostgreSQL `read_all` holds back events
        above the oldest open transaction (it must never skip one): wait for them, polling
        with a deadline; past it, answer from where the model got."""
        deadline = time.monotonic() + wait
        while (position := self.catch_up()) < head and time.monotonic() < deadline:
            time.sleep(0.005)
        return position

    # ---- folding ---------------------------------------------------------------------------
    def catch_up(self) -> int:
        """Fold every event after the saved position; returns the position reached."""
        while True:
            position = self.store.read_model_position(self.name)
            stored = self.store.read_all(position, self.batch)
            if not stored:
                return position
            rows = self._fold(stored)
            # Lost the race to another projector: it saved these events; read its position.
            self.store.save_read_model(self.name, position, stored[-1].position, rows)

    def rebuild(self) -> int:
        """Forget the model and fold every event again from the first."""
        self.store.reset_read_model(self.name)
        return self.catch_up()

    def _fold(self, stored: Iterable[StoredEvent]) -> dict[tuple[str, str], dict[str, Any]]:
        stored = [s for s in stored if not s.table_id.startswith("club_")]
        ids = sorted({s.table_id for s in stored})
        metas = self.store.read_model_rows(self.name, TABLES, ids) if ids else {}
        for s in stored:  # new club tables in this batch
            if s.type != "table_created":
                continue
            created = decode(s)
            assert isinstance(created, ev.TableCreated)
            if created.club:
                opts = make_options(created.variant, created.scoring, created.players,
                                    created.options, created.deal)
                metas[s.table_id] = {"club": created.club, "season": created.season,
                                     "variant": created.variant, "scoring": created.scoring,
                                     "players": created.players, "winner": None,
                                     "recent": {}, "start": list(initial_scores(opts))}
        by_club: dict[str, set[str]] = {}
        for tid, meta in metas.items():
            by_club.setdefault(meta["club"], set()).update(
                f"{tid}:{seat}" for seat in range(meta["players"]))
        seats: dict[tuple[str, str], dict[str, Any]] = {}
        for club, keys in by_club.items():
            for key, row in self.store.read_model_rows(self.name, club, sorted(keys)).items():
                seats[(club, key)] = row
            for key, row in self.store.read_model_rows(self.name, club + AGG).items():
                seats[(club + AGG, key)] = row
        touched: set[str] = set()
        for s in stored:
            meta = metas.get(s.table_id)
            if meta is None:
                continue  # not a club table
            touched.add(s.table_id)
            self._apply(s, meta, seats)
        out: dict[tuple[str, str], dict[str, Any]] = {
            (TABLES, tid): metas[tid] for tid in touched}
        out.update(seats)
        return out

    def _apply(self, s: StoredEvent, meta: dict[str, Any],
               seats: dict[tuple[str, str], dict[str, Any]]) -> None:
        club, tid, n = meta["club"], s.table_id, meta["players"]

        def row(seat: int) -> dict[str, Any] | None:
            return seats.get((club, f"{tid}:{seat}"))

        def total_of(r: dict[str, Any]) -> dict[str, Any]:
            """The member's row for the table's season, game and scoring (what is read)."""
            key = f"{meta['season'] or ''}|{meta['variant']}|{meta['scoring']}|{r['member']}"
            return seats.setdefault((club + AGG, key), {
                "member": r["member"], "season": meta["season"], "variant": meta["variant"],
                "scoring": meta["scoring"], "tables": 0} | dict.fromkeys(FOLDED, 0))

        def add(seat: int | None, figure: str, amount: int) -> None:
            r = row(seat) if seat is not None else None
            if r is not None:
                r[figure] += amount
                total_of(r)[figure] += amount

        def totals(scores: tuple[int, ...]) -> None:
            for seat, total in enumerate(scores):
                r = row(seat)
                if r is not None:
                    add(seat, "points", total - r["points"])

        def recent() -> dict[str, Any]:
            return meta["recent"].setdefault(str(s.hand), {f: [0] * n for f in _PER_HAND})

        if s.type not in _EVENTS:
            return
        e = decode(s)
        if isinstance(e, ev.SeatFilled):
            if e.member:
                seats[(club, f"{tid}:{e.seat}")] = {
                    "table": tid, "seat": e.seat, "member": e.member,
                    "season": meta["season"], "variant": meta["variant"],
                    "scoring": meta["scoring"]} | dict.fromkeys(FOLDED, 0)
                total_of(seats[(club, f"{tid}:{e.seat}")])["tables"] += 1
                if meta["scoring"] == "points":
                    add(e.seat, "points", meta["start"][e.seat])
                    add(e.seat, "start", meta["start"][e.seat])
        elif isinstance(e, ev.StakePosted):
            add(e.seat, "chips", -e.amount)
        elif isinstance(e, ev.TricksPaid):
            for seat, amount in enumerate(e.payments):
                add(seat, "chips", amount)
        elif isinstance(e, ev.PenaltyAssessed):
            add(e.seat, "chips", -e.amount)
            add(e.seat, "looed_chips", e.amount)
            recent()["looed_chips"][e.seat] += e.amount
        elif isinstance(e, ev.HandCompleted):
            for seat, won in enumerate(e.tricks_won):
                add(seat, "tricks", won)
                recent()["tricks"][seat] += won
            # RULES 7: looed is stayed in and won no trick, whatever the scoring (a pool
            # game's player_looed, a points game's -5, Rounce's rounced +5): the hand says who.
            for seat in e.looed:
                add(seat, "loos", 1)
                recent()["loos"][seat] += 1
        elif isinstance(e, ev.PointsScored) and meta["scoring"] == "points":
            totals(e.totals)
        elif isinstance(e, ev.HandSettled):
            for seat in range(n):
                add(seat, "hands", 1)
            hands = meta["recent"]
            hands.setdefault(str(s.hand), {f: [0] * n for f in _PER_HAND})
            for old in sorted(hands, key=int)[:-VOIDABLE]:  # past a correction's reach
                del hands[old]
        elif isinstance(e, ev.GameWon) and e.seat is not None:
            add(e.seat, "games_won", 1)
            meta["winner"] = e.seat
        elif isinstance(e, ev.HandVoided):
            for src, dst, amount in e.transfers:
                add(_seat(src), "chips", -amount)
                add(_seat(dst), "chips", amount)
            if meta["scoring"] == "points":
                totals(e.totals)
            given = meta["recent"].pop(str(e.number), {f: [0] * n for f in _PER_HAND})
            for seat in range(n):
                add(seat, "hands", -1)
                for f in _PER_HAND:
                    add(seat, f, -given[f][seat])
            if e.unwon and meta["winner"] is not None:
                add(meta["winner"], "games_won", -1)
                meta["winner"] = None


def mixes_points(kinds: Iterable[tuple[str, str]]) -> bool:
    """Whether a view whose tables are of these (variant, scoring) kinds holds points of
    both directions (RULES §9): Loo for points counts up from 0 and the highest wins,
    Rounce counts down from its target and the lowest wins. In such a view each Rounce
    table's points count in Loo's direction, as its target minus its score: the points made
    toward winning (+1 a trick, -5 rounced, as Loo's -5 looed), so `points` is "higher is
    better" across a row that sums both. The member ledger counts its entries alike."""
    return {v for v, s in kinds if s == "points"} == {"loo", "rounce"}


def counted_points(row: dict[str, Any], mixed: bool) -> int:
    """A row's points as a view counts them: a Rounce row in a mixed view (`mixes_points`)
    from its start (the target) down to its score; otherwise its score."""
    if mixed and row["variant"] == "rounce":
        return int(row["start"] - row["points"])
    return int(row["points"])


def standings_rows(rows: Iterable[dict[str, Any]], names: dict[str, str],
                   season: str | None, variant: str | None, scoring: str | None,
                   kinds: Iterable[tuple[str, str]] | None = None,
                   everyone: Iterable[str] = (),
                   ) -> list[dict[str, Any]]:
    """The league table from seat rows: one row per member, ranked (API.md Standings): by
    chips, or by games won then points where the view is points scoring (?scoring=points, or
    no ?scoring= and every table of the view counts points).
    `kinds`: the (variant, scoring) of every table of the view, which decide how its points
    count (`mixes_points`); by default those of the rows. `everyone`: the members listed
    whether or not they played in the view (the club's active members): one who did not
    has a row of zeros, ranked by them as any row is, except in a view of Rounce tables
    only, where the fewest points rank first: there a member with no table ranks after
    every member who has one (0 points is no score, not the best)."""
    out: dict[str, dict[str, Any]] = {}
    rows = [r for r in rows
            if (season is None or r["season"] == season)
            and (variant is None or r["variant"] == variant)
            and (scoring is None or r["scoring"] == scoring)]
    kinds = {(r["variant"], r["scoring"]) for r in rows} if kinds is None else set(kinds)
    mixed = mixes_points(kinds)
    if scoring is None and kinds and {s for _, s in kinds} == {"points"}:
        # Every table of the view counts points (Rounce always does): that is points
        # scoring, ranked as ?scoring=points ranks it, not by chips that no table moved.
        scoring = "points"
    for mid in everyone:
        out[mid] = {"member": mid, "tables": 0} | dict.fromkeys(FIGURES, 0)
    for r in rows:
        m = out.setdefault(r["member"], {"member": r["member"], "tables": 0}
                           | dict.fromkeys(FIGURES, 0))
        m["tables"] += r["tables"]
        for f in FIGURES:
            m[f] += counted_points(r, mixed) if f == "points" else r[f]
    ranked = [r | {"name": names.get(r["member"], "")} for r in out.values()]
    if scoring == "points":
        # RULES §9: Loo for points, the highest score wins; Rounce counts down, the lowest
        # (a view of Rounce tables only); a view of both counts Rounce up (`mixes_points`).
        rounce = {v for v, s in kinds if s == "points"} == {"rounce"}
        sign = 1 if rounce else -1

        def standing(r: dict[str, Any]) -> tuple[int, ...]:
            unplayed = int(rounce and r["tables"] == 0)  # no score: after those with one
            return (-r["games_won"], unplayed, sign * r["points"])
    else:
        def standing(r: dict[str, Any]) -> tuple[int, ...]:
            return (-r["chips"],)
    # Within a tie, by name then member id: a stable order that ranks nobody above another.
    ranked.sort(key=lambda r: (standing(r), r["name"], r["member"]))
    return competition_ranks(ranked, standing)


def competition_ranks(ordered: list[dict[str, Any]],
                      standing: Callable[[dict[str, Any]], tuple[int, ...]],
                      ) -> list[dict[str, Any]]:
    """Standard competition ranking ("1224"): rows whose sort key (API.md Standings: chips;
    games_won then points) is equal share the better rank, and the next row's rank counts
    every row above it."""
    previous: tuple[int, ...] | None = None
    rank = 0
    for i, r in enumerate(ordered, 1):
        key = standing(r)
        if key != previous:
            rank, previous = i, key
        r["rank"] = rank
    return ordered
