"""Audit a table from its events alone: hash chain, replay, chips, legality, fair deals."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from ledger.app.checkpoints import reaches
from ledger.app.projector import Projection, chip_ledger, decode, project
from ledger.core import events as ev
from ledger.core.errors import LedgerError
from ledger.core.rules import table as tb
from ledger.core.rules.actions import Action, Decide, Discard, Play
from ledger.core.rules.deal import deal, lots, shuffle
from ledger.core.rules.results import result_events
from ledger.store.base import StoredEvent
from ledger.store.hashing import verify_chain


def audit(stored: Sequence[StoredEvent], live: Projection | None = None,
          checkpoints: Sequence[dict[str, Any]] = (), key: Any = None) -> dict[str, Any]:
    """Every check is True or a sentence naming the first failure.

    `checkpoints` are the table's signed heads and `key` what they are checked with: a public
    key, or a Keyring (the service's current key and its retired ones, each checkpoint
    checked with the key its key_id names); the log must still reach the latest one with the
    hash it names (API.md).
    """
    unreadable = _unreadable(stored)
    checks: dict[str, Any] = {
        "hash_chain": _guarded(unreadable, lambda: verify_chain(list(stored)) or True),
        "replay_matches": _guarded(unreadable, _replay, stored, live),
        # and every stake, payment, penalty and point
        "chips_conserved": _guarded(unreadable, _chips, stored),
        "plays_legal": _guarded(unreadable, _legal, stored),
        "deals_match_commitments": _guarded(unreadable, _deals, stored),
        "checkpoints": (reaches(stored, checkpoints, key) or True) if key is not None
        else True,
    }
    return {"ok": all(v is True for v in checks.values()), "events": len(stored),
            "checks": checks}


def _unreadable(stored: Sequence[StoredEvent]) -> str | None:
    """The first event that is not a well-formed event of its type, in words; else None."""
    for s in stored:
        try:
            decode(s)
        except Exception as err:  # noqa: BLE001 - a corrupt record must be reported, not raised
            return f"version {s.version}: {s.type!r} event cannot be read ({_why(err)})"
    return None


def _guarded(unreadable: str | None, check: Any, *args: Any) -> Any:
    """A check's verdict; a record too damaged to check fails it rather than raising."""
    try:
        return check(*args)
    except Exception as err:  # noqa: BLE001 - a corrupt record must be reported, not raised
        return unreadable or f"the record could not be checked ({_why(err)})"


def _why(err: BaseException) -> str:
    detail = getattr(err, "detail", None) or " ".join(str(err).split())
    return f"{type(err).__name__}: {detail}" if detail else type(err).__name__


def _replay(stored: Sequence[StoredEvent], live: Projection | None) -> Any:
    try:
        rebuilt = project(stored)
    except Exception as err:  # noqa: BLE001 - a corrupt record must be reported, not raised
        return f"replay failed: {err}"
    if live is not None and (rebuilt.table != live.table or rebuilt.version != live.version):
        return f"replayed state at version {rebuilt.version} differs from the live state"
    return True


def _chips(stored: Sequence[StoredEvent]) -> Any:
    try:
        p = project(stored)
    except Exception as err:  # noqa: BLE001
        return f"replay failed: {err}"
    t = p.table
    book = chip_ledger(stored, t.players)
    total = sum(book["balances"].values())
    if total != 0:
        return f"balances sum to {total}, not 0"
    if any(b["amount"] <= 0 for b in book["transfers"]):
        return "a transfer has a non-positive amount"
    if book["balances"]["pool"] != t.pool or any(
            book["balances"][f"seat:{s}"] != t.balances[s] for s in range(t.players)):
        return "the transfers do not add up to the table's balances and pool"
    pool = 0  # one pass: the pool each hand_settled records must match the transfers so far
    for s in stored:
        if s.type not in _POOL_EVENTS:
            continue
        e = decode(s)
        pool += _pool_delta(e)
        if isinstance(e, ev.HandSettled) and pool != e.pool:
            return f"version {s.version}: pool {e.pool} but transfers give {pool}"
    try:
        return _settlements(stored)
    except Exception as err:  # noqa: BLE001 - a corrupt record must be reported, not raised
        return f"settlements could not be recomputed: {err}"


_SETTLEMENT = (ev.TricksPaid, ev.PlayerLooed, ev.PenaltyAssessed, ev.PointsScored,
               ev.HandSettled, ev.GameWon)


def _settlements(stored: Sequence[StoredEvent]) -> Any:
    """§8/§9 (and §2's rotation): the stakes, payments, penalties and points the record shows
    are exactly what the rules make of it, so a rewritten (and re-hashed) sum is caught."""
    events = [decode(s) for s in stored]
    t = tb.replay([])
    i = 0
    while i < len(events):
        e, version = events[i], stored[i].version
        expected: list[ev.Event] | None = None
        if isinstance(e, ev.HandStarted):
            if not t.settled or t.status != "playing" or e.dealer != t.dealer:
                return (f"version {version}: hand {e.number} may not start here (the deal "
                        f"passes to seat {t.dealer}, after the last hand is settled)")
            t = tb.evolve(t, e)
            i += 1
            expected = tb.stakes(t) if t.opts.scoring == "pool" else []
            what = "the stakes differ from §8.1"
        elif tb.needs_settlement(t) and isinstance(e, _SETTLEMENT):
            expected = tb.settle(t)
            what = "the settlement differs from " + ("§8" if t.opts.scoring == "pool" else "§9")
        elif isinstance(e, ev.HandVoided):
            try:
                expected = tb.void(t, e.number, e.reason)
            except LedgerError as err:
                return f"version {version}: hand {e.number} could not be voided here ({err})"
            what = "the void does not reverse exactly what its hand moved"
        elif isinstance(e, (ev.StakePosted, *_SETTLEMENT)):
            return f"version {version}: {e.type} outside the stakes or a settlement"
        if expected is None:
            t = tb.evolve(t, e)
            i += 1
            continue
        got = events[i : i + len(expected)]
        following = events[i + len(expected)] if i + len(expected) < len(events) else None
        if got != expected or isinstance(following, ev.StakePosted):
            return f"version {stored[min(i, len(stored) - 1)].version}: {what}"
        t = tb.replay(expected, t)
        i += len(expected)
    return True


_POOL_EVENTS = frozenset({"stake_posted", "penalty_assessed", "tricks_paid", "hand_voided",
                          "hand_settled"})


def _pool_delta(e: ev.Event) -> int:
    if isinstance(e, (ev.StakePosted, ev.PenaltyAssessed)):
        return e.amount
    if isinstance(e, ev.TricksPaid):
        return -sum(e.payments)
    if isinstance(e, ev.HandVoided):
        return sum(amount if dst == "pool" else -amount if src == "pool" else 0
                   for src, dst, amount in e.transfers)
    return 0


def _action_of(events: Sequence[ev.Event], i: int) -> tuple[Action, int] | None:
    """The action that produced events[i:] (and how many primary events it wrote)."""
    e = events[i]
    if isinstance(e, ev.PlayerDecided):
        take = e.take_turn_up
        discard: tuple[int, ...] = ()
        drawn = None
        n = 1
        if take:
            disc = events[i + 2]
            assert isinstance(disc, ev.TilesDiscarded)
            discard, n = disc.tiles, 3
        if e.choice == "miss" and i + 1 < len(events) and isinstance(events[i + 1], ev.MissDrawn):
            drawn = events[i + 1].tiles  # type: ignore[union-attr]
            n = 2
        return Decide(e.seat, e.choice, take, discard, e.for_pool, drawn), n
    if isinstance(e, ev.TilesDiscarded):
        return Discard(e.seat, e.tiles), 1
    if isinstance(e, ev.TilePlayed):
        return Play(e.seat, e.tile, e.suit), 1
    return None


def _legal(stored: Sequence[StoredEvent]) -> Any:
    """Re-run every hand: each action, applied to the state before it, must give its events."""
    events = [decode(s) for s in stored]
    t = tb.replay([])
    i = 0
    while i < len(events):
        e = events[i]
        hand = t.hand
        if hand is not None and t.live and hand.mode != "results":
            found = _action_of(events, i)
            if found is not None:
                action, _n = found
                if isinstance(action, Decide) and hand.ordered:
                    action = Decide(action.seat, action.choice, action.take_turn_up,
                                    action.discard, action.for_pool, None)
                try:
                    expected = tb.act(t, action)
                except LedgerError as err:
                    return f"version {stored[i].version}: illegal {e.type}: {err.detail}"
                got = events[i : i + len(expected)]
                if got != expected:
                    return f"version {stored[i].version}: recorded events differ from the rules"
                for x in expected:
                    t = tb.evolve(t, x)
                i += len(expected)
                continue
        if isinstance(e, ev.HandStarted) and e.mode == "results":
            j = i + 1
            while j < len(events) and isinstance(events[j], ev.StakePosted):
                j += 1
            k = j
            while k < len(events) and not isinstance(events[k], ev.HandCompleted):
                k += 1
            problem = _check_result(t, events[i:j], events[j : k + 1], stored[i].version)
            if problem:
                return problem
        t = tb.evolve(t, e)
        i += 1
    return True


def _check_result(t: tb.Table, start: Sequence[ev.Event], rest: Sequence[ev.Event],
                  version: int) -> str | None:
    decided = [e for e in rest if isinstance(e, ev.PlayerDecided)]
    done = rest[-1] if rest else None
    if not isinstance(done, ev.HandCompleted):
        return f"version {version}: results hand without hand_completed"
    result = {"decisions": {str(e.seat): e.choice for e in decided},
              "for_pool": done.for_pool,
              "tricks": {str(s): n for s, n in enumerate(done.tricks_won)}}
    h = tb.replay(list(start), t).hand
    assert h is not None
    try:
        expected = result_events(h, result)
    except LedgerError as err:
        return f"version {version}: impossible result: {err.detail}"
    if list(rest) != expected:
        return f"version {version}: results hand differs from the rules"
    return None


_DEAL_EVENTS = frozenset({"table_created", "dealer_chosen", "hand_started", "tiles_dealt",
                          "trump_turned", "seed_revealed"})


def _deals(stored: Sequence[StoredEvent]) -> Any:
    """Each revealed seed must hash to its commitment and re-deal exactly what was dealt."""
    players = 0
    started: dict[int, tuple[str | None, int]] = {}
    dealt: dict[int, ev.TilesDealt] = {}
    turned: dict[int, int] = {}
    for s in stored:
        d = s.data
        if s.type not in _DEAL_EVENTS:
            continue
        e = decode(s)
        if isinstance(e, ev.TableCreated):
            players = e.players
        elif isinstance(e, ev.DealerChosen) and e.method == "lots":
            # The stored draw must be exactly the one its seed gives (compared as stored).
            # §2: seat i draws item i of the lots seed's shuffle; the highest tile deals.
            draws, winner = lots(bytes.fromhex(e.seed or ""), players)
            if ev.to_data(ev.DealerChosen(seat=winner, method="lots", draws=tuple(draws),
                                          seed=e.seed)) != d:
                return "the first dealer's draw by lots does not follow from its seed"
        elif isinstance(e, ev.HandStarted):
            started[e.number] = (e.commitment, e.dealer)
        elif isinstance(e, ev.TilesDealt) and s.hand is not None:
            dealt[s.hand] = e
        elif isinstance(e, ev.TrumpTurned) and s.hand in dealt:
            turned[s.hand] = e.tile
        elif isinstance(e, ev.SeedRevealed) and s.hand is not None:
            commitment, dealer = started.get(s.hand, (None, 0))
            seed = bytes.fromhex(e.seed)
            if hashlib.sha256(seed).hexdigest() != commitment:
                return f"hand {s.hand}: the revealed seed does not match its commitment"
            order = shuffle(seed)
            again = deal(order, players, dealer)
            rec = dealt.get(s.hand)
            if (tuple(order) != e.order or rec is None or rec.hands != again.hands
                    or rec.boneyard != again.boneyard or turned.get(s.hand) != again.turn_up):
                return f"hand {s.hand}: the seed does not re-deal the recorded deal"
    return True
