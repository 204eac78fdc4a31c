"""The one path for every writer: load -> fold -> handler -> append -> project -> follow-ups."""

from __future__ import annotations

import base64
import hashlib
import hmac
import itertools
import logging
import os
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ledger.app import handlers
from ledger.app.checkpoints import Signer, signed_heads
from ledger.app.dispatch import Dispatcher
from ledger.app.projector import BOOK_EVENTS, Projection, fold, project, table_book
from ledger.core import commands as c
from ledger.core import events as ev
from ledger.core.errors import Invalid, NotFound
from ledger.core.ids import unique_hex
from ledger.core.rules import table as tb
from ledger.store.base import (
    AlreadyApplied,
    Batch,
    EventStore,
    IdempotencyConflict,
    IdempotentResult,
    NewCheckpoints,
    NewEvent,
    RawEvent,
    StoredEvent,
    VersionConflict,
)

JOB_ADVANCE = "workers.jobs.advance"
JOB_TIME_OUT = "workers.jobs.time_out"
TIMER_SLACK = 0.05  # seconds: a timer that fires this early (clock granularity) still acts
# A timer run at most this early (the rq scheduler's host clock ahead of the job's) waits for
# its time in the job: rescheduled, a run early again would meet its own id still running.
TIMER_WAIT = 2.0
MAX_STEPS = 400  # follow-ups run at once; a longer all-bot run goes on in a fresh job
# At a table with a slow bot (the expert thinks up to 200 ms a move) a run of follow-ups
# stops after this long and goes on in a fresh job: in the embedded default, on the timer
# thread, so an all-expert table does not hold the request that created it for minutes.
SLOW_RUN_SECONDS = 2.0

log = logging.getLogger(__name__)

# Events that follow by rule from the event just before them; settlement follows the
# hand_completed event.
_FROM_PREVIOUS = (ev.TrickWon, ev.HandCompleted, ev.SeedRevealed, ev.PenaltyAssessed)
_FROM_COMPLETION = (ev.TricksPaid, ev.PlayerLooed, ev.PointsScored, ev.HandSettled, ev.GameWon)
_TABLE_LEVEL = (ev.TableCreated, ev.SeatFilled, ev.DealerChosen, ev.TableClosed,
                ev.SpectatorAdded, ev.SpectatorRevoked)


# A new table's listing in another stream (a club's), committed with the table: the batch
# to append before the table's, given the table's id and state after its events.
Listing = Callable[[str, Projection], Batch]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a command appended, and the table after it."""

    first_version: int
    stored: list[StoredEvent]
    projection: Projection


def _unix(recorded_at: str) -> float:
    """An event's recorded_at (ISO 8601, UTC) as Unix seconds."""
    return datetime.fromisoformat(recorded_at).timestamp()


def _follows_by_itself(prev: StoredEvent, s: StoredEvent, t: tb.Table) -> bool:
    """Whether `s` was appended by the service itself after `prev`, not by a client's write
    (the causations `_envelopes` gives; the auto-deal of `handlers.settle`)."""
    cause = s.causation or ""
    if cause.startswith(("bot:", "event:")):
        return True  # a bot's move; what a rule makes follow (tricks, settlement)
    if cause.startswith("command:") and cause == prev.causation:
        return True  # the rest of the batch `prev` belongs to
    # With auto_deal the settlement deals the next hand in the same batch (handlers.settle).
    return (s.type == "hand_started" and prev.type == "hand_settled"
            and t.opts.deal == "shuffled" and t.opts.auto_deal)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _mac(secret: bytes, label: str) -> bytes:
    return hmac.new(secret, label.encode(), hashlib.sha256).digest()


def _derived_tokens(root: bytes, seats: int) -> dict[str, Any]:
    def derive(label: str) -> str:
        mac = hmac.new(root, label.encode(), hashlib.sha256).digest()[:24]
        return base64.urlsafe_b64encode(mac).decode().rstrip("=")

    return {"admin": derive("admin"), "seats": [derive(f"seat:{i}") for i in range(seats)]}


class Ledger:
    """Application service shared by the API, the workers, the CLI and the tests."""

    def __init__(self, store: EventStore, dispatcher: Dispatcher | None = None,
                 seeds: Callable[[], bytes] = lambda: os.urandom(32),
                 signer: Signer | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock  # Unix seconds: when turn timers fall due (tests inject one)
        # Without a configured key (unit tests) checkpoints are signed with a key of this run.
        self.signer = signer or Signer.generate()
        self.dispatcher = dispatcher
        self.seeds = seeds
        self._cache: dict[str, Projection] = {}
        self._lock = threading.Lock()
        # Called with a club's id after anything of that club commits (its webhooks).
        self.on_club_commit: Callable[[str], None] | None = None

    def committed(self, club_id: str | None) -> None:
        """Tell whoever follows the club (webhook delivery) that it has new events."""
        if club_id is not None and self.on_club_commit is not None:
            try:
                self.on_club_commit(club_id)
            except Exception:  # the write has committed; the sweep delivers later
                log.exception("webhook trigger for %s failed", club_id)

    @property
    def queued(self) -> bool:
        """Whether a worker runs the follow-up jobs later (RQ), not this process at once."""
        return self.dispatcher is not None and self.dispatcher.mode == "queued"

    # ---- reads ----------------------------------------------------------------------------
    def load(self, table_id: str) -> Projection:
        """The table folded to its latest version (incrementally, from a per-process cache)."""
        base = self._cache.get(table_id)
        # No id holds a NUL (PostgreSQL cannot even be asked for one): such a table is unknown.
        stored = self.store.load(table_id, after_version=base.version if base else 0) \
            if "\x00" not in table_id else []
        if base is None and (not stored or stored[0].type != "table_created"):
            raise NotFound("table_not_found", f"no table {table_id!r}")
        p = project(stored, base) if stored else base
        assert p is not None
        self._remember(table_id, p)
        return p

    def events(self, table_id: str, after_version: int = 0,
               up_to_version: int | None = None) -> list[StoredEvent]:
        """The table's stored events after_version < version <= up_to_version, in order."""
        return self.store.load(table_id, after_version, up_to_version)

    def book(self, table_id: str, p: Projection, hand: int | None = None) -> dict[str, Any]:
        """The table's ledger as `p` has it (GET .../ledger; projector.table_book), read from
        the events that move chips or points only (BOOK_EVENTS: on a long Loo table about
        one event in nine). `hand`: one hand's, which must have been played (422)."""
        if hand is not None:
            latest = p.table.hand.number if p.table.hand is not None else 0
            if not 1 <= hand <= latest:
                played = f"hands 1 to {latest} have" if latest > 1 else (
                    "hand 1 has" if latest else "no hand has")
                raise Invalid("invalid_filter", f"hand: {hand} is not a hand of this table "
                              f"({played} been played)", field="hand")
        return table_book(self.store.load_types(table_id, BOOK_EVENTS, p.version), p.table,
                          hand)

    def raw_events(self, table_id: str, after_version: int = 0,
                   up_to_version: int | None = None) -> list[RawEvent]:
        """`events` as rows, each one's data its stored JSON text (store.load_raw)."""
        return self.store.load_raw(table_id, after_version, up_to_version)

    def version(self, table_id: str) -> int:
        return self.store.version(table_id)

    def stream_events(self, streams: Collection[str], after_position: int = 0,
                      limit: int = 1000) -> list[StoredEvent]:
        """The given streams' events after a position, in position order (store.read_streams:
        the club feed's page, never skipping one of theirs)."""
        return self.store.read_streams(streams, after_position=after_position, limit=limit)

    def stream_events_before(self, streams: Collection[str], before_position: int,
                             limit: int = 1000) -> list[StoredEvent]:
        """The given streams' last events before a position, in position order
        (store.read_streams_before: a club feed's latest page, and the pages before it)."""
        return self.store.read_streams_before(streams, before_position, limit)

    def read_all(self, after_position: int = 0, limit: int = 1000) -> list[StoredEvent]:
        """Every stream's events by global position (following it never skips one)."""
        return self.store.read_all(after_position, limit)

    def idempotent_result(self, table_id: str, key: str | None) -> IdempotentResult | None:
        """What an earlier write with this Idempotency-Key appended, if one did."""
        return self.store.idempotent_result(table_id, key) if key is not None else None

    def first_answer(self, table_id: str,
                     found: IdempotentResult) -> tuple[Projection, list[StoredEvent]]:
        """The table and the events the first request with this Idempotency-Key was
        answered with (a repeat returns the first answer), whatever was written since: its
        own events and, with inline jobs, what followed from them by itself (rule,
        settlement, an auto-dealt hand, bots), up to the next write a client made. With
        queued jobs a worker appends whenever it gets to them, so the first answer was the
        write's own events, and a repeat gives those too (as create_table does)."""
        latest = self.load(table_id)
        if found.first_version > found.last_version:  # it appended nothing (store.append)
            return (latest if latest.version == found.last_version else project(
                self.store.load(table_id, up_to_version=found.last_version))), []
        stored = self.store.load(table_id, after_version=found.first_version - 1)
        end = found.last_version
        for prev, s in itertools.pairwise(() if self.queued else stored):
            if s.version <= found.last_version:
                continue
            if not _follows_by_itself(prev, s, latest.table):
                break
            end = s.version
        stored = [s for s in stored if s.version <= end]
        if end == latest.version:
            return latest, stored
        return project(self.store.load(table_id, up_to_version=end)), stored

    def cached(self, table_id: str) -> Projection | None:
        """The latest projection this process has seen of the table (no database read)."""
        return self._cache.get(table_id)

    def _remember(self, table_id: str, p: Projection) -> None:
        with self._lock:
            old = self._cache.get(table_id)
            if old is None or old.version < p.version:
                if len(self._cache) > 2000:
                    self._cache.clear()  # bounded: projections are always rebuildable
                self._cache[table_id] = p

    # ---- writes ---------------------------------------------------------------------------
    def create_table(self, cmd: c.CreateTable, *, idempotency_key: str | None = None,
                     request_hash: str | None = None, listed: Listing | None = None,
                     ) -> tuple[str, dict[str, Any], Projection]:
        """Create a table; returns its id, the plain tokens (shown once) and its state.

        With an Idempotency-Key the id derives from the key and the tokens from the key and
        the request, both as HMACs under the deployment's secret: a repeat finds the same
        table and answers with the same tokens although only their hashes are stored, the
        same key with another request meets IdempotencyConflict, and nobody without the
        secret can compute either from the key.

        `listed`: the batch of another stream that lists the new table (a club's), appended
        with the table's events in one transaction, before them (its VersionConflict is
        raised as it is: the caller decides again on the newer stream or answers 409).
        """
        table_id, tokens, repeat = self._new_table(len(cmd.seats), idempotency_key,
                                                   request_hash)
        if repeat is not None:
            return table_id, tokens, repeat
        hashes = {"admin": token_hash(tokens["admin"]),
                  "seats": [token_hash(t) for t in tokens["seats"]]}
        events = handlers.create_table(cmd, hashes, self.seeds)
        try:
            out = self._append(table_id, None, events, "command:create", idempotency_key,
                               request_hash, follow=True, listed=listed)
        except (AlreadyApplied, VersionConflict) as err:  # a concurrent request with the key
            if isinstance(err, VersionConflict) and err.table_id != table_id:
                raise  # the listing's stream moved on
            return self._created_by_the_winner(table_id, tokens, idempotency_key, request_hash)
        self.dispatch(table_id, out.projection, _unix(out.stored[-1].recorded_at))
        if self.queued:
            # A worker appends what follows (bots, the deal) whenever it gets to the job:
            # the answer is the table as created, whatever the worker has done meanwhile.
            return table_id, tokens, out.projection
        return table_id, tokens, self.load(table_id)

    def mac(self, label: str) -> bytes:
        """An HMAC-SHA256 of `label` under the deployment's secret (the store's: one for every
        process on the database, kept across restarts), for what the service hands out and
        must recognise, unforged, whichever process is asked (a list's cursor)."""
        return _mac(self.store.server_secret(), label)

    def keyed_table_id(self, idempotency_key: str) -> str:
        """The id a table created under this Idempotency-Key has (or will have)."""
        return uuid.UUID(bytes=_mac(self.store.server_secret(),
                                    f"table|{idempotency_key}")[:16], version=4).hex

    def _new_table(self, players: int, idempotency_key: str | None, request_hash: str | None,
                   ) -> tuple[str, dict[str, Any], Projection | None]:
        """A new table's id and tokens, and the table when this repeats an earlier request
        under the same Idempotency-Key (another request under it: IdempotencyConflict)."""
        if idempotency_key is None or request_hash is None:
            return uuid.uuid4().hex, {"admin": secrets.token_urlsafe(24),
                                      "seats": [secrets.token_urlsafe(24)
                                                for _ in range(players)]}, None
        table_id = self.keyed_table_id(idempotency_key)
        tokens = _derived_tokens(_mac(self.store.server_secret(),
                                      f"tokens|{idempotency_key}|{request_hash}"), players)
        found = self.store.idempotent_result(table_id, idempotency_key)
        if found is None:
            return table_id, tokens, None
        if found.request_hash != request_hash:
            raise IdempotencyConflict(idempotency_key)
        return table_id, tokens, self.load(table_id)

    def execute(self, table_id: str, cmd: c.Command, *, expected_version: int | None = None,
                idempotency_key: str | None = None, request_hash: str | None = None,
                dispatch: bool = True, loaded: Projection | None = None) -> Outcome:
        """Run one command against the latest state; stale expected_version -> VersionConflict.

        `loaded` is the table as the caller has just loaded it (saves a read); if another
        writer appended since, the append's version check refuses the write all the same.
        """
        p = loaded if loaded is not None else self.load(table_id)
        if idempotency_key is not None:
            found = self.store.idempotent_result(table_id, idempotency_key)
            if found is not None:  # a repeat: nothing is decided or appended again
                if found.request_hash != request_hash:
                    raise IdempotencyConflict(idempotency_key)
                raise AlreadyApplied(found)
        if expected_version is not None and expected_version != p.version:
            raise VersionConflict(table_id, expected_version, p.version)
        events, cause = self._decide(p, cmd)
        out = self._append(table_id, p, events, cause, idempotency_key, request_hash,
                           follow=dispatch)
        if dispatch and out.stored:  # nothing appended (a start auto_deal dealt): no jobs
            self.dispatch(table_id, out.projection, _unix(out.stored[-1].recorded_at))
        return out

    def _decide(self, p: Projection, cmd: c.Command) -> tuple[list[ev.Event], str]:
        """The command's events on `p`, and the causation of those no earlier event causes."""
        cause = f"command:{unique_hex()}"
        if isinstance(cmd, c.Act):
            events = handlers.act(p, cmd)
        elif isinstance(cmd, c.StartHand):
            events = handlers.start_hand(p, cmd, self.seeds)
        elif isinstance(cmd, c.SettleHand):
            events = handlers.settle(p, self.seeds)
        elif isinstance(cmd, c.PlayBot):
            events, policy = handlers.play_bot(p)
            cause = f"bot:{policy}"
        elif isinstance(cmd, c.TimeOut):
            events = handlers.time_out(p, cmd)
            cause = f"timer:{cmd.seat}"
        elif isinstance(cmd, c.CloseTable):
            events = handlers.close(p)
        elif isinstance(cmd, c.VoidHand):
            events = handlers.void_hand(p, cmd)
        elif isinstance(cmd, c.AddSpectator):
            events = handlers.add_spectator(p, cmd)
        elif isinstance(cmd, c.RevokeSpectator):
            events = handlers.revoke_spectator(p, cmd)
        else:  # pragma: no cover - CreateTable has its own entry point
            raise TypeError(cmd)
        return events, cause

    def _append(self, table_id: str, p: Projection | None, events: Sequence[ev.Event],
                cause: str, idempotency_key: str | None, request_hash: str | None,
                follow: bool = False, listed: Listing | None = None) -> Outcome:
        """Append the events; with in-process jobs and `follow`, what those jobs would have
        appended right after too, in the same transaction (one commit instead of two).
        `listed`: a new table's listing in another stream, committed with it (before it)."""
        version = p.version if p else 0
        new = self._envelopes(p, events, cause)
        # The table after the append, folded from the events themselves: decoding them back
        # from their stored form gives the same state (tests/unit/test_service.py).
        proj = fold(enumerate(events, version + 1), p)
        if follow and events and self.dispatcher is not None \
                and self.dispatcher.mode == "inline":
            # A failing step leaves the command standing; the job meets it after the commit.
            more, proj, _failure = self._follow_ups(proj)
            new += more
        stored = self._store_append(table_id, new, version, idempotency_key, request_hash,
                                    proj, listed)
        self._remember(table_id, proj)
        self.committed(proj.table.club)
        return Outcome(version + 1, stored, proj)

    def _store_append(self, table_id: str, new: list[NewEvent], version: int,
                      idempotency_key: str | None, request_hash: str | None, proj: Projection,
                      listed: Listing | None) -> list[StoredEvent]:
        """The table's batch (and its checkpoints), with its listing's when it has one."""
        batch = Batch(table_id, new, version, idempotency_key, request_hash,
                      self.new_checkpoints(table_id, new))
        if listed is None:
            return self.store.append(table_id, new, version, idempotency_key=idempotency_key,
                                     request_hash=request_hash, checkpoints=batch.checkpoints)
        return self.store.append_batches([listed(table_id, proj), batch])[-1]

    def _follow_ups(self, p: Projection, max_steps: int = MAX_STEPS,
                    ) -> tuple[list[NewEvent], Projection, Exception | None]:
        """What `advance` appends after `p` (the settlement, a hand auto_deal starts, bot
        turns), the table after it, and the failure that cut the run short, if one did. Each
        step is decided on the table the step before left, with the causation a job gives
        it; a step that raises ends the run (logged), the steps before it stand."""
        out: list[NewEvent] = []
        deadline = (time.perf_counter() + SLOW_RUN_SECONDS if handlers.slow_bots(p.table)
                    else None)
        for _ in range(max_steps):
            if deadline is not None and out and time.perf_counter() > deadline:
                break
            cmd = handlers.next_command(p)
            if cmd is None:
                break
            try:
                events, cause = self._decide(p, cmd)
            except Exception as err:  # noqa: BLE001 - logged, and returned to the caller
                log.exception("follow-up %s at version %d failed", type(cmd).__name__,
                              p.version)
                return out, p, err
            out += self._envelopes(p, events, cause)
            p = fold(enumerate(events, p.version + 1), p)
        return out, p, None

    @staticmethod
    def _envelopes(p: Projection | None, events: Sequence[ev.Event], cause: str) -> list[NewEvent]:
        """Give each event its hand number and its causation (a command or an earlier event)."""
        version = p.version if p else 0
        hand = p.table.hand.number if p and p.table.hand else None
        completed = p.completed_at if p else None
        out = []
        for i, e in enumerate(events):
            v = version + i + 1
            if isinstance(e, ev.HandStarted):
                hand = e.number
            if isinstance(e, ev.HandCompleted):
                completed = v
            if isinstance(e, _FROM_PREVIOUS):
                causation = f"event:{v - 1}"
            elif isinstance(e, _FROM_COMPLETION) and completed is not None:
                causation = f"event:{completed}"
            else:
                causation = cause
            if isinstance(e, ev.HandVoided):  # it belongs to the hand it voids
                out.append(NewEvent(type=e.type, hand=e.number, data=ev.to_data(e),
                                    causation=causation))
                continue
            out.append(NewEvent(type=e.type, hand=None if isinstance(e, _TABLE_LEVEL) else hand,
                                data=ev.to_data(e), causation=causation))
        return out

    def spectators(self, table_id: str) -> list[ev.SpectatorAdded]:
        """Every spectator token the table was given (revoked ones too), as recorded."""
        return [ev.from_data(s.type, s.data) for s in self.store.load(table_id)
                if s.type == "spectator_added"]  # type: ignore[misc]

    def spectator_token(self, table_id: str, idempotency_key: str | None) -> tuple[str, str]:
        """A new spectator's (id, token). Under an Idempotency-Key both derive from the key
        (an HMAC under the deployment's secret), so a repeat answers with the same token
        although only its hash is stored; without one they are random."""
        if idempotency_key is not None:
            root = _mac(self.store.server_secret(), f"spectator|{table_id}|{idempotency_key}")
            token = base64.urlsafe_b64encode(root[:24]).decode()
        else:
            token = secrets.token_urlsafe(24)
        return "sp_" + token_hash(token)[:16], token

    # ---- import -----------------------------------------------------------------------------
    def import_table(self, plan: Any, idempotency_key: str | None = None,
                     request_hash: str | None = None, listed: Listing | None = None,
                     ) -> tuple[str, dict[str, Any], Projection]:
        """Create a recorded (or results) table from an import plan (ledger/app/imports.py):
        every hand entered by the commands a scorer sends live, checked by the rules, all
        decided before anything is appended and then appended in one batch: an illegal hand
        raises ImportRefused naming the hand and action, and nothing is created. Under an
        Idempotency-Key a repeat finds the table the first request created. `listed`: as
        `create_table`'s."""
        from ledger.app.imports import refuse
        from ledger.core.errors import LedgerError

        table_id, tokens, repeat = self._new_table(len(plan.create.seats), idempotency_key,
                                                   request_hash)
        if repeat is not None:
            return table_id, tokens, repeat
        hashes = {"admin": token_hash(tokens["admin"]),
                  "seats": [token_hash(t) for t in tokens["seats"]]}
        cause = f"command:import:{uuid.uuid4().hex}"
        try:
            events = handlers.create_table(plan.create, hashes, self.seeds)
        except LedgerError as err:
            raise refuse(0, "the table", err) from None
        new = self._envelopes(None, events, cause)
        p = fold(enumerate(events, 1))
        for number, commands in plan.hands:
            for what, cmd in commands:
                try:
                    events, _ = self._decide(p, cmd)
                except LedgerError as err:
                    raise refuse(number, what, err) from None
                new += self._envelopes(p, events, cause)
                p = fold(enumerate(events, p.version + 1), p)
                while (follow := handlers.next_command(p)) is not None:
                    events, follow_cause = self._decide(p, follow)
                    new += self._envelopes(p, events, follow_cause)
                    p = fold(enumerate(events, p.version + 1), p)
        try:
            self._store_append(table_id, new, 0, idempotency_key, request_hash, p, listed)
        except (AlreadyApplied, VersionConflict) as err:  # a concurrent request with the key
            if isinstance(err, VersionConflict) and err.table_id != table_id:
                raise  # the listing's stream moved on
            return self._created_by_the_winner(table_id, tokens, idempotency_key, request_hash)
        self._remember(table_id, p)
        self.committed(p.table.club)
        return table_id, tokens, p

    def _created_by_the_winner(self, table_id: str, tokens: dict[str, Any],
                               idempotency_key: str | None,
                               request_hash: str | None
                               ) -> tuple[str, dict[str, Any], Projection]:
        """A concurrent create under the same Idempotency-Key committed first: its table is
        this request's answer when the bodies match, else the key was reused (409)."""
        assert idempotency_key is not None
        found = self.store.idempotent_result(table_id, idempotency_key)
        if found is None or found.request_hash != request_hash:
            raise IdempotencyConflict(idempotency_key) from None
        return table_id, tokens, self.load(table_id)

    # ---- checkpoints ----------------------------------------------------------------------
    def new_checkpoints(self, table_id: str,
                        new: Sequence[NewEvent]) -> NewCheckpoints | None:
        """The signed heads the append of `new` keeps (API.md "Checkpoints"): one after each
        hand it settles, each hand it voids (its hand_voided) and the table's close
        (table_closed), saved in the append's own transaction: no commit of their own, and
        never a settled hand, a void or a close committed without its checkpoint.

        Kept beside the events, not among them: deleting a table's last events then leaves
        the checkpoint naming them, and the audit fails.
        """
        heads = signed_heads(new)
        if not heads:
            return None
        return NewCheckpoints(heads, lambda version, hash_, at: self.signer.sign(
            table_id, version, hash_, at=at))

    def checkpoint(self, table_id: str, head: StoredEvent) -> dict[str, Any]:
        """The signed checkpoint naming `head` (an event checkpoints.signed_heads names). Its
        `at` is the head's recorded_at, so every process signing one head signs the same
        bytes (Ed25519 is deterministic): a feed that meets the head without its checkpoint
        (saved after the commit by a writer of an earlier release) serves the very one that
        writer saves (ledger/app/feed.py)."""
        # As new_checkpoints has the store keep it: `position`, not signed, is where the feed
        # places it (right after the event it names).
        return {**self.signer.sign(table_id, head.version, head.hash, at=head.recorded_at),
                "position": head.position}

    def checkpoints(self, table_id: str, up_to_version: int | None = None) -> list[dict[str, Any]]:
        """The table's checkpoints, oldest first."""
        return [cp for cp in self.store.checkpoints(table_id)
                if up_to_version is None or cp["version"] <= up_to_version]

    # ---- follow-up jobs -------------------------------------------------------------------
    def dispatch(self, table_id: str, p: Projection | None = None,
                 turn_started: float | None = None) -> bool:
        """Enqueue the worker job this table waits on (a settlement or a bot), if any, and
        schedule the turn timer of a person to act at a table with options.turn_seconds.
        `turn_started` (Unix seconds) is when the table reached `p` (default: read from the
        store for a timer). True if a job was handed over now; False if none is owed, or the
        dispatcher found the same job still queued or running (and left it)."""
        p = p or self.load(table_id)
        if self.dispatcher is None:
            return False
        self.schedule_timer(table_id, p, turn_started)
        if handlers.next_command(p) is None:
            return False
        job_id = f"advance:{table_id}:{p.version}"
        if self.dispatcher.mode == "inline" and handlers.slow_bots(p.table):
            # Off the caller's thread: the rest of a slow run plays on in the background.
            self.dispatcher.schedule(JOB_ADVANCE, table_id, p.version, at=time.time(),
                                     job_id=job_id)
            return True
        return self.dispatcher.enqueue(JOB_ADVANCE, table_id, p.version,
                                       job_id=job_id) is not False

    # ---- turn timers ----------------------------------------------------------------------
    def turn_started(self, table_id: str, p: Projection) -> float:
        """When the table reached version `p.version` (its latest event's recorded_at)."""
        last = self.store.load(table_id, after_version=p.version - 1, up_to_version=p.version)
        return _unix(last[0].recorded_at) if last else self.clock()

    def timer_due(self, table_id: str, p: Projection,
                  turn_started: float | None = None) -> tuple[int, float] | None:
        """(seat, Unix time) of the turn timer the table owes at `p`, if it owes one."""
        owed = handlers.timer_owed(p)
        if owed is None:
            return None
        seat, seconds = owed
        start = turn_started if turn_started is not None else self.turn_started(table_id, p)
        return seat, start + seconds

    def schedule_timer(self, table_id: str, p: Projection,
                       turn_started: float | None = None, again: bool = False) -> bool:
        """Schedule `time_out(table, version)` for when the seat to act runs out of time.

        The job id names the table and version: scheduling twice is one job, and a move
        made first leaves the job a stale version (it then does nothing)."""
        schedule = getattr(self.dispatcher, "schedule", None)
        if schedule is None or handlers.timer_owed(p) is None:
            return False
        due = self.timer_due(table_id, p, turn_started)
        assert due is not None
        # A timer that fired early runs under its own id: the second try needs another.
        schedule(JOB_TIME_OUT, table_id, p.version, at=due[1],
                 job_id=f"timeout:{table_id}:{p.version}" + (":again" if again else ""))
        return True

    def time_out(self, table_id: str, expected_version: int) -> str:
        """The turn timer scheduled at `expected_version`: act for the seat that let its time
        pass. Returns "acted", "stale" (the table moved on: a move came first, or the timer
        already acted), "idle" (nobody is on the clock) or "early" (rescheduled: not due,
        by more than TIMER_WAIT; a run less early waits for its time and then acts)."""
        p = self.load(table_id)
        if p.version != expected_version:
            return "stale"
        due = self.timer_due(table_id, p)
        if due is None:
            return "idle"
        seat, at = due
        early = at - self.clock()
        if early > TIMER_WAIT:
            self.schedule_timer(table_id, p, again=True)
            return "early"
        if early > TIMER_SLACK:
            time.sleep(early)  # a move made meanwhile wins: the append below is then stale
        try:
            self.execute(table_id, c.TimeOut(seat), expected_version=expected_version, loaded=p)
        except VersionConflict:
            return "stale"
        return "acted"

    def advance(self, table_id: str, expected_version: int,
                max_steps: int = MAX_STEPS, hand_over: bool = True) -> str:
        """Settle hands and play consecutive bot turns until a person must act.

        Every step is decided on the table the step before left and all of them are
        appended together, in one transaction: a job moves the table all the way or, if it
        dies or loses a race, not at all. Returns "stale" (the table moved: whoever moved it
        carries on), "idle" (nothing to do, or done) or "continued" (a long all-bot run
        handed to a fresh job after `max_steps` steps; with `hand_over` False, "more": the
        caller goes on from the version reached, as the job does while its time lasts).
        """
        p = self.load(table_id)
        if p.version != expected_version:
            return "stale"
        new, after, failure = self._follow_ups(p, max_steps)
        if new:
            try:
                stored = self.store.append(table_id, new, p.version,
                                           checkpoints=self.new_checkpoints(table_id, new))
            except VersionConflict:
                return "stale"
            self._remember(table_id, after)
            self.committed(after.table.club)
        if failure is not None:
            raise failure  # the steps before it stand; the job fails and is retried
        if handlers.next_command(after) is None:
            if new:
                self.schedule_timer(table_id, after, _unix(stored[-1].recorded_at))
            return "idle"
        if not hand_over:
            return "more"
        self.dispatch(table_id, after)  # long all-bot run: hand over to a fresh job
        return "continued"
