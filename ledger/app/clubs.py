"""Clubs in the application layer: load a club's stream, decide, append (one writer path,
like tables: expected_version, Idempotency-Key, commands deciding on the folded state)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ledger.app.projector import Projection, chip_ledger, decode, project, score_sheet
from ledger.app.service import Ledger, Listing, token_hash
from ledger.app.standings import WAIT, StandingsProjector, mixes_points, standings_rows
from ledger.core import club as cl
from ledger.core import commands as c
from ledger.core import events as ev
from ledger.core.errors import Invalid, NotFound
from ledger.core.rules.scoring import initial_scores
from ledger.store.base import (
    AlreadyApplied,
    Batch,
    IdempotencyConflict,
    IdempotentResult,
    NewEvent,
    VersionConflict,
)

PREFIX = "club_"
LATEST_RETRIES = 20  # writes without expected_version: decided again after a lost race


@dataclass(frozen=True)
class Loaded:
    id: str
    club: cl.Club
    version: int


class Clubs:
    """Every club operation the API (or the CLI) needs; the store stays behind it."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.store = ledger.store
        self.projector = StandingsProjector(ledger.store)

    # ---- ids and secrets -------------------------------------------------------------------
    def _derive(self, label: str, key: str | None) -> bytes:
        """Random bytes, or under an Idempotency-Key an HMAC of it under the deployment's
        secret: a repeat then finds the same ids and tokens (only their hashes are stored)."""
        if key is None:
            return secrets.token_bytes(32)
        return hmac.new(self.store.server_secret(), f"{label}|{key}".encode(),
                        hashlib.sha256).digest()

    def new_id(self, prefix: str, label: str, key: str | None) -> str:
        return prefix + self._derive(label, key)[:8].hex()

    def new_token(self, label: str, key: str | None) -> str:
        return base64.urlsafe_b64encode(self._derive("token|" + label, key)[:24]).decode()

    def new_salt(self, label: str, key: str | None) -> str:
        return self._derive(label, key)[:16].hex()

    # ---- webhooks (ledger/app/webhooks.py) -------------------------------------------------
    def webhook_secret(self, club_id: str, webhook_id: str, salt: str) -> str:
        from ledger.app.webhooks import endpoint_secret

        return endpoint_secret(self.store.server_secret(), club_id, webhook_id, salt)

    def webhook_deliveries(self, webhook_id: str, offset: int, limit: int,
                           ) -> list[dict[str, Any]]:
        return self.store.webhook_deliveries(webhook_id, offset, limit)

    # ---- reads -----------------------------------------------------------------------------
    def load(self, club_id: str, up_to_version: int | None = None) -> Loaded:
        """The club now, or as it was at `up_to_version` (the answer to an earlier write)."""
        stored = self.store.load(club_id, up_to_version=up_to_version) \
            if club_id.startswith(PREFIX) and "\x00" not in club_id else []
        if not stored or stored[0].type != "club_created":
            raise NotFound("club_not_found", f"no club {club_id!r}")
        return Loaded(club_id, cl.replay(decode(s) for s in stored), stored[-1].version)

    def role_of(self, c: cl.Club, token: str) -> str | None:
        """The role a bearer token has in the club, if it is one of its live tokens."""
        digest = token_hash(token)
        role = None
        for t in c.tokens:  # every one compared: timing reveals nothing
            if hmac.compare_digest(digest, t.token_hash) and not t.revoked:
                role = t.role
        return role

    # ---- writes ----------------------------------------------------------------------------
    def create(self, name: str, key: str | None, request_hash: str | None,
               ) -> tuple[Loaded, str]:
        club_id = self.new_id(PREFIX, "club", key)
        token = self.new_token(f"owner|{club_id}", key)
        owner_id = self.new_id("tok_", f"owner|{club_id}", key)
        if key is not None:
            found = self.store.idempotent_result(club_id, key)
            if found is not None:
                if found.request_hash != request_hash:
                    raise IdempotencyConflict(key)
                return self.load(club_id, found.last_version), token
        events = cl.create(name, owner_id, token_hash(token))
        try:
            self._append(club_id, events, 0, key, request_hash)
        except (AlreadyApplied, VersionConflict):
            found = self.store.idempotent_result(club_id, key) if key else None
            if found is None or found.request_hash != request_hash:
                raise IdempotencyConflict(key or "") from None
            return self.load(club_id, found.last_version), token
        return self.load(club_id, len(events)), token

    def execute(self, club_id: str, decide: Callable[[cl.Club], list[ev.Event]], *,
                expected_version: int | None = None, key: str | None = None,
                request_hash: str | None = None) -> Loaded:
        """Decide on the latest club and append; the club as this write left it.

        A repeated key appends nothing again and answers as the first request was answered
        (the club as that write left it, whatever was written since), also when the repeat
        ran concurrently with it. A write without expected_version asked for "now": one that
        loses a race with another writer is decided again on the newer club (bounded),
        never a version_conflict the client did not ask for."""
        for attempt in range(LATEST_RETRIES):
            loaded = self.load(club_id)
            if key is not None:
                found = self.store.idempotent_result(club_id, key)
                if found is not None:
                    return self._first_answer(club_id, found, request_hash)
            if expected_version is not None and expected_version != loaded.version:
                raise VersionConflict(club_id, expected_version, loaded.version)
            events = decide(loaded.club)
            if not events and key is None:
                return loaded
            try:
                # Nothing to append under a key still keeps the key (at this version): a
                # repeat answers as this one, another request with it is a 409.
                self._append(club_id, events, loaded.version, key, request_hash)
            except AlreadyApplied as err:  # a concurrent request with this key won
                return self._first_answer(club_id, err.result, request_hash)
            except VersionConflict:
                if expected_version is not None or attempt == LATEST_RETRIES - 1:
                    raise
                continue
            return self.load(club_id, loaded.version + len(events))
        raise AssertionError("unreachable")  # the loop returns or raises

    def _first_answer(self, club_id: str, found: IdempotentResult,
                      request_hash: str | None) -> Loaded:
        if found.request_hash != request_hash:
            raise IdempotencyConflict(found.key)
        return self.load(club_id, found.last_version)

    def _append(self, club_id: str, events: list[ev.Event], version: int, key: str | None,
                request_hash: str | None) -> None:
        cause = f"command:{uuid.uuid4().hex}"
        self.store.append(club_id, [NewEvent(type=e.type, hand=None, data=ev.to_data(e),
                                             causation=cause) for e in events],
                          version, idempotency_key=key, request_hash=request_hash)
        if events:
            self.ledger.committed(club_id)

    # ---- club tables (API.md Club tables and seasons) ---------------------------------------
    def create_table(self, club_id: str, cmd: c.CreateTable, *, expected_version: int | None,
                     key: str | None, request_hash: str | None,
                     ) -> tuple[str, dict[str, Any], Projection]:
        """A club table (its season open, its members the club's): its events and its listing
        in the club's stream (club_table_added) commit in one transaction, the listing at
        the club's version the checks were made on, so `expected_version` holds for the
        whole write: of two creates sent with the same one, one is a 409 and creates
        nothing. Without it a listing that loses a race is decided again on the newer club
        (bounded). A repeat under the key answers as the first (whatever the club's version
        now, or its seasons and members)."""
        return self._listed(club_id, expected_version, key,
                            lambda club: cl.check_table(club, cmd.season, cmd.members),
                            lambda listed: self.ledger.create_table(
                                cmd, idempotency_key=key, request_hash=request_hash,
                                listed=listed))

    def import_table(self, club_id: str, the_plan: Any, *, expected_version: int | None,
                     key: str | None, request_hash: str | None,
                     ) -> tuple[str, dict[str, Any], Projection]:
        """An imported table (ledger/app/imports.py) listed in the club as `create_table`
        lists a new one; the members the file seats are checked as at a creation."""
        return self._listed(club_id, expected_version, key,
                            lambda club: imported_members(club, the_plan.members),
                            lambda listed: self.ledger.import_table(
                                the_plan, key, request_hash, listed=listed))

    def _listed(self, club_id: str, expected_version: int | None, key: str | None,
                check: Callable[[cl.Club], None],
                create: Callable[[Listing], tuple[str, dict[str, Any], Projection]],
                ) -> tuple[str, dict[str, Any], Projection]:
        """`create` a table with its listing at the club's version its `check` passed on;
        answered as `create_table` says (a stale expected_version is a 409 unless the
        request repeats one under its key)."""
        for attempt in range(LATEST_RETRIES):
            loaded = self.load(club_id)
            repeat = key is not None and self.store.idempotent_result(
                self.ledger.keyed_table_id(key), key) is not None
            if not repeat:  # (a repeat answers as the first did)
                if expected_version is not None and expected_version != loaded.version:
                    raise VersionConflict(club_id, expected_version, loaded.version)
                check(loaded.club)
            try:
                table_id, tokens, p = create(lambda tid, p, at=loaded: self._listing(at, tid, p))
            except VersionConflict as err:
                if err.table_id != club_id:
                    raise
                if key is not None and self.store.idempotent_result(
                        self.ledger.keyed_table_id(key), key) is not None:
                    continue  # a concurrent request with the key created it: answer as it
                if expected_version is not None or attempt == LATEST_RETRIES - 1:
                    raise
                continue
            if repeat and not any(t.table_id == table_id for t in loaded.club.tables):
                # Created before a table and its listing committed together, and cut off
                # between the two: the repeat completes the listing.
                self.link_table(club_id, table_id, p.table.season, p.table.members,
                                p.table.opts.variant, p.table.opts.scoring)
            return table_id, tokens, p
        raise AssertionError("unreachable")  # the loop returns or raises

    def _listing(self, loaded: Loaded, table_id: str, p: Projection) -> Batch:
        """The club's club_table_added for a new table, at the club's version `loaded`."""
        e = ev.ClubTableAdded(table_id=table_id, season=p.table.season,
                              members=p.table.members, variant=p.table.opts.variant,
                              scoring=p.table.opts.scoring,
                              created_at=datetime.now(UTC).isoformat())
        events = cl.add_table(loaded.club, e)
        cause = f"command:{uuid.uuid4().hex}"
        return Batch(loaded.id, [NewEvent(type=x.type, hand=None, data=ev.to_data(x),
                                          causation=cause) for x in events], loaded.version)

    def link_table(self, club_id: str, table_id: str, season: str | None,
                   members: tuple[str | None, ...], variant: str, scoring: str) -> None:
        """Record a club table in the club's stream after its events (retried on a
        concurrent write): what completes a table created before a table and its listing
        committed together (`create_table`) and cut off between the two."""
        e = ev.ClubTableAdded(table_id=table_id, season=season, members=members,
                              variant=variant, scoring=scoring,
                              created_at=datetime.now(UTC).isoformat())
        for _ in range(20):
            loaded = self.load(club_id)
            if any(t.table_id == table_id for t in loaded.club.tables):
                return
            try:
                self._append(club_id, cl.add_table(loaded.club, e), loaded.version, None, None)
                return
            except VersionConflict:
                continue
        raise VersionConflict(club_id, loaded.version, loaded.version + 1)

    # ---- standings (API.md Standings) ------------------------------------------------------
    def _tables(self, loaded: Loaded, season: str | None, variant: str | None,
                scoring: str | None) -> list[ev.ClubTableAdded]:
        return [t for t in loaded.club.tables
                if (season is None or t.season == season)
                and (variant is None or t.variant == variant)
                and (scoring is None or t.scoring == scoring)]

    def _kinds(self, loaded: Loaded, season: str | None, variant: str | None,
               scoring: str | None) -> set[tuple[str, str]]:
        """The (variant, scoring) of the view's tables: whether it mixes Loo for points and
        Rounce (ledger/app/standings.py `mixes_points`) is theirs, whoever sat there."""
        return {(t.variant, t.scoring) for t in self._tables(loaded, season, variant, scoring)}

    def standings(self, loaded: Loaded, season: str | None = None, variant: str | None = None,
                  scoring: str | None = None) -> dict[str, Any]:
        """One row per active member and per archived member who sat at a matching table
        (a member who did not has zeros), from the standings read model
        (ledger/app/standings.py), caught up to the latest event first. A season that is not
        the club's is a 422 (unknown_season), never an empty table. `mixed_points`: the
        view's tables include Loo for points and Rounce, whose points count up (`points` is
        then higher-is-better across a row: ledger/app/standings.py `mixes_points`)."""
        if season is not None:
            cl.known_season(loaded.club, season)
        as_of, rows = self.projector.rows(loaded.id)
        names = {m.id: m.name for m in loaded.club.members}
        kinds = self._kinds(loaded, season, variant, scoring)
        return {"as_of": as_of, "mixed_points": mixes_points(kinds),
                "rows": standings_rows(rows, names, season, variant, scoring, kinds,
                                       active(loaded.club))}

    def standings_by_scan(self, loaded: Loaded, season: str | None = None,
                          variant: str | None = None, scoring: str | None = None,
                          ) -> dict[str, Any]:
        """The same rows folded from every matching table (the read model's oracle in the
        tests; a scan of every table, never used to answer a request)."""
        rows = []
        for link in self._tables(loaded, season, variant, scoring):
            stored = self.store.load(link.table_id)
            if not stored:
                continue
            figures = table_figures(stored)
            for seat, mid in enumerate(link.members):
                if mid is not None:
                    rows.append({"member": mid, "season": link.season,
                                 "variant": link.variant, "scoring": link.scoring,
                                 "tables": 1} | figures[seat])
        names = {m.id: m.name for m in loaded.club.members}
        kinds = self._kinds(loaded, season, variant, scoring)
        return {"rows": standings_rows(rows, names, season, variant, scoring, kinds,
                                       active(loaded.club))}

    def member_ledger(self, loaded: Loaded, mid: str, season: str | None = None,
                      variant: str | None = None, scoring: str | None = None,
                      ) -> dict[str, Any]:
        """The transfers and scores behind a member's standings row in the same view (the
        same filters), each naming its event (a season that is not the club's: 422
        unknown_season). Each score and start says what it `counted` toward the row's
        points: itself, or in a view mixing Loo for points and Rounce, for a Rounce table,
        its opposite (a start counts 0: target minus score is minus the deltas).

        `items`: the same starts, transfers and scores as one list (each with its `kind`),
        in the order they came into the member's ledger, which only appends (API.md Lists:
        paged by an offset, a page boundary must not move; cut at `committed_through`, so
        no entry can still come before one listed): by the global position of the
        event that caused the entry, or, for a table the club's stream listed after its
        events (created before the two committed together), by the position of that
        listing (club_table_added), when the entry became the member's; then by table
        version (a start, version 0, first), a
        transfer before a score of the same event (a void gives back both), and the order
        the event gives them in."""
        loaded.club.member(mid)
        if season is not None:
            cl.known_season(loaded.club, season)
        mixed = mixes_points(self._kinds(loaded, season, variant, scoring))
        transfers: list[dict[str, Any]] = []
        scores: list[dict[str, Any]] = []
        starts: list[dict[str, Any]] = []  # a points table's starting score (Rounce: 15)
        entries: list[tuple[tuple[int, int, int, int], dict[str, Any]]] = []
        links = self._tables(loaded, season, variant, scoring)
        linked = self._linked_at(loaded) if any(mid in t.members for t in links) else {}
        horizon = self.committed_through() if linked else 0
        for link in links:
            up = mixed and link.variant == "rounce"  # counted from the target down
            if mid not in link.members:
                continue
            seat = link.members.index(mid)
            account = f"seat:{seat}"
            stored = self.store.load(link.table_id)
            since = linked.get(link.table_id, 0)
            at = {s.version: max(s.position, since) for s in stored}
            p = project(stored)
            book = chip_ledger(stored, p.table.players)
            for i, x in enumerate(book["transfers"]):
                if account in (x["from"], x["to"]) and at[x["version"]] <= horizon:
                    transfers.append({"table": link.table_id, "seat": seat, **x})
                    entries.append(((at[x["version"]], x["version"], 0, i),
                                    {"kind": "transfer"} | transfers[-1]))
            sheet = score_sheet(stored, p.table)
            for i, x in enumerate(sheet["scores"]):
                if x["seat"] == seat and at[x["version"]] <= horizon:
                    scores.append({"table": link.table_id, **x,
                                   "counted": -x["delta"] if up else x["delta"]})
                    entries.append(((at[x["version"]], x["version"], 1, i),
                                    {"kind": "score"} | scores[-1]))
            if link.scoring == "points" and at[stored[0].version] <= horizon:
                # (the standings' points count the start, so must a sum)
                start = sheet["start"][account]
                starts.append({"table": link.table_id, "seat": seat, "points": start,
                               "counted": 0 if up else start})
                entries.append(((at[stored[0].version], 0, 0, 0), {"kind": "start"} | starts[-1]))
        entries.sort(key=lambda entry: entry[0])
        return {"member": mid, "mixed_points": mixed, "transfers": transfers,
                "scores": scores, "starts": starts, "items": [item for _, item in entries]}

    def committed_through(self, wait: float | None = None) -> int:
        """The position up to which every event has committed: none that commits later has
        a position at or below it (PostgreSQL gives positions by transaction id, so one
        still open can commit an event below others committed already; `last_position` is
        read_all's high-water mark, ledger/store/postgres.py `_MARK`). A member's ledger is
        cut there, so a page never lists an entry before which another can still appear.
        Waits (polling, up to `wait` s) until it reaches the events committed before the
        call, as the standings do: a scorer sees the hand just entered."""
        head = self.store.head_position()
        deadline = time.monotonic() + (WAIT if wait is None else wait)
        while (mark := self.store.last_position()) < head and time.monotonic() < deadline:
            time.sleep(0.005)
        return mark

    def _linked_at(self, loaded: Loaded) -> dict[str, int]:
        """Each club table's id: the global position at which the club's stream listed it."""
        return {s.data["table_id"]: s.position
                for s in self.store.load(loaded.id, up_to_version=loaded.version)
                if s.type == "club_table_added"}


def active(club: cl.Club) -> list[str]:
    """The club's members not archived: each has a standings row, played or not."""
    return [m.id for m in club.members if not m.archived]


def imported_members(club: cl.Club, members: tuple[str | None, ...]) -> None:
    """The members an imported file seats are this club's, live, one seat each, as at a club
    table's creation (the same 422 codes), checked before anything is created."""
    try:
        cl.check_table(club, None, members)
    except Invalid as err:
        raise Invalid(err.code, f"{err.detail}: a seat of the file (table.seats[].member) "
                      "links this member; import it into the member's club, or remove the "
                      "seat's member to import the seat unlinked",
                      field="table.seats") from None


_FIGURE_EVENTS = frozenset({"hand_settled", "hand_completed", "penalty_assessed"})


def table_figures(stored: list[Any]) -> list[dict[str, int]]:
    """Per seat: hands, chips, points, games_won, tricks, loos, looed_chips (voided hands
    count for nothing: their chips and points were given back), and start (the score a
    points seat started from)."""

    p = project(stored)
    t = p.table
    voided = set(t.voided)
    n = t.players
    out = [{"hands": 0, "chips": t.balances[s], "points": 0, "games_won": 0, "tricks": 0,
            "loos": 0, "looed_chips": 0, "start": 0} for s in range(n)]
    for s in stored:
        if s.hand in voided or s.type not in _FIGURE_EVENTS:
            continue
        e = decode(s)
        if isinstance(e, ev.HandSettled):
            for seat in range(n):
                out[seat]["hands"] += 1
        elif isinstance(e, ev.HandCompleted):
            for seat, won in enumerate(e.tricks_won):
                out[seat]["tricks"] += won
            for seat in e.looed:  # RULES 7: at any scoring, not only a pool's player_looed
                out[seat]["loos"] += 1
        elif isinstance(e, ev.PenaltyAssessed):
            out[e.seat]["looed_chips"] += e.amount
    if t.opts.scoring == "points":
        start = initial_scores(t.opts)
        for seat in range(n):
            out[seat]["points"] = t.scores[seat]
            out[seat]["start"] = start[seat]
    if t.winner is not None:  # a won game stays won when its table is closed afterwards
        out[t.winner]["games_won"] += 1
    return out
