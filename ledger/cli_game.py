"""`loo play`, `loo replay`, `loo audit`: the game from a terminal, through the same handler."""

from __future__ import annotations

import sys
from typing import Any

import click

from ledger import commands as c
from ledger.errors import LedgerError
from ledger.projector import project
from ledger.rules.tiles import SUIT_NAMES, parse_tile
from ledger.service import Ledger
from ledger.views import Viewer, table_view


def _ledger() -> Ledger:
    from ledger.bootstrap import ConfigError, Settings, build_ledger

    try:
        return build_ledger(Settings.from_env())
    except ConfigError as err:
        raise click.ClickException(str(err)) from err


def describe(view: dict[str, Any], me: int) -> str:
    """The seat view as a few readable lines (never more than the seat may see)."""
    h = view["hand"]
    lines = [f"Hand {h['number']} · dealer seat {h['dealer']} · pool {view['pool']} · "
             f"turn-up {h['turn_up']} ({SUIT_NAMES[h['trump']] if h['trump'] is not None else '-'}"
             " are trumps)"]
    for s in view["seats"]:
        held = h["hands"].get(str(s["seat"]))
        tiles = " ".join(held) if isinstance(held, list) else f"{held['count']} tiles"
        mark = "you" if s["seat"] == me else (s["bot"] or "person")
        decided = h["decisions"].get(str(s["seat"]), "")
        lines.append(f"  seat {s['seat']} {s['name']:<10} ({mark:<9}) {decided:<5} "
                     f"tricks {h['tricks_won'][str(s['seat'])]} · balance {s['balance']} "
                     f"· score {s['score']} · {tiles}")
    for i, tr in enumerate(h["tricks"], 1):
        plays = ", ".join(f"{p['seat']}:{p['tile']}" for p in tr["plays"])
        won = f" → seat {tr['winner']}" if tr["winner"] is not None else ""
        lines.append(f"  trick {i} ({SUIT_NAMES[tr['suit']]} led): {plays}{won}")
    return "\n".join(lines)


def _label(body: dict[str, Any]) -> str:
    if body["type"] == "decide":
        extra = ""
        if body.get("take_turn_up"):
            extra = f", take the turn-up and discard {body['discard'][0]}"
        if body.get("for_pool"):
            extra += ", for the pool"
        return f"{body['choice']}{extra}"
    if body["type"] == "discard":
        return "discard " + " ".join(body["tiles"])
    suit = body.get("suit")
    return f"play {body['tile']}" + (f" leading {SUIT_NAMES[suit]}" if suit is not None else "")


def _to_command(body: dict[str, Any], seat: int) -> c.Act:
    from ledger.rules.actions import Decide, Discard, Play

    if body["type"] == "decide":
        return c.Act(Decide(seat, body["choice"], body.get("take_turn_up", False),
                            tuple(parse_tile(t) for t in body.get("discard", [])),
                            body.get("for_pool", False)))
    if body["type"] == "discard":
        return c.Act(Discard(seat, tuple(parse_tile(t) for t in body["tiles"])))
    return c.Act(Play(seat, parse_tile(body["tile"]), body.get("suit")))


@click.command("play")
@click.option("--players", type=click.IntRange(2, 4), default=4, show_default=True)
@click.option("--variant", type=click.Choice(["loo", "rounce"]), default="loo", show_default=True)
@click.option("--scoring", type=click.Choice(["pool", "points"]), default=None)
@click.option("--bot", type=click.Choice(["heuristic", "random"]), default="heuristic",
              show_default=True, help="the policy of the other seats")
@click.option("--name", default="You", show_default=True)
@click.option("--hands", "max_hands", type=int, default=3, show_default=True)
def play_cmd(players: int, variant: str, scoring: str | None, bot: str, name: str,
             max_hands: int) -> None:
    """Play seat 0 against bots in the terminal (you see exactly your seat's view)."""
    led = _ledger()
    seats = ((name, None),) + tuple((f"Bot {i}", bot) for i in range(1, players))
    try:
        table_id, _tokens, _p = led.create_table(c.CreateTable(
            variant=variant, scoring=scoring, seats=seats, first_dealer="lots",
            deal="shuffled", options={}))
    except LedgerError as err:
        raise click.ClickException(err.detail) from err
    click.echo(f"table {table_id}: you are seat 0")
    me = Viewer(admin=False, seat=0)
    played, seen = 0, 1
    while True:
        p = led.load(table_id)
        view = table_view(table_id, p, me)
        hand = view["hand"]
        if view["status"] != "playing" or hand is None:
            break
        if hand["number"] != seen:  # auto_deal started the next hand after settling
            played, seen = played + 1, hand["number"]
            click.echo(f"hand {seen - 1} settled.")
            if played >= max_hands:
                break
        if hand["phase"] == "complete":
            played += 1
            click.echo(describe(view, 0))
            click.echo(f"hand {hand['number']} settled.")
            if played >= max_hands:
                break
            led.execute(table_id, c.StartHand())
            continue
        legal = view["legal_actions"]
        if not legal:
            click.echo("waiting for the other seats…")
            break
        click.echo(describe(view, 0))
        for i, body in enumerate(legal, 1):
            click.echo(f"  [{i}] {_label(body)}")
        choice = click.prompt("your move", type=click.IntRange(1, len(legal)))
        try:
            led.execute(table_id, _to_command(legal[choice - 1], 0))
        except LedgerError as err:
            click.echo(f"refused: {err.detail}", err=True)
    final = table_view(table_id, led.load(table_id), me)
    click.echo("balances: " + ", ".join(f"{s['name']} {s['balance']}" for s in final["seats"]))


@click.command("replay")
@click.argument("table_id")
@click.argument("hand", type=int)
def replay_cmd(table_id: str, hand: int) -> None:
    """Print hand HAND of TABLE_ID trick by trick, with every tile (full record)."""
    led = _ledger()
    try:
        stored = led.store.load(table_id)
        if not stored:
            raise click.ClickException(f"no table {table_id!r}")
        mine = [s for s in stored if s.hand == hand]
        if not mine:
            raise click.ClickException(f"hand {hand} has not been played at {table_id}")
        state = project([s for s in stored if s.version <= mine[-1].version]).table
    except LedgerError as err:
        raise click.ClickException(err.detail) from err
    for s in mine:
        click.echo(f"v{s.version:<5} {s.type:<22} {_brief(s.data)}")
    assert state.hand is not None
    click.echo(f"tricks won: {dict(enumerate(state.hand.tricks_won))}")


def _brief(data: dict[str, Any]) -> str:
    parts = []
    for k, v in data.items():
        if isinstance(v, list) and v and isinstance(v[0], str):
            v = " ".join(v)
        parts.append(f"{k}={v}")
    return " ".join(parts)


@click.command("audit")
@click.argument("table_id")
def audit_cmd(table_id: str) -> None:
    """Audit TABLE_ID: hash chain, replay, chips, legality, deals; exit 1 on any failure."""
    from ledger.audit import audit

    led = _ledger()
    stored = led.store.load(table_id)
    if not stored:
        raise click.ClickException(f"no table {table_id!r}")
    result = audit(stored)
    for name, verdict in result["checks"].items():
        click.echo(f"{name:<24} {'ok' if verdict is True else 'FAILED: ' + str(verdict)}")
    click.echo(f"{result['events']} events: {'OK' if result['ok'] else 'FAILED'}")
    sys.exit(0 if result["ok"] else 1)


COMMANDS = (play_cmd, replay_cmd, audit_cmd)
