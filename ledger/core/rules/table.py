"""The table across hands: dealer rotation, stakes, pool, balances, scores, game end (§2, §7-§9)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ledger.core import events as ev
from ledger.core.errors import Invalid, NotFound
from ledger.core.rules import hand as hd
from ledger.core.rules.actions import Action
from ledger.core.rules.deal import commitment, deal, lots, shuffle
from ledger.core.rules.decide import decide as decide_hand
from ledger.core.rules.frozen import build
from ledger.core.rules.options import Options, make_options
from ledger.core.rules.results import result_events
from ledger.core.rules.scoring import initial_scores
from ledger.core.rules.scoring import settle as settle_hand
from ledger.core.rules.tiles import Tile

VOIDABLE = 64  # how far back a correction may void, one hand at a time (bounded state)


@dataclass(frozen=True, slots=True)
class HandBook:
    """What a hand moved, kept so a correction can move it back (API.md Corrections)."""

    number: int
    dealer: int
    flows: tuple[tuple[str, str, int], ...] = ()  # (from, to, amount): "seat:N" or "pool"
    points: tuple[tuple[int, int], ...] = ()  # (seat, delta)
    scores_before: tuple[int, ...] = ()
    status_before: str = "playing"
    winner_before: int | None = None
    tied_before: tuple[int, ...] = ()
    tricks: tuple[int, ...] = ()  # tricks won per seat (seats[].tricks), taken back by a void


@dataclass(frozen=True)
class Table:
    """Full-information state of a table: the fold of all its events."""

    opts: Options
    names: tuple[str, ...] = ()
    bots: tuple[str | None, ...] = ()
    tokens: dict | None = None
    dealer: int | None = None
    hand: hd.Hand | None = None
    settled: bool = True
    pool: int = 0
    balances: tuple[int, ...] = ()
    scores: tuple[int, ...] = ()
    tricks_total: tuple[int, ...] = ()
    status: str = "playing"  # playing | finished | closed
    winner: int | None = None
    tied: tuple[int, ...] = ()
    seed: str | None = None  # the live hand's seed: secret until revealed
    spectators: tuple[tuple[str, str], ...] = ()  # (id, token hash) of each live one
    book: HandBook | None = None  # the hand being played or last settled
    voidable: tuple[HandBook, ...] = ()  # settled hands not voided, oldest first
    voided: tuple[int, ...] = ()
    club: str | None = None
    season: str | None = None
    members: tuple[str | None, ...] = ()
    # Turn timers: in the last complete hand every person's turn timed out (no person acted)
    # and no person has acted since, nor has an admin started a hand (a deal, or timers_woken
    # where the start names the hand auto_deal dealt) (ledger.core.rules.timers.timers_idle).
    unattended: bool = False

    @property
    def players(self) -> int:
        return self.opts.players

    @property
    def live(self) -> bool:
        """A hand is being played (not yet complete)."""
        return self.hand is not None and self.hand.phase != "complete"


# ---- decisions at table level --------------------------------------------------------------

def create(opts: Options, seats: list[tuple[str, str | None]], first_dealer: Any,
           tokens: dict, lots_seed: bytes, club: str | None = None, season: str | None = None,
           members: tuple[str | None, ...] = ()) -> list[ev.Event]:
    """table_created, one seat_filled per seat, dealer_chosen (named or by lots, §2)."""
    if len(seats) != opts.players:
        raise Invalid("invalid_option", "seats must list 2, 3 or 4 players", field="seats")
    out: list[ev.Event] = [ev.TableCreated(variant=opts.variant, scoring=opts.scoring,
                                           deal=opts.deal, players=opts.players,
                                           options=opts.to_dict(), first_dealer=first_dealer,
                                           tokens=tokens, club=club, season=season)]
    out += [ev.SeatFilled(seat=i, name=n, bot=b,
                          member=members[i] if i < len(members) else None)
            for i, (n, b) in enumerate(seats)]
    if first_dealer == "lots":
        draws, winner = lots(lots_seed, opts.players)
        out.append(ev.DealerChosen(seat=winner, method="lots", draws=tuple(draws),
                                   seed=lots_seed.hex()))
    elif isinstance(first_dealer, int) and not isinstance(first_dealer, bool) \
            and 0 <= first_dealer < opts.players:
        out.append(ev.DealerChosen(seat=first_dealer, method="named"))
    else:
        raise Invalid("invalid_option", f"first_dealer must be a seat 0..{opts.players - 1} "
                      'or "lots"', field="first_dealer")
    return out


def dealt_untouched(t: Table) -> bool:
    """The hand under way was dealt by the service (a shuffled table with auto_deal) and
    nobody has acted in it: no decision, no timed-out turn. A start of the next hand then
    names this one (API.md Hands: with auto_deal the service starts it itself)."""
    h = t.hand
    return (t.opts.deal == "shuffled" and t.opts.auto_deal and t.status == "playing"
            and h is not None and not t.settled and h.phase == "deciding"
            and h.number not in t.voided and not h.timeouts
            and all(d is None for d in h.decisions))


def start_hand(t: Table, *, seed: bytes | None = None,
               recorded: tuple[tuple[tuple[Tile, ...], ...], Tile] | None = None,
               result: dict[str, Any] | None = None) -> list[ev.Event]:
    """hand_started, the stakes (§8.1) and the deal (or, on results tables, the result)."""
    _check_open(t)
    if not t.settled:
        raise Invalid("hand_in_progress", f"hand {t.hand.number if t.hand else 0} is not "
                       "settled yet: finish it first", rule="7")
    assert t.dealer is not None
    number = (t.hand.number if t.hand else 0) + 1
    mode = t.opts.deal
    out: list[ev.Event] = [ev.HandStarted(number=number, dealer=t.dealer, mode=mode,
                                          commitment=commitment(seed) if seed else None,
                                          seat_names=tuple(t.names))]
    pool = t.pool
    if t.opts.scoring == "pool":
        for e in stakes(t):
            out.append(e)
            pool += e.amount
    h = hd.new_hand(number, t.dealer, t.opts, mode, pool, out[0].commitment)
    if mode == "shuffled":
        assert seed is not None
        d = deal(shuffle(seed), t.players, t.dealer)
        dealt = hd.deal_events(h, d.hands, d.turn_up, d.boneyard, ordered=True,
                               seed=seed.hex())
        return out + dealt
    if mode == "recorded":
        assert recorded is not None
        hands, turn_up = recorded
        seen = {t for hand in hands for t in hand} | {turn_up}
        unseen = tuple(x for x in range(28) if x not in seen)
        return out + hd.deal_events(h, hands, turn_up, unseen, ordered=False)
    assert result is not None
    return out + result_events(h, result)


def stakes(t: Table) -> list[ev.StakePosted]:
    """§8.1: an empty pool takes an ante from everyone plus the dealer's ante; else the dealer's."""
    assert t.dealer is not None
    out = []
    if t.pool == 0:
        for k in range(t.players):
            seat = (t.dealer + 1 + k) % t.players
            if t.opts.ante:
                out.append(ev.StakePosted(seat=seat, amount=t.opts.ante, reason="ante"))
    if t.opts.dealer_ante:
        out.append(ev.StakePosted(seat=t.dealer, amount=t.opts.dealer_ante,
                                  reason="dealer_ante"))
    return out


def act(t: Table, action: Action) -> list[ev.Event]:
    """A seat's action in the live hand; the seed is revealed when it completes (§10)."""
    if t.status != "playing":
        _check_open(t)
    h = t.hand
    if t.opts.deal == "results":  # never a hand to act in: say why, not "start one"
        raise hd.violation("wrong_mode", "10", "this table records results only: send each "
                           "hand's result to /hands instead of actions")
    if h is None or h.phase == "complete":
        raise Invalid("no_live_hand", "no hand is being played at this table: start one",
                       rule="7")
    out = decide_hand(h, action)
    if t.seed and isinstance(out[-1], ev.HandCompleted):  # hand_completed comes last
        out.append(ev.SeedRevealed(seed=t.seed, order=tuple(shuffle(bytes.fromhex(t.seed)))))
    return out


def settle(t: Table) -> list[ev.Event]:
    """§8/§9: pay the tricks and the loo penalties, or score points; maybe the game is won."""
    if t.hand is None or t.hand.phase != "complete" or t.settled:
        raise Invalid("nothing_to_settle", "no complete hand is waiting to be settled")
    return settle_hand(t.opts, t.hand, t.pool, t.balances, t.scores)


def hands_done(t: Table) -> bool:
    """The table's `max_hands` are all settled: it closes itself (API.md, Tables). A voided
    hand is not one of them (API.md Corrections: the table is as before it), so a hand
    voided and entered again counts once."""
    return (t.opts.max_hands is not None and t.hand is not None and t.settled
            and t.hand.number - len(t.voided) >= t.opts.max_hands)


def needs_settlement(t: Table) -> bool:
    return t.hand is not None and t.hand.phase == "complete" and not t.settled


def close(t: Table, reason: str | None = None) -> list[ev.Event]:
    """§8.8: the players close the game; a non-empty pool is reported as left over."""
    if t.status == "closed":
        raise Invalid("table_closed", "the table is already closed")
    abandoned = t.hand.number if t.hand is not None and not t.settled else None
    out: list[ev.Event] = []
    if t.seed:  # §10: an abandoned hand is over too: its deal can be checked and opened
        out.append(ev.SeedRevealed(seed=t.seed, order=tuple(shuffle(bytes.fromhex(t.seed)))))
    return out + [ev.TableClosed(leftover=t.pool, abandoned_hand=abandoned, reason=reason)]


def add_spectator(t: Table, id_: str, token_hash: str, label: str | None) -> list[ev.Event]:
    """A read-only token; allowed in any status (a finished game is still worth showing)."""
    if any(sid == id_ for sid, _ in t.spectators):
        raise Invalid("spectator_exists", f"spectator {id_} already exists")
    return [ev.SpectatorAdded(id=id_, token_hash=token_hash, label=label)]


def revoke_spectator(t: Table, id_: str) -> list[ev.Event]:
    if not any(sid == id_ for sid, _ in t.spectators):
        raise NotFound("spectator_not_found", f"this table has no spectator token {id_}")
    return [ev.SpectatorRevoked(id=id_)]


def void(t: Table, number: int, reason: str) -> list[ev.Event]:
    """API.md Corrections: the latest settled hand of a table that has not started another
    is voided by compensating events; its record stays. Older hands: void back to them.

    A table closed after that hand (by its admin, or by max_hands) has started no other: the
    void undoes the close as it un-wins a game (`reopened`), so the table is as before the
    hand, playing, and the corrected hand may be entered; closing again reports the pool
    left over then. A hand abandoned at the close never settled: nothing is voidable."""
    latest = t.hand.number if t.hand is not None else 0
    if not 1 <= number <= latest:
        raise NotFound("hand_not_found", f"hand {number} has not been played at this table")
    if not t.settled and t.status == "closed":
        raise Invalid("not_latest_settled_hand", f"hand {latest} was abandoned when the table "
                      "closed: it never settled, and the hands before it are not the latest; "
                      "nothing at this table may be voided", may_void=None)
    if not t.settled:
        raise Invalid("not_latest_settled_hand", f"hand {latest} is being played: finish it "
                      "first; only the latest settled hand of a table that has not started "
                      "another may be voided", may_void=None)
    may = t.voidable[-1].number if t.voidable else None
    if number in t.voided:
        raise Invalid("hand_already_voided", f"hand {number} is already voided"
                      + (f"; hand {may} may be voided next" if may else ""), may_void=may)
    if number != may:
        raise Invalid("not_latest_settled_hand",
                      f"only the latest settled hand may be voided: hand {may}; to correct "
                      f"hand {number}, void back to it one hand at a time"
                      if may else "no settled hand is left to void", may_void=may)
    book = t.voidable[-1]
    back = tuple(reversed([(dst, src, amount) for src, dst, amount in book.flows]))
    points = tuple((seat, -delta) for seat, delta in reversed(book.points))
    # A game is won (finished, or closed after it was won) only by the hand that won it: no
    # hand starts after a win, so the latest settled hand of a won game is the winning one.
    won = t.status == "finished" or (t.status == "closed"
                                     and (t.winner is not None or bool(t.tied)))
    return [ev.HandVoided(number=number, reason=reason, transfers=back, score_changes=points,
                          totals=book.scores_before,
                          unwon=won and book.status_before != "finished",
                          reopened=t.status == "closed")]


def _check_open(t: Table) -> None:
    if t.status != "playing":
        raise Invalid(f"table_{t.status}", f"the table is {t.status}: no more hands")


# ---- evolve -------------------------------------------------------------------------------

_new = object.__new__


class Draft:
    """A mutable copy of a Table's fields (its hand drafted on demand), frozen by `_freeze`."""

    opts: Options
    names: tuple[str, ...]
    bots: tuple[str | None, ...]
    tokens: dict | None
    dealer: int | None
    hand: hd.Hand | hd.Draft | None
    settled: bool
    pool: int
    balances: tuple[int, ...]
    scores: tuple[int, ...]
    tricks_total: tuple[int, ...]
    status: str
    winner: int | None
    tied: tuple[int, ...]
    seed: str | None
    spectators: tuple[tuple[str, str], ...]
    book: HandBook | None
    voidable: tuple[HandBook, ...]
    voided: tuple[int, ...]
    club: str | None
    season: str | None
    members: tuple[str | None, ...]
    unattended: bool

    @property
    def players(self) -> int:
        return self.opts.players

    def drafted(self) -> hd.Draft:
        """The hand, as a draft that events may change."""
        h = self.hand
        assert h is not None
        if type(h) is not hd.Draft:
            h = self.hand = hd.draft(h)  # type: ignore[arg-type]
        return h  # type: ignore[return-value]


def _created(t: Draft, e: ev.TableCreated) -> None:
    n = e.players
    t.opts = opts = make_options(e.variant, e.scoring, n, e.options, e.deal)
    t.tokens, t.names, t.bots = e.tokens, ("",) * n, (None,) * n
    t.club, t.season, t.members = e.club, e.season, (None,) * n
    t.balances, t.scores, t.tricks_total = (0,) * n, initial_scores(opts), (0,) * n


def _seat(t: Draft, e: ev.SeatFilled) -> None:
    t.names = hd._set(t.names, e.seat, e.name)
    t.bots = hd._set(t.bots, e.seat, e.bot)
    if e.member is not None:
        t.members = hd._set(t.members, e.seat, e.member)


def _spectator_added(t: Draft, e: ev.SpectatorAdded) -> None:
    t.spectators = (*t.spectators, (e.id, e.token_hash))


def _spectator_revoked(t: Draft, e: ev.SpectatorRevoked) -> None:
    t.spectators = tuple(s for s in t.spectators if s[0] != e.id)


def _dealer(t: Draft, e: ev.DealerChosen) -> None:
    t.dealer = e.seat


def _hand_started(t: Draft, e: ev.HandStarted) -> None:
    # Turn timers (API.md): an admin starting a hand wakes them. Without auto_deal every hand
    # is the admin's; with it the service deals each next hand itself, in the batch that
    # settles the hand before, and the admin deals one only after that hand was voided.
    if not t.opts.auto_deal or (t.hand is not None and t.hand.number in t.voided):
        t.unattended = False
    t.hand = hd.new_hand(e.number, e.dealer, t.opts, e.mode, t.pool, e.commitment)
    t.settled, t.dealer, t.seed = False, e.dealer, None
    t.book = HandBook(e.number, e.dealer, scores_before=t.scores, status_before=t.status,
                      winner_before=t.winner, tied_before=t.tied)


def _timers_woken(t: Draft, e: ev.TimersWoken) -> None:
    t.unattended = False


def _book(b: HandBook, flows: tuple[tuple[str, str, int], ...] | None = None,
          points: tuple[tuple[int, int], ...] | None = None) -> HandBook:
    """`replace(b, flows=..., points=...)` without its per-call field inspection (it runs
    for every chip that moves, on every fold)."""
    return HandBook(b.number, b.dealer, b.flows if flows is None else flows,
                    b.points if points is None else points, b.scores_before,
                    b.status_before, b.winner_before, b.tied_before, b.tricks)


def _flow(t: Draft, src: str, dst: str, amount: int) -> None:
    if t.book is not None and amount > 0:
        t.book = _book(t.book, flows=(*t.book.flows, (src, dst, amount)))


def _stake(t: Draft, e: ev.StakePosted) -> None:
    t.pool = pool = t.pool + e.amount
    if t.hand is not None:
        t.drafted().pool_at_start = pool
    t.balances = hd._set(t.balances, e.seat, t.balances[e.seat] - e.amount)
    _flow(t, f"seat:{e.seat}", "pool", e.amount)


def _dealt(t: Draft, e: ev.TilesDealt) -> None:
    hd._dealt(t.drafted(), e)
    t.seed = e.seed


def _completed(t: Draft, e: ev.HandCompleted) -> None:
    h = t.drafted()
    hd._completed(h, e)
    # Turn timers (API.md): a person acted in the hand, or the timers played it for them all
    # (a hand in which no person had a turn leaves it as it was).
    if any(t.bots[s] is None for s in h.acted):
        t.unattended = False
    elif h.timeouts:
        t.unattended = True
    t.tricks_total = tuple(a + b for a, b in zip(t.tricks_total, e.tricks_won, strict=True))
    b = t.book
    if b is not None and t.hand is not None and b.number == t.hand.number:
        t.book = HandBook(b.number, b.dealer, b.flows, b.points, b.scores_before,
                          b.status_before, b.winner_before, b.tied_before, e.tricks_won)


def _seed_revealed(t: Draft, e: ev.SeedRevealed) -> None:
    t.seed = None


def _paid(t: Draft, e: ev.TricksPaid) -> None:
    t.balances = tuple(b + x for b, x in zip(t.balances, e.payments, strict=True))
    t.pool -= sum(e.payments)
    for seat, amount in enumerate(e.payments):
        _flow(t, "pool", f"seat:{seat}", amount)


def _penalty(t: Draft, e: ev.PenaltyAssessed) -> None:
    t.pool += e.amount
    t.balances = hd._set(t.balances, e.seat, t.balances[e.seat] - e.amount)
    _flow(t, f"seat:{e.seat}", "pool", e.amount)


def _scored(t: Draft, e: ev.PointsScored) -> None:
    t.scores = e.totals
    if t.book is not None:
        t.book = _book(t.book, points=(*t.book.points,
                                       *((seat, delta) for seat, delta, _ in e.deltas)))


def _settled(t: Draft, e: ev.HandSettled) -> None:
    assert t.hand is not None
    t.settled, t.scores, t.dealer = True, e.scores, (t.hand.dealer + 1) % t.players
    if t.book is not None and t.book.number == t.hand.number:
        t.voidable = (*t.voidable[1 - VOIDABLE:], t.book)


def moved(pool: int, balances: tuple[int, ...], transfers: Iterable[tuple[str, str, int]],
          ) -> tuple[int, tuple[int, ...]]:
    """The pool and the seats' balances after `transfers` ((from, to, amount), accounts
    "pool" and "seat:N"), as a void moves them (ledger/app/verify.py follows a void too)."""
    seats = list(balances)
    for src, dst, amount in transfers:
        for account, sign in ((src, -1), (dst, 1)):
            if account == "pool":
                pool += sign * amount
            else:
                seats[int(account.removeprefix("seat:"))] += sign * amount
    return pool, tuple(seats)


def _voided(t: Draft, e: ev.HandVoided) -> None:
    book = t.voidable[-1]
    t.voidable, t.voided = t.voidable[:-1], (*t.voided, e.number)
    t.pool, t.balances = moved(t.pool, t.balances, e.transfers)
    t.scores = e.totals
    if book.tricks:  # the voided hand's tricks no longer count in seats[].tricks
        t.tricks_total = tuple(a - b for a, b in zip(t.tricks_total, book.tricks, strict=True))
    t.dealer = book.dealer  # the voided deal does not count: the same dealer deals again
    if e.unwon:
        t.status, t.winner, t.tied = book.status_before, book.winner_before, book.tied_before
    if e.reopened:  # the close after the hand is undone: the table is as before the hand
        t.status = book.status_before


def _won(t: Draft, e: ev.GameWon) -> None:
    t.status, t.winner, t.tied = "finished", e.seat, e.tied


def _closed(t: Draft, e: ev.TableClosed) -> None:
    t.status = "closed"


EVOLVE: dict[type, Any] = {
    ev.TableCreated: _created,
    ev.SeatFilled: _seat,
    ev.DealerChosen: _dealer,
    ev.SpectatorAdded: _spectator_added,
    ev.SpectatorRevoked: _spectator_revoked,
    ev.HandStarted: _hand_started,
    ev.TimersWoken: _timers_woken,
    ev.StakePosted: _stake,
    ev.TilesDealt: _dealt,
    ev.HandCompleted: _completed,
    ev.SeedRevealed: _seed_revealed,
    ev.TricksPaid: _paid,
    ev.PenaltyAssessed: _penalty,
    ev.PointsScored: _scored,
    ev.HandSettled: _settled,
    ev.GameWon: _won,
    ev.HandVoided: _voided,
    ev.TableClosed: _closed,
}
_HAND_ONLY = {k: fn for k, fn in hd.EVOLVE.items() if k not in EVOLVE}
_HAND_DRAFT = hd.Draft


def evolve(t: Table, e: ev.Event) -> Table:
    """Apply one event to the table."""
    return replay((e,), t)


def replay(events: Iterable[ev.Event], table: Table | None = None) -> Table:
    """Fold events into a table state (from scratch, or on top of `table`)."""
    t = table if table is not None else Table(opts=Options())
    d = None  # the table, drafted at its first table-level event
    h = None  # the hand, drafted at its first hand-level event
    for e in events:
        fn = _HAND_ONLY.get(type(e))
        if fn is not None:
            if h is None:
                held = t.hand if d is None else d.hand
                if held is None:
                    continue
                h = _new(_HAND_DRAFT)
                h.__dict__ = held.__dict__.copy()
                if d is not None:
                    d.hand = h
            fn(h, e)
            continue
        fn = EVOLVE.get(type(e))
        if fn is not None:
            if d is None:
                d = _new(Draft)
                d.__dict__ = t.__dict__.copy()
                if h is not None:
                    d.hand = h
            fn(d, e)  # may start a new hand, or draft the hand (d.drafted())
            h = d.hand if type(d.hand) is _HAND_DRAFT else None  # type: ignore[assignment]
    if d is None:
        if h is None:
            return t
        return build(Table, t.__dict__ | {"hand": build(hd.Hand, h.__dict__)})
    if h is not None:
        d.hand = build(hd.Hand, h.__dict__)
    return build(Table, d.__dict__)
