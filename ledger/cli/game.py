"""`loo play`: the game from a terminal, one seat against bots, through the same handler."""

from __future__ import annotations

import sys
import unicodedata
from collections.abc import Callable
from typing import Any

import click

from ledger.app.service import Ledger
from ledger.app.views import Viewer, table_view
from ledger.cli.output import PIPE_CLOSED, silence_stdout, why
from ledger.cli.record import plural, render_hand, trick_line
from ledger.core import commands as c
from ledger.core.errors import LedgerError
from ledger.core.names import NAME_MAX, name_problem
from ledger.core.rules.tiles import NAMES, SUIT_NAMES, is_trump, parse_tile, suits_of
from ledger.store.base import VersionConflict


# Configuration errors are left to the `loo` group (ledger.cli.LooGroup): one line naming the
# variable, exit status 2, the same for every command.
def _ledger() -> Ledger:
    """A ledger that enqueues nothing: `loo play` runs its bots and settlements itself, so
    the game goes on whether REDIS_URL is set or not, and leaves no jobs on the queue."""
    from ledger.bootstrap import Settings, bootstrap

    container = bootstrap(Settings.from_env())  # checks every variable, as other commands do
    if container.queue is not None:
        container.queue.connection.close()
    led = Ledger(container.store)
    led.signer = container.ledger.signer  # checkpoints signed with the deployment's key
    return led


# ---- the seat's view ---------------------------------------------------------------------
def describe(view: dict[str, Any], me: int) -> str:
    """The seat view as a few readable lines (never more than the seat may see)."""
    h = view["hand"]
    names = {s["seat"]: s["name"] for s in view["seats"]}
    points = view["scoring"] == "points"
    trump = h["trump"]
    role = "trump-holder" if view["variant"] == "rounce" else "dealer"
    head = f"Hand {h['number']} · {role} {names[h['dealer']]} (seat {h['dealer']})"
    if not points:
        head += f" · pool {view['pool']}"
    lines = [head]
    marked = False
    if h["turn_up"] is not None:
        taken = f" · taken into hand by the {role}" if h["turn_up_taken"] else ""
        lines.append(f"  turn-up {h['turn_up']}: {SUIT_NAMES[trump]} are trumps{taken}")
    for s in view["seats"]:
        seat = s["seat"]
        held = h["hands"].get(str(seat))
        if isinstance(held, list):
            trumps = {t for t in held if trump is not None and is_trump(parse_tile(t), trump)}
            marked = marked or bool(trumps)
            tiles = " ".join(t + ("*" if t in trumps else "") for t in held)
            tiles = (f"your tiles: {tiles}" if seat == me else tiles) or "no tiles"
        else:
            tiles = plural(held["count"], "tile") if held else ""
        mark = "you" if seat == me else (s["bot"] or "person")
        decided = h["decisions"].get(str(seat), "")
        if decided == "play" and h["for_pool"] and seat == h["dealer"]:
            decided = "pool"
        score = f"points {s['score']}" if points else f"chips {s['balance']}"
        lines.append(f"  seat {seat} {s['name']:<10} ({mark:<9}) {decided:<5} "
                     f"tricks {h['tricks_won'][str(seat)]} · {score} · {tiles}")
    for i, tr in enumerate(h["tricks"], 1):
        lines.append(f"  trick {i}: " + trick_line(tr["plays"], tr["suit"], trump,
                                                     tr["winner"], names))
    if marked:
        lines.append("  (* a trump)")
    return "\n".join(lines)


def _asked(view: dict[str, Any]) -> str:
    """What the seat is asked to do now, in words."""
    h = view["hand"]
    names = {s["seat"]: s["name"] for s in view["seats"]}
    if h["phase"] == "deciding":
        words = {"play": "play (keep your tiles)", "miss": "miss (exchange them)",
                 "drop": "drop (sit this hand out)"}
        offered = list(dict.fromkeys(b["choice"] for b in view["legal_actions"]))
        said = [words[x] for x in offered]
        text = said[0] if len(said) == 1 else ", ".join(said[:-1]) + " or " + said[-1]
        role = "trump-holder" if view["variant"] == "rounce" else "dealer"
        dealer = f" (you are the {role})" if h["dealer"] == h["turn"] else ""
        return f"Your decision{dealer}: {text}"
    if h["phase"] == "discarding":
        n = len(view["legal_actions"][0]["tiles"])
        return f"Discard {plural(n, 'tile')} face down (nobody else sees discards)"
    current = h["tricks"][-1] if h["tricks"] and h["tricks"][-1]["winner"] is None else None
    number = len(h["tricks"]) + (0 if current else 1)
    if current is None:
        return f"You lead trick {number}"
    leader = names[current["plays"][0]["seat"]]
    return f"Trick {number}: {leader} led {SUIT_NAMES[current['suit']]}; your turn"


def _label(body: dict[str, Any], turn_up: str | None = None) -> str:
    if body["type"] == "decide":
        text = body["choice"]
        if body.get("take_turn_up"):
            tile = f" {turn_up}" if turn_up else ""
            text += f", take the turn-up{tile} and discard {body['discard'][0]}"
        if body.get("for_pool"):
            text += ", for the pool"
        return text
    if body["type"] == "discard":
        return "discard " + " ".join(body["tiles"])
    suit = body.get("suit")
    return f"play {body['tile']}" + (f" leading {SUIT_NAMES[suit]}" if suit is not None else "")


def _to_command(body: dict[str, Any], seat: int) -> c.Act:
    from ledger.core.rules.actions import Decide, Discard, Play

    if body["type"] == "decide":
        return c.Act(Decide(seat, body["choice"], body.get("take_turn_up", False),
                            tuple(parse_tile(t) for t in body.get("discard", [])),
                            body.get("for_pool", False)))
    if body["type"] == "discard":
        return c.Act(Discard(seat, tuple(parse_tile(t) for t in body["tiles"])))
    return c.Act(Play(seat, parse_tile(body["tile"]), body.get("suit")))


# ---- reading a move ----------------------------------------------------------------------
class Quit(Exception):
    """The person asked to leave (q, or the end of the input)."""


MOVE_HELP = """\
Answer with the number of a listed move, or type it:
  play | miss | drop            your decision before the tricks
  take 6-3                      (dealer) play, take the turn-up and discard 6-3
  pool                          (dealer) play for the pool, where that is allowed
  6-3 2-0                       the tiles to discard after a miss
  6-3                           play 6-3; leading, the end typed first is the suit
                                declared (3-6 leads threes); a trump or a double leads
                                its own suit
  hint                          the expert's move for you now, and why
  q                             leave: the table is closed (Ctrl-D and Ctrl-C too)"""


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    norm = {k: sorted(v) if isinstance(v, list) else v for k, v in a.items()}
    return norm == {k: sorted(v) if isinstance(v, list) else v for k, v in b.items()}


def parse_move(text: str, view: dict[str, Any]) -> dict[str, Any]:
    """An action body from what the person typed; ValueError with a clear message if none.

    A well-formed move that the list does not offer is returned all the same: the ledger
    then refuses it with the rule it breaks (RULES.md), which says more than "not listed".
    """
    legal = view["legal_actions"]
    words = text.lower().replace(",", " ").split()
    if len(words) == 1 and words[0].isdecimal():
        n = int(words[0])
        if 1 <= n <= len(legal):
            return legal[n - 1]
        raise ValueError(f"there is no move {n}: choose a number from 1 to {len(legal)}")
    h = view["hand"]
    hint = f"type a number from 1 to {len(legal)}, a move such as {_example(legal[0])}, " \
           "? for help or q to quit"
    if h["phase"] == "deciding":
        choice = next((w for w in words if w in ("play", "stand", "miss", "drop")), None)
        tiles = [w for w in words if w not in ("play", "stand", "miss", "drop", "take",
                                                "pool", "for", "the", "turn-up", "and",
                                                "discard")]
        take = "take" in words
        if choice is None and (take or "pool" in words):
            choice = "play"
        if choice is None or (tiles and not take) or len(tiles) > 1 or (take and not tiles):
            raise ValueError(f"not a decision: {hint}")
        body: dict[str, Any] = {"type": "decide",
                                "choice": "play" if choice == "stand" else choice}
        if take:
            body |= {"take_turn_up": True, "discard": [NAMES[_tile(tiles[0])]]}
        if "pool" in words:
            body["for_pool"] = True
    elif h["phase"] == "discarding":
        if not words or not all("-" in w for w in words):
            raise ValueError(f"name the tiles to discard: {hint}")
        body = {"type": "discard", "tiles": [NAMES[_tile(w)] for w in words]}
    else:
        if len(words) != 1 or "-" not in words[0]:
            raise ValueError(f"name one tile to play: {hint}")
        tile = _tile(words[0])
        body = {"type": "play", "tile": NAMES[tile]}
        current = h["tricks"][-1] if h["tricks"] and h["tricks"][-1]["winner"] is None else None
        if current is None:  # a lead declares its suit: the end typed first (§6 Leading)
            suits = suits_of(tile, h["trump"])
            first = int(words[0].split("-")[0])
            body["suit"] = first if first in suits else suits[0]
    return next((b for b in legal if _same(b, body)), body)


def _tile(word: str) -> int:
    try:
        return parse_tile(word)
    except LedgerError as err:
        raise ValueError(err.detail) from None


def _example(body: dict[str, Any]) -> str:
    if body["type"] == "play":
        return body["tile"]
    if body["type"] == "discard":
        return " ".join(body["tiles"])
    return body["choice"]


def read_move(view: dict[str, Any],
              hint: Callable[[], str] | None = None) -> dict[str, Any]:
    """Ask until the answer is a move; Quit on q or at the end of the input; `hint` (the
    expert's advice) when asked for one."""
    while True:
        click.echo("your move: ", nl=False)
        try:
            line = input()
        except EOFError:
            click.echo()
            raise Quit("you left (end of input)") from None
        text = "".join(ch for ch in line if unicodedata.category(ch)[0] != "C").strip()
        if not text:
            click.echo(f"  type a number from 1 to {len(view['legal_actions'])} "
                       "(? for help, q to quit)")
            continue
        if text.lower() in ("q", "quit", "exit"):
            raise Quit("you left")
        if text in ("?", "h", "help") or text.lower() == "help":
            click.echo(MOVE_HELP)
            continue
        if text.lower() == "hint" and hint is not None:
            click.echo(f"  hint: {hint()}")
            continue
        try:
            return parse_move(text, view)
        except ValueError as err:
            click.echo(f"  {err}")


# ---- loo play ----------------------------------------------------------------------------
def _name(value: str) -> str:
    value = value.strip()
    if name_problem(value) is not None:
        raise click.BadParameter(f"a name is 1 to {NAME_MAX} printable characters")
    return value


@click.command("play", short_help="Play seat 0 against bots in the terminal.")
@click.option("--players", type=click.IntRange(2, 4), default=4, show_default=True,
              help="seats at the table: you and the bots")
@click.option("--variant", type=click.Choice(["loo", "rounce"]), default="loo", show_default=True,
              help="Domino Loo, or Domino Rounce (the rule book, /docs/rules, §9)")
@click.option("--scoring", type=click.Choice(["pool", "points"]), default=None,
              help="chips in a pool (§8) or points (§9)  [default: pool for Loo, points "
              "for Rounce, which is always scored in points]")
@click.option("--bot", type=click.Choice(["heuristic", "random", "expert"]), default="heuristic",
              show_default=True, help="the policy of the other seats")
@click.option("--name", default="You", show_default=True, callback=lambda _c, _p, v: _name(v),
              help="your name at the table")
@click.option("--hands", "max_hands", type=click.IntRange(min=0), default=3, show_default=True,
              help="hands to play before the table is closed (0: until a points game is "
              "won, or you leave)")
def play_cmd(players: int, variant: str, scoring: str | None, bot: str, name: str,
             max_hands: int) -> None:
    """Play seat 0 against bots; you see exactly what your seat may see.

    \b
    At each turn the moves you may make are listed. Answer with their number,
    or type the move: play, miss, drop, "take 6-3" (the dealer takes the
    turn-up and discards 6-3), "pool" (the dealer plays for the pool, where
    allowed), the tiles to discard after a miss ("6-3 2-0"), or the tile to
    play ("6-3"; when you lead, the end typed first is the suit you declare:
    "3-6" leads threes). A move the rules forbid is refused with the rule it
    breaks. During the game, ? lists what you can type.

    \b
    When the hands are played, or when you leave (q, Ctrl-D or Ctrl-C), the
    table is closed: a hand left unfinished is recorded as abandoned (§8.8).
    Then `loo replay TABLE N` shows hand N and `loo audit TABLE` checks it all.
    """
    if variant == "rounce" and scoring == "pool":  # a usage error, as `loo tournament` says
        raise click.BadParameter("Domino Rounce is always scored in points (§9)",
                                 param_hint="'--scoring'")
    for stream, said in ((sys.stdin, "input is closed: your moves are read from it"),
                         (sys.stdout, "output is closed: the table is shown there")):
        if stream is None:  # (`loo play <&-`): the table would be made and left waiting
            click.echo(f"error: standard {said}; nothing was created", err=True)
            raise SystemExit(2)
    led = _ledger()
    seats = ((name, None),) + tuple((f"Bot {i}", bot) for i in range(1, players))
    try:
        # The command deals each hand itself, so it stops after the last one it was asked
        # for (with auto_deal the next hand and its stakes would already be on the table).
        table_id, _tokens, p = led.create_table(c.CreateTable(
            variant=variant, scoring=scoring, seats=seats, first_dealer="lots",
            deal="shuffled", options={"auto_deal": False, "hints": True}))
    except LedgerError as err:
        raise click.ClickException(err.detail) from err
    t = p.table
    assert t.dealer is not None
    status = 0
    try:
        click.echo(f"table {table_id}: you are seat 0 ({name}); "
                   f"{'Domino Rounce' if t.opts.is_rounce else 'Loo'}, {t.opts.scoring} scoring")
        click.echo(f"first {'trump-holder' if t.opts.is_rounce else 'dealer'} by lots: "
                   f"{t.names[t.dealer]} (seat {t.dealer}) drew the highest tile")
        ending = _play(led, table_id, max_hands)
    except Quit as why:
        ending = str(why)
    except KeyboardInterrupt:
        click.echo()
        ending, status = "interrupted", 130
    except OSError as err:
        # The reader left (`loo play | head`): close the table like a quit, with nothing
        # more to print and the status of a process whose pipe closed (128 + SIGPIPE).
        # Another failure of the terminal or the output (a full disk): the same, said in
        # one line on standard error, status 1.
        silence_stdout()
        ending, status = "output closed", _failed(err, table_id)
    try:
        _finish(led, table_id, ending)
        sys.stdout.flush()  # a closed pipe shows here, not at exit where nothing can close
    except OSError as err:
        silence_stdout()
        if led.load(table_id).table.status == "playing":
            _finish(led, table_id, ending)
        status = status or _failed(err, table_id)
    sys.exit(status)


def _failed(err: OSError, table_id: str) -> int:
    """The exit status for an input or output error, said on stderr unless a pipe closed."""
    if isinstance(err, BrokenPipeError):
        return PIPE_CLOSED
    click.echo(f"error: cannot go on: {why(err)}; table {table_id} is closed", err=True)
    return 1


def _play(led: Ledger, table_id: str, max_hands: int) -> str:
    """Run the table until the game ends or `max_hands` are played; the reason it stopped."""
    from ledger.app.handlers import next_command

    me = Viewer(admin=False, seat=0)
    played, summarised = 0, 0
    while True:
        p = led.load(table_id)
        t = p.table
        if next_command(p) is not None:  # the bots' turns and settlements (see _ledger)
            led.advance(table_id, p.version)
            continue
        if t.hand is not None and not t.live and t.hand.number != summarised:
            summarised = t.hand.number
            played += 1
            click.echo("\n".join(render_hand(led.store.load(table_id), summarised,
                                             parts=("tricks", "result"))))
            click.echo(f"hand {summarised} settled.\n")
        if t.status != "playing":
            return "the game is over"
        if t.hand is None or not t.live:
            if max_hands and played >= max_hands:
                return f"{plural(played, 'hand')} played"
            led.execute(table_id, c.StartHand())
            continue
        view = table_view(table_id, p, me)
        legal = view["legal_actions"]
        if not legal:  # only seat 0 is a person: a live hand waits on it or on a bot
            raise click.ClickException(f"table {table_id} waits on no one: cannot go on")
        click.echo(describe(view, 0))
        click.echo(_asked(view) + ":")
        for i, body in enumerate(legal, 1):
            click.echo(f"  [{i}] {_label(body, view['hand']['turn_up'])}")
        body = read_move(view, lambda p=p: _hint(p))
        try:
            led.execute(table_id, _to_command(body, 0), loaded=p)
        except VersionConflict:
            click.echo("the table moved on meanwhile; here it is again")
        except LedgerError as err:
            rule = f" (rule {err.rule}, /docs/rules#rule-{err.rule})" if err.rule else ""
            click.echo(f"refused{rule}: {err.detail}")
        click.echo()


def _hint(p: Any) -> str:
    """The expert's move for seat 0, from seat 0's view (as GET /v1/tables/{id}/hint)."""
    from ledger.app.hints import hint

    return str(hint(p, 0)["why"])  # it names the move first


def _finish(led: Ledger, table_id: str, ending: str) -> None:
    """Close the table (the tokens were never shown, so nobody else could) and sum up."""
    p = led.load(table_id)
    t = p.table
    closed = ""
    if t.status == "playing":
        abandoned = t.hand.number if t.hand is not None and t.live else None
        for _ in range(5):
            try:
                led.execute(table_id, c.CloseTable())
                break
            except VersionConflict:  # another writer moved first: close the newer state
                continue
        t = led.load(table_id).table
        closed = "; the table is closed" + (f", hand {abandoned} abandoned" if abandoned else "")
    click.echo(f"{ending}{closed}.")
    if t.opts.scoring == "points":
        click.echo("points: " + ", ".join(f"{t.names[s]} {t.scores[s]}"
                                          for s in range(t.players)))
        if t.winner is not None:
            click.echo(f"{t.names[t.winner]} wins the game.")
    else:
        click.echo("balances: " + ", ".join(f"{t.names[s]} {t.balances[s]}"
                                            for s in range(t.players))
                   + f" · pool left over {t.pool}")
    click.echo(f"replay a hand: loo replay {table_id} 1 · check the record: "
               f"loo audit {table_id}")
