"""The table across hands: dealer rotation, stakes, pool, balances, scores, game end (§2, §7-§9)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ledger import events as ev
from ledger.errors import Invalid
from ledger.rules import hand as hd
from ledger.rules.actions import Action
from ledger.rules.deal import commitment, deal, lots, shuffle
from ledger.rules.decide import decide as decide_hand
from ledger.rules.frozen import replace
from ledger.rules.options import Options, make_options
from ledger.rules.results import result_events
from ledger.rules.scoring import initial_scores
from ledger.rules.scoring import settle as settle_hand
from ledger.rules.tiles import Tile


@dataclass(frozen=True, slots=True)
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

    @property
    def players(self) -> int:
        return self.opts.players

    @property
    def live(self) -> bool:
        """A hand is being played (not yet complete)."""
        return self.hand is not None and self.hand.phase != "complete"


# ---- decisions at table level --------------------------------------------------------------

def create(opts: Options, seats: list[tuple[str, str | None]], first_dealer: Any,
           tokens: dict, lots_seed: bytes) -> list[ev.Event]:
    """table_created, one seat_filled per seat, dealer_chosen (named or by lots, §2)."""
    if len(seats) != opts.players:
        raise Invalid("invalid_option", "seats must list 2, 3 or 4 players", field="seats")
    out: list[ev.Event] = [ev.TableCreated(variant=opts.variant, scoring=opts.scoring,
                                           deal=opts.deal, players=opts.players,
                                           options=opts.to_dict(), first_dealer=first_dealer,
                                           tokens=tokens)]
    out += [ev.SeatFilled(seat=i, name=n, bot=b) for i, (n, b) in enumerate(seats)]
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
                                          commitment=commitment(seed) if seed else None)]
    pool = t.pool
    if t.opts.scoring == "pool":
        for e in stakes(t):
            out.append(e)
            pool += e.amount
    h = hd.new_hand(number, t.dealer, t.opts, mode, pool, out[0].commitment)
    if mode == "shuffled":
        assert seed is not None
        d = deal(shuffle(seed), t.players, t.dealer)
        dealt = hd.deal_events(h, d.hands, d.turn_up, d.boneyard, ordered=True)
        dealt[0] = replace(dealt[0], seed=seed.hex())
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
    _check_open(t)
    if t.hand is None or not t.live:
        raise Invalid("no_live_hand", "no hand is being played at this table: start one",
                       rule="7")
    out = decide_hand(t.hand, action)
    if t.seed and any(isinstance(e, ev.HandCompleted) for e in out):
        out.append(ev.SeedRevealed(seed=t.seed, order=tuple(shuffle(bytes.fromhex(t.seed)))))
    return out


def settle(t: Table) -> list[ev.Event]:
    """§8/§9: pay the tricks and the loo penalties, or score points; maybe the game is won."""
    if t.hand is None or t.hand.phase != "complete" or t.settled:
        raise Invalid("nothing_to_settle", "no complete hand is waiting to be settled")
    return settle_hand(t.opts, t.hand, t.pool, t.balances, t.scores)


def needs_settlement(t: Table) -> bool:
    return t.hand is not None and t.hand.phase == "complete" and not t.settled


def close(t: Table) -> list[ev.Event]:
    """§8.8: the players close the game; a non-empty pool is reported as left over."""
    if t.status == "closed":
        raise Invalid("table_closed", "the table is already closed")
    abandoned = t.hand.number if t.hand is not None and not t.settled else None
    return [ev.TableClosed(leftover=t.pool, abandoned_hand=abandoned)]


def _check_open(t: Table) -> None:
    if t.status != "playing":
        raise Invalid(f"table_{t.status}", f"the table is {t.status}: no more hands")


# ---- evolve --------------------------------------------------------------------------------

def _created(t: Table, e: ev.TableCreated) -> Table:
    n = e.players
    opts = make_options(e.variant, e.scoring, n, e.options, e.deal)
    return replace(t, opts=opts, tokens=e.tokens, names=("",) * n, bots=(None,) * n,
                   balances=(0,) * n, scores=initial_scores(opts), tricks_total=(0,) * n)


def _seat(t: Table, e: ev.SeatFilled) -> Table:
    return replace(t, names=hd._set(t.names, e.seat, e.name), bots=hd._set(t.bots, e.seat, e.bot))


def _hand_started(t: Table, e: ev.HandStarted) -> Table:
    h = hd.new_hand(e.number, e.dealer, t.opts, e.mode, t.pool, e.commitment)
    return replace(t, hand=h, settled=False, dealer=e.dealer, seed=None)


def _stake(t: Table, e: ev.StakePosted) -> Table:
    pool = t.pool + e.amount
    h = replace(t.hand, pool_at_start=pool) if t.hand is not None else None
    return replace(t, pool=pool, hand=h,
                   balances=hd._set(t.balances, e.seat, t.balances[e.seat] - e.amount))


def _dealt(t: Table, e: ev.TilesDealt) -> Table:
    assert t.hand is not None
    return replace(t, hand=hd.evolve(t.hand, e), seed=e.seed)


def _completed(t: Table, e: ev.HandCompleted) -> Table:
    assert t.hand is not None
    total = tuple(a + b for a, b in zip(t.tricks_total, e.tricks_won, strict=True))
    return replace(t, hand=hd.evolve(t.hand, e), tricks_total=total)


def _paid(t: Table, e: ev.TricksPaid) -> Table:
    bal = tuple(b + x for b, x in zip(t.balances, e.payments, strict=True))
    return replace(t, balances=bal, pool=t.pool - sum(e.payments))


def _penalty(t: Table, e: ev.PenaltyAssessed) -> Table:
    return replace(t, pool=t.pool + e.amount,
                   balances=hd._set(t.balances, e.seat, t.balances[e.seat] - e.amount))


def _settled(t: Table, e: ev.HandSettled) -> Table:
    assert t.hand is not None
    return replace(t, settled=True, scores=e.scores, dealer=(t.hand.dealer + 1) % t.players)


EVOLVE = {
    ev.TableCreated: _created,
    ev.SeatFilled: _seat,
    ev.DealerChosen: lambda t, e: replace(t, dealer=e.seat),
    ev.HandStarted: _hand_started,
    ev.StakePosted: _stake,
    ev.TilesDealt: _dealt,
    ev.HandCompleted: _completed,
    ev.SeedRevealed: lambda t, e: replace(t, seed=None),
    ev.TricksPaid: _paid,
    ev.PenaltyAssessed: _penalty,
    ev.PointsScored: lambda t, e: replace(t, scores=e.totals),
    ev.HandSettled: _settled,
    ev.GameWon: lambda t, e: replace(t, status="finished", winner=e.seat, tied=e.tied),
    ev.TableClosed: lambda t, e: replace(t, status="closed"),
}


def evolve(t: Table, e: ev.Event) -> Table:
    """Apply one event to the table."""
    fn = EVOLVE.get(type(e))
    if fn is not None:
        return fn(t, e)
    if t.hand is not None and type(e) in hd.EVOLVE:
        return replace(t, hand=hd.evolve(t.hand, e))
    return t


def replay(events: list[ev.Event], table: Table | None = None) -> Table:
    """Fold events into a table state (from scratch, or on top of `table`)."""
    t = table if table is not None else Table(opts=Options())
    for e in events:
        t = evolve(t, e)
    return t
