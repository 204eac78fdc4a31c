"""`loo replay`, `loo audit`: reading a table's record from a terminal (rule 10)."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Sequence
from typing import Any

import click

from ledger.app.projector import decode
from ledger.core import events as ev
from ledger.core.rules.table import moved
from ledger.core.rules.tiles import NAMES, SUIT_NAMES, Tile
from ledger.store.base import EventStore, StoredEvent


def _store() -> EventStore:
    """The event store alone: replay and audit only read, so they need no queue (nor
    create a ledger that is not there)."""
    from ledger.bootstrap import Settings, open_database

    return open_database(Settings.from_env(), create=False)


def _events_of(table_id: str) -> list[StoredEvent]:
    """Every event of the table, or a clear error when there is no such table."""
    try:
        table_id.encode()
    except UnicodeEncodeError:  # bytes that are not UTF-8 name no table (and no driver takes them)
        raise click.ClickException(f"no table {table_id!r}") from None
    store = _store()
    try:
        stored = store.load(table_id)
    except ValueError as err:  # event data that is not JSON: altered outside the service
        raise click.ClickException(f"the record of table {table_id} cannot be read: an "
                                   f"event's data is not JSON ({err})") from err
    finally:
        store.close()
    # A stream that begins with another event is no table (a club's); one whose first event
    # is gone is a damaged table, for the audit to report.
    if not stored or (stored[0].version == 1 and stored[0].type != "table_created"):
        raise click.ClickException(f"no table {table_id!r}")
    return stored


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def trick_line(plays: Sequence[dict[str, Any]], suit: int, trump: int | None,
                winner: int | None, names: dict[int, str]) -> str:
    led = SUIT_NAMES[suit] + (" (trumps)" if suit == trump else "")
    parts = [f"{names[p['seat']]} {p['tile']}" + (f" leads {led}" if i == 0 else "")
             for i, p in enumerate(plays)]
    return ", ".join(parts) + (f" → won by {names[winner]}" if winner is not None else "")


# ---- loo replay --------------------------------------------------------------------------
def render_hand(stored: Sequence[StoredEvent], number: int,
                parts: Sequence[str] = ("deal", "decisions", "tricks", "result")) -> list[str]:
    """Hand `number` told from its events: deal, decisions, tricks, result and settlement."""
    names: dict[int, str] = {}
    trump: int | None = None
    lines: list[str] = []
    deal: list[str] = []
    decided: dict[int, list[str]] = {}
    order: list[int] = []
    tricks: list[str] = []
    current: list[dict[str, Any]] = []
    result: list[str] = []
    timed_out: list[str] = []  # turn timers (API.md "turn timers"): told under the result
    stakes: list[str] = []
    commitment: str | None = None
    pool = 0  # the pool before this hand's stakes, then at its start (P, §8.2)
    settled: ev.HandSettled | None = None  # this hand's settlement, until a void undoes it
    started = False  # whether the log has reached this hand: what follows is not "before"
    role = "trump-holder" if stored and stored[0].data.get("variant") == "rounce" else "dealer"
    for s in stored:
        if s.type not in _TOLD:
            continue
        e = decode(s)
        if isinstance(e, ev.SeatFilled):
            names[e.seat] = e.name
        started = started or s.hand == number
        if not started and isinstance(e, ev.HandSettled):
            pool = e.pool
        elif not started and isinstance(e, ev.HandVoided):  # the hand's chips went back
            pool += sum(a if dst == "pool" else -a for src, dst, a in e.transfers
                        if "pool" in (src, dst))
        if s.hand != number and not (isinstance(e, ev.TableClosed)
                                     and e.abandoned_hand == number):
            continue
        if isinstance(e, ev.HandStarted):
            mode = {"shuffled": "shuffled by the service", "recorded": "deal entered by the "
                    "scorer", "results": "result entered by the scorer"}.get(e.mode, e.mode)
            lines.append(f"{role}: {names[e.dealer]} (seat {e.dealer}) · {mode}")
            commitment = e.commitment
            if commitment:
                deal.append(f"  commitment {commitment}")
        elif isinstance(e, ev.StakePosted):
            why = "dealer's ante" if e.reason == "dealer_ante" else e.reason
            stakes.append(f"{names[e.seat]} {e.amount} ({why})")
            pool += e.amount
        elif isinstance(e, ev.TilesDealt):
            for seat, held in enumerate(e.hands):
                deal.append(f"  seat {seat} {names[seat]:<10} {_tiles(held)}")
            where = "in drawing order" if e.ordered else "order not recorded"
            deal.append(f"  boneyard ({where}): {_tiles(e.boneyard)}")
        elif isinstance(e, ev.TrumpTurned):
            trump = e.trump
            deal.append(f"  turn-up {NAMES[e.tile]} exposed by {names[e.exposed_by]}: "
                        f"{SUIT_NAMES[trump]} are trumps")
        elif isinstance(e, ev.SeedRevealed):
            digest = hashlib.sha256(bytes.fromhex(e.seed)).hexdigest()
            check = ("its sha256 is the commitment: the deal was fixed before play"
                     if digest == commitment else "its sha256 does NOT match the commitment")
            deal.append(f"  seed {e.seed} ({check})")
        elif isinstance(e, ev.PlayerDecided):
            order.append(e.seat)
            decided[e.seat] = [e.choice + (" for the pool" if e.for_pool else "")]
        elif isinstance(e, ev.MissDrawn):
            decided.setdefault(e.seat, []).append(
                f"puts out {_tiles(e.put_out)}, draws {_tiles(e.tiles)}")
        elif isinstance(e, ev.TurnUpTaken):
            decided.setdefault(e.seat, []).append(f"takes the turn-up {NAMES[e.tile]}")
        elif isinstance(e, ev.TilesDiscarded):
            decided.setdefault(e.seat, []).append(f"discards {_tiles(e.tiles)}")
        elif isinstance(e, ev.TurnTimedOut):  # the service's action for the seat follows
            timed_out.append(f"  {names[e.seat]}'s turn timer ran out ({e.seconds} s): "
                             "the service acted for them")
        elif isinstance(e, ev.TimersWoken):
            timed_out.append("  the timers, resting, were woken when the admin started the hand")
        elif isinstance(e, ev.TilePlayed):
            current.append({"seat": e.seat, "tile": NAMES[e.tile], "suit": e.suit})
        elif isinstance(e, ev.TrickWon):
            plays = [{"seat": seat, "tile": NAMES[tile]} for seat, tile in e.plays]
            tricks.append(f"  trick {e.trick}: "
                          + trick_line(plays, e.suit, trump, e.seat, names))
            current = []
        elif isinstance(e, ev.HandWonWithoutPlay):
            why = ("every other player dropped" if e.reason == "all_dropped"
                   else "the only player left in")
            result.append(f"  won without play by {names[e.seat]} ({why}): "
                          "credited with all five tricks")
        elif isinstance(e, ev.HandCompleted):
            won = ", ".join(f"{names[seat]} " + ("dropped" if seat in e.dropped else str(n))
                            for seat, n in enumerate(e.tricks_won))
            result.append(f"  tricks won: {won}")
            if e.looed:
                result.append("  looed: " + ", ".join(names[x] for x in e.looed))
            if e.for_pool:
                result.append("  the dealer played for the pool: his tricks' share stays in it")
        elif isinstance(e, ev.TricksPaid):
            paid = [f"{names[seat]} {v}" for seat, v in enumerate(e.payments) if v]
            what = ("takes the whole pool" if e.reason == "pool_award"
                    else f"a trick is worth {e.trick_value}")
            result.append(f"  paid from the pool ({what}): {', '.join(paid) or 'nobody'}")
        elif isinstance(e, ev.PenaltyAssessed):
            if e.mode == "fixed":
                why = "the fixed penalty"
            elif e.amount != e.uncapped:
                why = f"the pool at the start, {e.uncapped}, capped at {e.cap}"
            else:
                why = "the pool at the start" + (f"; cap {e.cap}" if e.cap else "")
            result.append(f"  loo penalty: {names[e.seat]} pays {e.amount} into the pool"
                          f" ({why})")
        elif isinstance(e, ev.PointsScored):
            why = {"trick": "tricks", "loo": "looed", "rounce": "rounced",
                   "won_without_play": "won without play"}
            result.append("  points: " + ", ".join(
                f"{names[seat]} {delta:+d} ({why.get(reason, reason)})"
                for seat, delta, reason in e.deltas) if e.deltas else "  points: none")
        elif isinstance(e, ev.HandSettled):
            settled = e
            if any(e.balances) or e.pool:
                result.append("  balances: " + _per_seat(e.balances, names)
                              + f" · pool carried {e.pool}")
            if any(e.scores):
                result.append("  scores: " + _per_seat(e.scores, names))
        elif isinstance(e, ev.GameWon):
            if e.seat is None:
                result.append("  game over, tied: " + ", ".join(names[x] for x in e.tied))
            else:
                tie = " (tied on score; reached the goal first)" if e.tied else ""
                result.append(f"  game won by {names[e.seat]}{tie}")
        elif isinstance(e, ev.TableClosed):
            result.append(f"  abandoned: the table was closed during this hand; "
                          f"pool left over {e.leftover}")
        elif isinstance(e, ev.HandVoided):
            result.append(f"  VOIDED ({e.reason}): its chips and points were given back")
            if settled is not None and (any(settled.balances) or settled.pool or e.transfers):
                after, balances = moved(settled.pool, settled.balances, e.transfers)
                result.append("  balances after the void: " + _per_seat(balances, names)
                              + f" · pool carried {after}")
            if any(e.totals) or e.score_changes:
                result.append("  scores after the void: " + _per_seat(e.totals, names))
            if e.unwon:
                result.append("  the game this hand had won goes on")
    if current:
        tricks.append(f"  trick {len(tricks) + 1}: "
                      + trick_line(current, current[0]["suit"], trump, None, names))
    out: list[str] = []
    if "deal" in parts:
        out += lines
        if stakes:
            out.append("stakes: " + ", ".join(stakes) + f" · pool at the start {pool}")
        if deal:
            out += ["deal:", *deal]
    if "decisions" in parts and order:
        out.append("decisions:")
        out += [f"  seat {x} {names[x]:<10} {', '.join(decided[x])}" for x in order]
    if "tricks" in parts and tricks:
        out += ["tricks:", *tricks]
    if "result" in parts and result:
        out += ["result:", *result]
    if "result" in parts and timed_out:
        out += ["timers:", *timed_out]
    return out


def _tiles(tiles: Sequence[Tile]) -> str:
    return " ".join(NAMES[t] for t in tiles) if tiles else "-"


def _per_seat(values: Sequence[int], names: dict[int, str]) -> str:
    return ", ".join(f"{names[seat]} {v}" for seat, v in enumerate(values))


# The events a hand is told from (any other is passed over undecoded).
_TOLD = frozenset({
    "seat_filled", "hand_settled", "table_closed", "hand_started", "stake_posted",
    "tiles_dealt", "trump_turned", "seed_revealed", "player_decided", "miss_drawn",
    "turn_up_taken", "tiles_discarded", "tile_played", "trick_won", "hand_won_without_play",
    "hand_completed", "tricks_paid", "penalty_assessed", "points_scored", "game_won",
    "hand_voided", "turn_timed_out", "timers_woken"})


@click.command("replay", short_help="Print a hand: deal, decisions, tricks, result.")
@click.argument("table_id")
@click.argument("hand", type=click.IntRange(min=1))
@click.option("--live", is_flag=True,
              help="also show a hand still being played, every seat's tiles included "
              "(the table's admin only: more than any seat may see)")
@click.option("--events", "raw", is_flag=True, help="list the hand's events one a line")
def replay_cmd(table_id: str, hand: int, live: bool, raw: bool) -> None:
    """Print hand HAND of TABLE_ID: deal, decisions, trick by trick, result and settlement.

    The full record, every tile included, opens once the hand is over (rule 10 of the
    rule book, /docs/rules#rule-10).
    """
    stored = _events_of(table_id)
    try:
        lines = _told(table_id, stored, hand, live, raw)
    except (LookupError, TypeError, ValueError, AttributeError) as err:
        # A record altered outside the service (the store refuses updates): say so, not crash.
        raise click.ClickException(
            f"hand {hand} of {table_id} cannot be told: its record is damaged ({err!r}); "
            f"`loo audit {table_id}` names the first bad event") from err
    for line in lines:
        click.echo(line)


def _told(table_id: str, stored: Sequence[StoredEvent], hand: int, live: bool,
          raw: bool) -> list[str]:
    """The lines `loo replay` prints, or a ClickException when the hand may not be shown."""
    mine = [s for s in stored if s.hand == hand]
    if not mine:
        started = max((s.hand or 0 for s in stored), default=0)
        raise click.ClickException(f"hand {hand} has not been played at {table_id} "
                                   f"(hands: {'none yet' if not started else f'1 to {started}'})")
    over = any(s.type == "hand_completed" for s in mine) or any(
        s.type == "table_closed" and s.data.get("abandoned_hand") == hand for s in stored)
    if not over and not live:
        raise click.ClickException(
            f"hand {hand} of {table_id} is still being played: its tiles stay hidden until "
            "it is over (rule 10, /docs/rules#rule-10); --live shows it to the table's admin")
    if raw:
        lines: list[str] = []
        for s in mine:
            data = dict(s.data)
            if not over:
                data.pop("seed", None)  # secret until revealed, even for the admin
            lines.append(f"v{s.version:<5} {s.type:<22} {json.dumps(data, sort_keys=True)}")
        return lines
    created = stored[0].data
    kind = "Domino Rounce" if created.get("variant") == "rounce" else "Loo"
    state = "complete" if any(s.type == "hand_completed" for s in mine) else (
        "abandoned" if over else "still being played")
    if any(s.type == "hand_voided" for s in mine):
        state += ", voided"
    return [f"table {table_id} · hand {hand} ({state}) · {kind}, "
            f"{created.get('scoring')} scoring, {created.get('players')} players · "
            f"events v{mine[0].version}-v{mine[-1].version}", *render_hand(stored, hand)]


# ---- loo audit ---------------------------------------------------------------------------
@click.command("audit", short_help="Check a table's record; exit 1 on a failure.")
@click.argument("table_id")
def audit_cmd(table_id: str) -> None:
    """Audit TABLE_ID: hash chain, replay, chips, legality, deals; exit 1 on any failure."""
    from ledger.app.audit import audit
    from ledger.bootstrap import Settings, checkpoint_signer

    stored = _events_of(table_id)
    settings = Settings.from_env()
    store = _store()
    try:
        checkpoints = store.checkpoints(table_id)
    finally:
        store.close()
    # The current key and the retired ones, read, never made: a key file the audit created
    # (the service ran with LOO_CHECKPOINT_KEY, or another file) would be a new key, and the
    # service's own checkpoints would be reported forged. A table with no checkpoint yet
    # needs none.
    key = checkpoint_signer(settings, create=False).keyring() if checkpoints else None
    result = audit(stored, checkpoints=checkpoints, key=key)
    for name, verdict in result["checks"].items():
        click.echo(f"{name:<24} {'ok' if verdict is True else 'FAILED: ' + str(verdict)}")
    failed = [(k, v) for k, v in result["checks"].items() if v is not True]
    hands = max((s.hand or 0 for s in stored), default=0)
    summary = f"table {table_id}: {result['events']} events, {plural(hands, 'hand')}"
    if failed:
        click.echo(f"{summary}: FAILED ({failed[0][0]}: {failed[0][1]})")
        sys.exit(1)
    click.echo(f"{summary}: OK")
