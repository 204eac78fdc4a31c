"""Live feeds (API.md Feeds): a table's or a club's events as they are committed, for
Server-Sent Events (ledger/api/feeds.py) and anything else that follows the store.

One follower per process (`Hub`) asks the store "anything after position P?" when the
store's watch (EventStore.watch) says something committed: PostgreSQL sends a NOTIFY in
every append's transaction, which one LISTEN connection per process hears; SQLite bumps the
watch on this process's commits and sees other processes' within a few ms from `PRAGMA
data_version`. Without a live watch it polls every `poll` seconds (LOO_FEED_POLL). It keeps
the recent events in memory and wakes every stream waiting on them: a hundred listeners cost
one query per commit, not a hundred. A stream first catches up from the store itself (from
its Last-Event-ID), then follows the hub; when it has fallen behind what the hub still holds
it reads the store again. Live events are rendered once per feed and view (`Hub.frames`), by
the hub itself before it wakes the streams, and the frames shared by every stream of that
feed and view: a stream woken only joins bytes made for it and writes them.

Order and exactly-once: the hub follows `read_all`, which never skips an event committed
behind a later position (the store's high-water mark), and a stream's cursor is the last
position it has passed, so a client resuming after the last `id:` it saw gets every later
event once, in position order. A table's own events are read by position as well (a
table's positions follow its versions), and a club's catch-up reads only the club's streams
(its own and its tables', `read_streams`), up to the head it read first (below PostgreSQL's
high-water mark), never the whole log between its position and the head.
"""

from __future__ import annotations

import bisect
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol
from urllib.parse import urlsplit

from ledger.app.checkpoints import HEAD_TYPES, SETTLEMENT_ENDS
from ledger.app.projector import decode
from ledger.app.service import Ledger
from ledger.app.views import Live, Viewer, live_hand, redact
from ledger.core import events as ev
from ledger.store.base import EventStore, StoredEvent, Watch

log = logging.getLogger(__name__)

PAGE = 1000  # events per store read
# Events after which a stream checks that its token still opens it (revoked: it ends).
REVOKING = frozenset({"token_revoked", "spectator_revoked"})
# Seconds after its commit within which a settled head without its checkpoint yet is signed
# by the reader that meets it (attach_checkpoints).
CHECKPOINT_FRESH = 5.0


@dataclass(frozen=True, slots=True)
class FeedConfig:
    keepalive: float = 15.0  # seconds between comment lines on an idle stream
    max_seconds: float = 300.0  # a stream ends after this long; the client reconnects
    max_streams: int = 32  # open streams per process; more are refused (503)
    poll: float = 0.05  # seconds between the hub's store reads while anyone listens


class Hub:
    """The process's one follower of the store (see the module docstring)."""

    IDLE = 1.0  # seconds between reads while the store's watch is live and nothing commits
    HELD_BACK = 0.005  # seconds between reads while a committed event is still held back
    # Seconds at least between two reads: under a stream of commits each read takes a batch
    # and wakes the streams once for it (a wake per commit cost a hundred streams more CPU
    # than it saved them time); the first commit after a quiet spell is read at once.
    GAP = 0.02
    SCOPES = 64  # (source, viewer) scopes whose frames are kept
    RENDER_IDLE = 10.0  # seconds a scope no stream asked for is still rendered ahead
    TRIM = 1024  # frames a scope keeps (up to twice as many before the old ones go)

    def __init__(self, store: EventStore, poll: float = 0.05, keep: int = 20_000) -> None:
        self.store, self.poll, self.keep = store, poll, keep
        self._cond = threading.Condition()
        self._events: list[StoredEvent] = []
        self._positions: list[int] = []
        self.floor = 0  # every event with floor < position <= head is in _events
        self.head = 0
        self._ready = False
        self._listeners = 0
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self.reads = 0  # store reads by the hub (tests look at it)
        self._held: tuple[Any, float] = (None, 0.0)
        # Frames rendered once per scope and shared by its streams (see `frames`).
        self._frames: OrderedDict[Any, dict[int, bytes]] = OrderedDict()
        self._scope_locks: dict[Any, threading.Lock] = {}
        self._frames_lock = threading.Lock()
        # How each scope's streams select and render (`render_for`), and when last asked.
        self._renderers: dict[Any, tuple[Callable[..., Any], Callable[..., Any], float]] = {}

    # ---- listeners -------------------------------------------------------------------------
    def subscribe(self) -> None:
        with self._cond:
            self._listeners += 1
            if self._thread is None or not self._thread.is_alive():
                self._ready = False
                self._thread = threading.Thread(target=self._run, name="loo-feed-hub",
                                                daemon=True)
                self._thread.start()
            self._cond.notify_all()

    def unsubscribe(self) -> None:
        with self._cond:
            self._listeners -= 1

    # ---- the follower ----------------------------------------------------------------------
    def _run(self) -> None:
        watch = _watch_of(self.store)
        last_read = 0.0
        while True:
            with self._cond:
                if self._listeners <= 0:
                    # Nobody listens: stop; the next listener starts afresh from the head.
                    self._ready = False
                    self._thread = None
                    self._cond.notify_all()
                    return
                ready = self._ready
            seen = watch.count if watch is not None else 0  # before the read: no lost wake
            pause = last_read + self.GAP - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            last_read = time.monotonic()
            try:
                if not ready:
                    head = self.store.last_position()
                    with self._cond:
                        self._events, self._positions = [], []
                        self.floor = self.head = head
                        self._ready = True
                        self._cond.notify_all()
                page = self.store.read_all(after_position=self.head, limit=PAGE)
                self.reads += 1
            except Exception:  # the store is down: listeners wait, and the hub tries again
                log.exception("feed hub: reading the store failed")
                time.sleep(max(self.poll, 0.5))
                continue
            if page:
                if self._renderers:
                    self._prerender(page)
                with self._cond:
                    self._events.extend(page)
                    self._positions.extend(s.position for s in page)
                    self.head = page[-1].position
                    if len(self._events) > 2 * self.keep:
                        cut = len(self._events) - self.keep
                        self.floor = self._positions[cut - 1]
                        del self._events[:cut], self._positions[:cut]
                    self._cond.notify_all()
            if len(page) < PAGE:
                self._idle(watch, seen)

    def _prerender(self, page: Sequence[StoredEvent]) -> None:
        """Render the new events' frames of every scope streams follow, before waking them:
        a stream then finds its frames made and only joins them (the fifty streams of one
        scope in a process otherwise queued on its lock, one after the other, every batch)."""
        now = time.monotonic()
        for scope, (select, build, used) in list(self._renderers.items()):
            if now - used > self.RENDER_IDLE:
                self._renderers.pop(scope, None)  # no stream asked for a while
                continue
            try:
                self.frames(scope, select(page), build)
            except Exception:  # noqa: BLE001 - the streams render it themselves then
                log.exception("feed hub: rendering the frames of %r failed", scope)

    def render_for(self, scope: Any, select: Callable[[Sequence[StoredEvent]], Any],
                   build: Callable[[Sequence[StoredEvent]], list[tuple[int, bytes]]]) -> None:
        """A stream of `scope` follows live: the hub renders the scope's frames of each batch
        it reads (`select` and `build` as in `frames`) until no stream asks for a while."""
        self._renderers[scope] = (select, build, time.monotonic())

    def _idle(self, watch: Watch | None, seen: int) -> None:
        """Wait for the next commit: woken by the store's watch when it has one (a commit of
        any process), else polling every `poll` seconds."""
        if watch is None:
            with self._cond:
                self._cond.wait(self.poll)
        elif watch.top > self.head and time.monotonic() - self._held_since(watch) < 60:
            # Committed but held back behind an older append still open (PostgreSQL's
            # high-water mark, ledger/store/postgres.py): read again shortly. (Not for
            # ever: events deleted behind the store's back never come.)
            time.sleep(self.HELD_BACK)
        else:
            watch.wait(seen, self.IDLE if watch.live else self.poll)

    def _held_since(self, watch: Watch) -> float:
        """Since when the hub has waited, without moving, for a position it was told of."""
        mark = (watch.top, self.head)
        if self._held[0] != mark:
            self._held = (mark, time.monotonic())
        return self._held[1]

    def snapshot_floor(self, timeout: float) -> int | None:
        """The hub's floor once it is ready (None if it is not within `timeout`)."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._ready, timeout):
                return None
            return self.floor

    def wait(self, after: int, timeout: float) -> list[StoredEvent] | None:
        """The events after position `after` the hub holds, waiting up to `timeout` for
        some; [] when none came; None when `after` is behind what the hub holds (the caller
        reads the store instead)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if self._ready:
                    if after < self.floor:
                        return None
                    if self.head > after:
                        i = bisect.bisect_right(self._positions, after)
                        return self._events[i:]
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return []
                self._cond.wait(remaining)

    # ---- frames shared by the streams of one scope ----------------------------------------
    def frames(self, scope: Any, events: Sequence[StoredEvent],
               build: Callable[[Sequence[StoredEvent]], list[tuple[int, bytes]]]) -> bytes:
        """The SSE frames of `events` for `scope` (a feed and the view its caller gets), each
        rendered once for all the streams of that scope: a hundred screens on one club cost
        one rendering of each event, not a hundred. `build` renders the events not yet
        rendered, giving (position, frame) for those the scope shows."""
        cache = self._frames.get(scope)
        if cache is not None:  # rendered already (ahead, by the hub): no lock to queue on
            try:
                return b"".join([cache[s.position] for s in events])
            except (KeyError, RuntimeError):  # not all of them, or trimmed meanwhile
                pass
        with self._frames_lock:
            lock = self._scope_locks.get(scope)
            if lock is None:
                lock = self._scope_locks[scope] = threading.Lock()
        with lock:  # one stream renders; the others of the scope wait and reuse
            with self._frames_lock:
                cache = self._frames.get(scope)
                if cache is None:
                    cache = self._frames[scope] = {}
                    while len(self._frames) > self.SCOPES:
                        old, _ = self._frames.popitem(last=False)
                        self._scope_locks.pop(old, None)
                else:
                    self._frames.move_to_end(scope)
            missing = [s for s in events if s.position not in cache]
            if not missing:
                return b"".join(cache[s.position] for s in events)
            cache.update(build(missing))
            for s in missing:
                cache.setdefault(s.position, b"")  # shows nothing to this scope
            out = b"".join(cache[s.position] for s in events)
            if len(cache) > 2 * self.TRIM:
                # The newest TRIM stay (in the order rendered, that is by position): the
                # streams at the live edge need no more; one further behind renders again.
                kept = list(cache.items())[-self.TRIM:]
                cache.clear()
                cache.update(kept)
            return out


def _watch_of(store: EventStore) -> Watch | None:
    watch = getattr(store, "watch", None)
    return watch() if callable(watch) else None


_hubs: dict[tuple[int, int], Hub] = {}
_hubs_lock = threading.Lock()


def hub_for(ledger: Ledger, poll: float) -> Hub:
    """This process's hub for the ledger's store (a forked worker makes its own)."""
    store = ledger.store
    key = (os.getpid(), id(store))
    with _hubs_lock:
        found = _hubs.get(key)
        if found is None:
            found = _hubs[key] = Hub(store, poll)
        return found


# ---- sources: what a stream follows --------------------------------------------------------

class Source(Protocol):
    def catch_up(self, after: int) -> tuple[list[StoredEvent], bool]:
        """Events after position `after` read from the store, and whether more remain."""
        ...

    def render(self, events: Sequence[StoredEvent]) -> list[tuple[int, str, dict[str, Any]]]:
        """(position, type, JSON) of the events this caller gets, checkpoints included."""
        ...


class SharedSource(Source, Protocol):
    """A source whose rendering of an event is the same for every stream of its `scope`
    (hashable): live events are then rendered once per scope (Hub.frames)."""

    scope: Any

    def select(self, events: Sequence[StoredEvent]) -> list[StoredEvent]:
        """The events this stream follows (it may remember what it has seen)."""
        ...

    def render_selected(self, events: Sequence[StoredEvent],
                        ) -> list[tuple[int, str, dict[str, Any]]]:
        """`render` of events `select` gave."""
        ...


class TableSource:
    """One table's events, as the caller's token may see them (the JSON feed's view)."""

    def __init__(self, ledger: Ledger, table_id: str, viewer: Viewer) -> None:
        self.ledger, self.table_id, self.viewer = ledger, table_id, viewer
        self.scope = ("table", table_id, viewer)

    def catch_up(self, after: int) -> tuple[list[StoredEvent], bool]:
        found = self.ledger.store.load_after_position(self.table_id, after, PAGE)
        return found, len(found) == PAGE

    def select(self, events: Sequence[StoredEvent]) -> list[StoredEvent]:
        return [s for s in events if s.table_id == self.table_id]

    def render(self, events: Sequence[StoredEvent]) -> list[tuple[int, str, dict[str, Any]]]:
        return self.render_selected(self.select(events))

    def render_selected(self, mine: Sequence[StoredEvent],
                        ) -> list[tuple[int, str, dict[str, Any]]]:
        if not mine:
            return []
        out = table_events(self.ledger, self.table_id, mine, self.viewer,
                           fresh=CHECKPOINT_FRESH)
        return [(s.position, s.type, e) for s, e in zip(mine, out, strict=True)]


def table_events(ledger: Ledger, table_id: str, stored: Sequence[StoredEvent],
                 viewer: Viewer, fresh: float = CHECKPOINT_FRESH,
                 live: Live | None | bool = False) -> list[dict[str, Any]]:
    """A table's events as the feeds serve them to `viewer`: redacted while their hand is
    live (as the table is now, unless `live` gives its live hand), and the end of each
    hand's settlement, each hand_voided and table_closed carrying its signed `checkpoint`
    (API.md Checkpoints)."""
    if live is False:
        # The process's latest fold when it already covers these events (a hundred streams
        # of one club then read the store once, not a hundred times).
        p = ledger.cached(table_id)
        if p is None or (stored and p.version < stored[-1].version):
            p = ledger.load(table_id)
        live = live_hand(p)
    out = [redact(s, viewer, live) for s in stored]  # type: ignore[arg-type]
    attach_checkpoints(ledger, table_id, stored, out, fresh)
    return out


class ClubSource:
    """A club's stream and all its tables' events, as a spectator sees them, each with
    `stream` (the club feed's view). Tables created from now on join as they appear."""

    def __init__(self, ledger: Ledger, club_id: str, table_ids: set[str]) -> None:
        self.ledger, self.club_id = ledger, club_id
        self.streams = {club_id} | set(table_ids)
        self.scope = ("club", club_id)

    def catch_up(self, after: int) -> tuple[list[StoredEvent], bool]:
        """The club's next events after `after`, read from its own streams (read_streams:
        the club's stream and its tables'), not from every event of the store: a stream far
        behind on a busy service read the whole log since its position. Up to the head as it
        was before the read (last_position: on PostgreSQL below the high-water mark, so no
        open append can still put an event behind it), and with the streams of this club's
        tables begun in that span (first_events), as `selects` adds them when live: when
        more=False, every event of the feed at or below the head is in the answer (`follow`
        then passes the hub's floor, which is at or below it)."""
        store = self.ledger.store
        head = store.last_position()
        while True:
            found = store.read_streams(self.streams, after_position=after, limit=PAGE)
            # What the read covers: every event of these streams in (after, end].
            end = min(found[-1].position if len(found) == PAGE else head, head)
            begun = {s.table_id for s in store.first_events(after, end)
                     if s.type == "table_created" and s.table_id not in self.streams
                     and _club_of(s) == self.club_id} if end > after else set()
            if not begun:
                return [s for s in found if s.position <= end], end < head
            self.streams |= begun  # read again with them (their events lie among these)

    def selects(self, s: StoredEvent) -> bool:
        if s.table_id in self.streams:
            return True
        if s.type == "table_created" and _club_of(s) == self.club_id:
            self.streams.add(s.table_id)
            return True
        return False

    def select(self, events: Sequence[StoredEvent]) -> list[StoredEvent]:
        return [s for s in events if self.selects(s)]

    def render(self, events: Sequence[StoredEvent]) -> list[tuple[int, str, dict[str, Any]]]:
        return self.render_selected(self.select(events))

    def render_selected(self, mine: Sequence[StoredEvent],
                        ) -> list[tuple[int, str, dict[str, Any]]]:
        docs = club_feed(self.ledger, self.club_id, mine, fresh=CHECKPOINT_FRESH)
        return [(s.position, s.type, d) for s, d in zip(mine, docs, strict=True)]


SPECTATOR = Viewer(admin=False, spectator=True)


def club_page(ledger: Ledger, club_id: str, tables: set[str], after: int,
              limit: int) -> list[StoredEvent]:
    """The club feed's page after position `after` (its stream and its tables', by position):
    `tables` are the tables the club lists, and those begun in the page's span for this club
    join them. A club table and its listing commit together now, the listing first; a
    table created before that had its first events (table_created, its seats, an auto-dealt
    hand) commit before the club's stream listed it, and may still be listed late (its
    cut-off listing completed by a retry), so a page ending on a later event would
    otherwise move `next` past them for good."""
    streams = {club_id} | tables
    found = ledger.stream_events(streams, after_position=after, limit=limit)
    if found:
        begun = {s.table_id for s in ledger.store.first_events(after, found[-1].position)
                 if s.type == "table_created" and s.table_id not in streams
                 and _club_of(s) == club_id}
        if begun:
            found = ledger.stream_events(streams | begun, after_position=after, limit=limit)
    return found


@dataclass(frozen=True, slots=True)
class BackPage:
    """A page of a club's feed read backwards (club_page_before)."""

    events: list[StoredEvent]  # in position order
    up_to: int  # the position the page reads up to: ?after= it follows on from there
    earlier: int | None  # ?before= it reads the events before these; None: none are


def club_page_before(ledger: Ledger, club_id: str, tables: set[str], before: int | None,
                     limit: int) -> BackPage:
    """The club feed's last `limit` events before position `before` (None: its latest), in
    position order: its stream's and its listed tables'. It reads up to the store's head as
    it is asked (last_position: every event at or before it has committed, so one following
    ?after= from `up_to` misses none and sees none twice)."""
    head = ledger.store.last_position()
    up_to = head if before is None else min(before - 1, head)
    found = ledger.stream_events_before({club_id} | tables, up_to + 1, limit + 1)
    if len(found) > limit:  # one more than asked: some lie before the page
        found = found[1:]
        return BackPage(found, up_to, found[0].position)
    return BackPage(found, up_to, None)


def club_feed(ledger: Ledger, club_id: str, stored: Sequence[StoredEvent],
              fresh: float = CHECKPOINT_FRESH) -> list[dict[str, Any]]:
    """Events of a club's feed (its own stream and its tables'), as a spectator sees them,
    each with `stream`, in the order given."""
    by_table: dict[str, list[int]] = {}
    for i, s in enumerate(stored):
        if s.table_id != club_id:
            by_table.setdefault(s.table_id, []).append(i)
    out: list[dict[str, Any]] = [club_event(s) if s.table_id == club_id else {}
                                 for s in stored]
    for table_id, idx in by_table.items():
        docs = table_events(ledger, table_id, [stored[i] for i in idx], SPECTATOR, fresh)
        for i, d in zip(idx, docs, strict=True):
            out[i] = d | {"stream": table_id}
    return out


def club_event(s: StoredEvent) -> dict[str, Any]:
    """An event of a club's own stream as the feed serves it (to every club token, viewers
    included: a webhook's address shows only its origin, its path and query may carry the
    receiver's own secret, and the salt its signing secret derives from stays inside)."""
    data = s.data
    if s.type == "webhook_added":
        data = {k: v for k, v in data.items() if k != "salt"} | {"url": _origin(data["url"])}
    return {"version": s.version, "position": s.position, "type": s.type, "hand": None,
            "data": data, "recorded_at": s.recorded_at, "causation": s.causation,
            "hash": s.hash, "prev_hash": s.prev_hash, "stream": "club"}


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"


def attach_checkpoints(ledger: Ledger, table_id: str, stored: Sequence[StoredEvent],
                       out: list[dict[str, Any]], fresh: float = CHECKPOINT_FRESH) -> None:
    """Give each event a checkpoint names its checkpoint (`checkpoint`): the event that ends
    a hand's settlement, a hand_voided, a table_closed (checkpoints.signed_heads).

    A writer saves the checkpoint in the transaction of the append that writes the event,
    but one of an earlier release (a rolling upgrade) saved a settlement's right after, so a
    reader may meet the event a moment before its checkpoint (under load tens of ms, with
    SQLite's busy waits hundreds: the writer queued for the store again). A settlement head
    committed within `fresh` seconds whose checkpoint is not saved yet gets the one its
    writer is saving, signed here (Ledger.checkpoint: the same bytes), instead of the reader
    waiting for it and holding every later event back meanwhile. An older head without one
    is left so (its writer died: the next hand's covers the chain); a reader never signs the
    past. A hand_voided or table_closed gets only the checkpoint saved with it: no release
    saved one after its commit, and one written before these were signed has none (a reader
    signing it would show a checkpoint that GET .../checkpoints and the audit never see).
    """
    ends = [i for i, s in enumerate(stored) if s.type in HEAD_TYPES]
    if not ends:
        return
    found = {cp["version"]: cp for cp in ledger.checkpoints(table_id)}
    now = time.time()  # recorded_at is the store's wall clock, not the ledger's
    for i in ends:
        s = stored[i]
        cp = found.get(s.version)
        # Only the last event of a settlement gets one: a hand_settled followed by game_won
        # (appended together) gets none.
        if cp is None and s.type in SETTLEMENT_ENDS and now - _unix(s.recorded_at) < fresh \
                and _is_head(ledger, s):
            cp = ledger.checkpoint(table_id, s)
        if cp is not None:
            out[i]["checkpoint"] = cp


def _unix(recorded_at: str) -> float:
    return datetime.fromisoformat(recorded_at).timestamp()


def _is_head(ledger: Ledger, s: StoredEvent) -> bool:
    if s.type == "game_won":
        return True
    after = ledger.store.load(s.table_id, s.version, s.version + 1)
    return not (after and after[0].type == "game_won")


# ---- streams -------------------------------------------------------------------------------

def sse_frame(position: int, kind: str, data: Any, dumps: Callable[[Any], bytes]) -> bytes:
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (position, kind.encode(), dumps(data))


def follow(source: Source, hub: Hub, after: int, config: FeedConfig,
           dumps: Callable[[Any], bytes], clock: Callable[[], float] = time.monotonic,
           limit: int | None = None) -> Iterator[bytes]:
    """The SSE body: every event after position `after`, then each as it is committed; a
    comment line after `keepalive` seconds of silence; the end after `max_seconds`, or
    once `limit` events went out (the feed's ?limit=: at most that many events in this
    answer, as in the JSON feed; the client resumes with Last-Event-ID)."""
    end = clock() + config.max_seconds
    quiet_until = clock() + config.keepalive
    last = after
    left = limit
    caught_up = False
    yield b"retry: 1000\n: following from position %d\n\n" % after
    while True:
        now = clock()
        if now >= end:
            return
        if not caught_up:
            floor = hub.snapshot_floor(timeout=min(5.0, end - now))
            if floor is None:
                yield b": waiting for the store\n\n"
                continue
            events, more = source.catch_up(last)
            if not more:
                caught_up = True
                # A table's catch-up reads only its own events, so a revocation committed
                # meanwhile (in its club's stream) is not among them: look once here.
                check = getattr(source, "still_allowed", None)
                if check is not None and not check():
                    yield b": the token was revoked\n\n"
                    return
        else:
            got = hub.wait(last, timeout=max(0.0, min(quiet_until, end) - now))
            if got is None:  # behind what the hub holds: read the store again
                caught_up = False
                continue
            events, floor = got, None
        if events and any(e.type in REVOKING for e in events):
            check = getattr(source, "still_allowed", None)
            if check is not None and not check():
                yield b": the token was revoked\n\n"
                return
        if events and left is not None:
            # Bounded (?limit=): rendered for this stream alone, cut where the bound falls.
            shown = source.render(events)[:left]
            if shown:
                yield b"".join(sse_frame(p, k, d, dumps) for p, k, d in shown)
                left -= len(shown)
                quiet_until = clock() + config.keepalive
            if left <= 0:
                yield b": %d events sent, as ?limit= asked: reconnect with Last-Event-ID " \
                      b"for more\n\n" % (limit or 0)
                return
            last = max(last, events[-1].position)
        elif events:
            if floor is None and hasattr(source, "scope"):  # live: rendered once per scope
                chunk = _shared_frames(source, hub, events, dumps)  # type: ignore[arg-type]
            else:
                chunk = b"".join(sse_frame(p, k, d, dumps) for p, k, d in source.render(events))
            last = max(last, events[-1].position)
            if chunk:
                yield chunk
                quiet_until = clock() + config.keepalive
        if caught_up and floor is not None:
            # Every event at or below the hub's floor was committed before this catch-up
            # read the store, so the read saw all of them that this stream selects.
            last = max(last, floor)
        if clock() >= quiet_until:
            yield b": keepalive\n\n"
            quiet_until = clock() + config.keepalive


def _shared_frames(source: SharedSource, hub: Hub, events: Sequence[StoredEvent],
                   dumps: Callable[[Any], bytes]) -> bytes:
    def build(batch: Sequence[StoredEvent]) -> list[tuple[int, bytes]]:
        return [(p, sse_frame(p, k, d, dumps)) for p, k, d in source.render_selected(batch)]

    hub.render_for(source.scope, source.select, build)
    return hub.frames(source.scope, source.select(events), build)


def _club_of(s: StoredEvent) -> str | None:
    created = decode(s)
    return created.club if isinstance(created, ev.TableCreated) else None
