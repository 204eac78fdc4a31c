"""`loo replay`, `loo audit`: reading a table's record from a terminal (RULES §10)."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Sequence
from typing import Any

import click

from ledger.core.rules.tiles import SUIT_NAMES
from ledger.store.base import EventStore, StoredEvent


def _store() -> EventStore:
    """The event store alone: replay and audit only read, so they need no queue."""
    from ledger.bootstrap import Settings, open_database

    return open_database(Settings.from_env())


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
    if not stored:
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
    stakes: list[str] = []
    commitment: str | None = None
    pool = 0  # the pool before this hand's stakes, then at its start (P, §8.2)
    role = "trump-holder" if stored and stored[0].data.get("variant") == "rounce" else "dealer"
    for s in stored:
        d = s.data
        if s.type == "seat_filled":
            names[d["seat"]] = d["name"]
        if s.type == "hand_settled" and (s.hand or 0) < number:
            pool = d["pool"]
        if s.hand != number and not (s.type == "table_closed"
                                     and d.get("abandoned_hand") == number):
            continue
        if s.type == "hand_started":
            mode = {"shuffled": "shuffled by the service", "recorded": "deal entered by the "
                    "scorer", "results": "result entered by the scorer"}.get(d["mode"], d["mode"])
            lines.append(f"{role}: {names[d['dealer']]} (seat {d['dealer']}) · {mode}")
            commitment = d.get("commitment")
            if commitment:
                deal.append(f"  commitment {commitment}")
        elif s.type == "stake_posted":
            why = "dealer's ante" if d["reason"] == "dealer_ante" else d["reason"]
            stakes.append(f"{names[d['seat']]} {d['amount']} ({why})")
            pool += d["amount"]
        elif s.type == "tiles_dealt":
            for seat, held in sorted(d["hands"].items(), key=lambda kv: int(kv[0])):
                deal.append(f"  seat {seat} {names[int(seat)]:<10} {_tiles(held)}")
            where = "in drawing order" if d.get("ordered", True) else "order not recorded"
            deal.append(f"  boneyard ({where}): {_tiles(d['boneyard'])}")
        elif s.type == "trump_turned":
            trump = d["trump"]
            deal.append(f"  turn-up {d['tile']} exposed by {names[d['exposed_by']]}: "
                        f"{SUIT_NAMES[trump]} are trumps")
        elif s.type == "seed_revealed":
            digest = hashlib.sha256(bytes.fromhex(d["seed"])).hexdigest()
            check = ("its sha256 is the commitment: the deal was fixed before play"
                     if digest == commitment else "its sha256 does NOT match the commitment")
            deal.append(f"  seed {d['seed']} ({check})")
        elif s.type == "player_decided":
            seat = d["seat"]
            order.append(seat)
            text = d["choice"] + (" for the pool" if d.get("for_pool") else "")
            decided[seat] = [text]
        elif s.type == "miss_drawn":
            decided.setdefault(d["seat"], []).append(
                f"puts out {_tiles(d['put_out'])}, draws {_tiles(d['tiles'])}")
        elif s.type == "turn_up_taken":
            decided.setdefault(d["seat"], []).append(f"takes the turn-up {d['tile']}")
        elif s.type == "tiles_discarded":
            decided.setdefault(d["seat"], []).append(f"discards {_tiles(d['tiles'])}")
        elif s.type == "tile_played":
            current.append({"seat": d["seat"], "tile": d["tile"], "suit": d.get("suit")})
        elif s.type == "trick_won":
            tricks.append(f"  trick {d['trick']}: "
                          + trick_line(d["plays"], d["suit"], trump, d["seat"], names))
            current = []
        elif s.type == "hand_won_without_play":
            why = ("every other player dropped" if d["reason"] == "all_dropped"
                   else "the only player left in")
            result.append(f"  won without play by {names[d['seat']]} ({why}): "
                          "credited with all five tricks")
        elif s.type == "hand_completed":
            dropped = set(d["dropped"])
            won = ", ".join(f"{names[int(k)]} " + ("dropped" if int(k) in dropped else str(v))
                            for k, v in sorted(d["tricks_won"].items(), key=lambda kv: int(kv[0])))
            result.append(f"  tricks won: {won}")
            if d["looed"]:
                result.append("  looed: " + ", ".join(names[x] for x in d["looed"]))
            if d.get("for_pool"):
                result.append("  the dealer played for the pool: his tricks' share stays in it")
        elif s.type == "tricks_paid":
            paid = [f"{names[int(k)]} {v}" for k, v in sorted(d["payments"].items(),
                                                              key=lambda kv: int(kv[0])) if v]
            what = ("takes the whole pool" if d["reason"] == "pool_award"
                    else f"a trick is worth {d['trick_value']}")
            result.append(f"  paid from the pool ({what}): {', '.join(paid) or 'nobody'}")
        elif s.type == "penalty_assessed":
            if d["mode"] == "fixed":
                why = "the fixed penalty"
            elif d["amount"] != d["uncapped"]:
                why = f"the pool at the start, {d['uncapped']}, capped at {d['cap']}"
            else:
                why = "the pool at the start" + (f"; cap {d['cap']}" if d["cap"] else "")
            result.append(f"  loo penalty: {names[d['seat']]} pays {d['amount']} into the pool"
                          f" ({why})")
        elif s.type == "points_scored":
            why = {"trick": "tricks", "loo": "looed", "rounce": "rounced",
                   "won_without_play": "won without play"}
            result.append("  points: " + ", ".join(
                f"{names[x['seat']]} {x['delta']:+d} ({why.get(x['reason'], x['reason'])})"
                for x in d["deltas"]) if d["deltas"] else "  points: none")
        elif s.type == "hand_settled":
            if any(d["balances"].values()) or d["pool"]:
                result.append("  balances: " + _per_seat(d["balances"], names)
                              + f" · pool carried {d['pool']}")
            if any(d["scores"].values()):
                result.append("  scores: " + _per_seat(d["scores"], names))
        elif s.type == "game_won":
            if d["seat"] is None:
                result.append("  game over, tied: " + ", ".join(names[x] for x in d["tied"]))
            else:
                tie = (" (tied on score; reached the goal first)" if d.get("tied") else "")
                result.append(f"  game won by {names[d['seat']]}{tie}")
        elif s.type == "table_closed":
            result.append(f"  abandoned: the table was closed during this hand; "
                          f"pool left over {d['leftover']}")
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
    return out


def _tiles(tiles: Sequence[str]) -> str:
    return " ".join(tiles) if tiles else "-"


def _per_seat(values: dict[str, int], names: dict[int, str]) -> str:
    return ", ".join(f"{names[int(k)]} {v}" for k, v in sorted(values.items(),
                                                              key=lambda kv: int(kv[0])))


@click.command("replay", short_help="Print a hand: deal, decisions, tricks, result.")
@click.argument("table_id")
@click.argument("hand", type=click.IntRange(min=1))
@click.option("--live", is_flag=True,
              help="also show a hand still being played, every seat's tiles included "
              "(the table's admin only: more than any seat may see)")
@click.option("--events", "raw", is_flag=True, help="list the hand's events one a line")
def replay_cmd(table_id: str, hand: int, live: bool, raw: bool) -> None:
    """Print hand HAND of TABLE_ID: deal, decisions, trick by trick, result and settlement.

    The full record, every tile included, opens once the hand is over (RULES §10).
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
            "it is over (RULES §10); --live shows it to the table's admin")
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
    key = checkpoint_signer(settings).private.public_key()
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
