"""Audit a table from its events alone: hash chain, replay, chips, legality, fair deals."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from ledger.app.checkpoints import reaches
from ledger.app.projector import Projection, chip_ledger, decode, project
from ledger.app.rerun import rerun, why
from ledger.core import events as ev
from ledger.core.rules.deal import deal, lots, shuffle
from ledger.store.base import StoredEvent
from ledger.store.hashing import verify_chain


def audit(stored: Sequence[StoredEvent], live: Projection | None = None,
          checkpoints: Sequence[dict[str, Any]] = (), key: Any = None) -> dict[str, Any]:
    """Every check is True or a sentence naming the first failure.

    `checkpoints` are the table's signed heads and `key` what they are checked with: a public
    key, or a Keyring (the service's current key and its retired ones, each checkpoint
    checked with the key its key_id names); the log must still reach the latest one with the
    hash it names (API.md).

    Each event is decoded once, and the table folded once for replay_matches, plays_legal and
    the settlements (ledger/app/rerun.py): the checks used to decode every event five times
    and fold the table four times, most of a long table's audit.
    """
    events, unreadable = _decoded(stored)
    if events is None:  # what cannot be read cannot be re-run: the fold fails where it is
        rebuilt: Projection | str = _replay_failed(stored)
        legal: Any = unreadable
        settled: Any = None
    else:
        rebuilt, legal, settled = rerun(stored, events)
    checks: dict[str, Any] = {
        "hash_chain": _guarded(unreadable, lambda: verify_chain(list(stored)) or True),
        "replay_matches": _guarded(unreadable, _replay, rebuilt, live),
        # and every stake, payment, penalty and point
        "chips_conserved": _guarded(unreadable, _chips, stored, events, rebuilt, settled),
        "plays_legal": legal,
        "deals_match_commitments": _guarded(unreadable, _deals, stored, events),
        "checkpoints": (reaches(stored, checkpoints, key) or True) if key is not None
        else True,
    }
    return {"ok": all(v is True for v in checks.values()), "events": len(stored),
            "checks": checks}


def _decoded(stored: Sequence[StoredEvent]) -> tuple[list[ev.Event] | None, str | None]:
    """(every event decoded, None), or (None, the first event that is not a well-formed
    event of its type, in words)."""
    events: list[ev.Event] = []
    add, from_data = events.append, ev.from_data
    try:
        for s in stored:
            add(from_data(s.type, s.data))
    except Exception as err:  # noqa: BLE001 - a corrupt record must be reported, not raised
        s = stored[len(events)]
        return None, f"version {s.version}: {s.type!r} event cannot be read ({why(err)})"
    return events, None


def _replay_failed(stored: Sequence[StoredEvent]) -> Projection | str:
    """Why a record with an event that cannot be read does not fold: the first error of the
    fold, which decodes each event as it comes to it."""
    try:
        return project(stored)
    except Exception as err:  # noqa: BLE001 - a corrupt record must be reported, not raised
        return f"replay failed: {err}"


def _guarded(unreadable: str | None, check: Any, *args: Any) -> Any:
    """A check's verdict; a record too damaged to check fails it rather than raising."""
    try:
        return check(*args)
    except Exception as err:  # noqa: BLE001 - a corrupt record must be reported, not raised
        return unreadable or f"the record could not be checked ({why(err)})"


def _replay(rebuilt: Projection | str, live: Projection | None) -> Any:
    if isinstance(rebuilt, str):
        return rebuilt
    if live is not None and (rebuilt.table != live.table or rebuilt.version != live.version):
        return f"replayed state at version {rebuilt.version} differs from the live state"
    return True


def _chips(stored: Sequence[StoredEvent], events: Sequence[ev.Event] | None,
           p: Projection | str, settled: Any) -> Any:
    """The transfers add up (to zero, and to the table's balances and pool), each settlement
    records the pool they leave, and `settled`: the settlements are the rules' (rerun)."""
    if isinstance(p, str):
        return p
    assert events is not None  # (an event that cannot be read fails the fold)
    t = p.table
    book = chip_ledger(stored, t.players, events)
    total = sum(book["balances"].values())
    if total != 0:
        return f"balances sum to {total}, not 0"
    if any(b["amount"] <= 0 for b in book["transfers"]):
        return "a transfer has a non-positive amount"
    if book["balances"]["pool"] != t.pool or any(
            book["balances"][f"seat:{s}"] != t.balances[s] for s in range(t.players)):
        return "the transfers do not add up to the table's balances and pool"
    pool = 0  # one pass: the pool each hand_settled records must match the transfers so far
    for s, e in zip(stored, events, strict=True):
        if s.type not in _POOL_EVENTS:
            continue
        pool += _pool_delta(e)
        if isinstance(e, ev.HandSettled) and pool != e.pool:
            return f"version {s.version}: pool {e.pool} but transfers give {pool}"
    return settled


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


_DEAL_EVENTS = frozenset({"table_created", "dealer_chosen", "hand_started", "tiles_dealt",
                          "trump_turned", "seed_revealed"})


def _deals(stored: Sequence[StoredEvent], events: Sequence[ev.Event] | None) -> Any:
    """Each revealed seed must hash to its commitment and re-deal exactly what was dealt
    (with an event that cannot be read: up to the first deal event that cannot be)."""
    players = 0
    started: dict[int, tuple[str | None, int]] = {}
    dealt: dict[int, ev.TilesDealt] = {}
    turned: dict[int, int] = {}
    for i, s in enumerate(stored):
        d = s.data
        if s.type not in _DEAL_EVENTS:
            continue
        e = decode(s) if events is None else events[i]
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
