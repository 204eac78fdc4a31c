"""decide(projection, command) -> events: one handler per command, all pure but for `seeds`."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace

from ledger.app.projector import Projection
from ledger.core import commands as c
from ledger.core import events as ev
from ledger.core.errors import Conflict, Invalid
from ledger.core.rules import table as tb
from ledger.core.rules.bots import DETERMINISTIC, NO_DRAWS, POLICIES
from ledger.core.rules.legal import legal_actions
from ledger.core.rules.options import make_options
from ledger.core.rules.tiles import name as tile_name
from ledger.core.rules.timers import seat_on_the_clock
from ledger.core.rules.timers import time_out as rules_time_out
from ledger.core.rules.timers import wake as wake_timers
from ledger.core.rules.view import seat_view

Seeds = Callable[[], bytes]
ALL_BOT_POOL_MAX_HANDS = 100  # API.md, Tables: an all-bot pool table without max_hands


def create_table(cmd: c.CreateTable, tokens: dict, seeds: Seeds) -> list[ev.Event]:
    """A new table; a shuffled table with auto_deal starts its first hand at once."""
    opts = make_options(cmd.variant, cmd.scoring, len(cmd.seats), cmd.options, cmd.deal)
    if (all(bot is not None for _name, bot in cmd.seats) and opts.scoring == "pool"
            and opts.max_hands is None and opts.deal == "shuffled"):
        # A pool game never ends by itself: an all-bot one stops after this many hands.
        opts = replace(opts, max_hands=ALL_BOT_POOL_MAX_HANDS)
    for _name, bot in cmd.seats:
        if bot is not None and bot not in POLICIES:
            raise Invalid("invalid_option", f"unknown bot {bot!r}: choose one of "
                          f"{', '.join(sorted(POLICIES))}", field="seats")
        if bot is not None and opts.deal != "shuffled":
            raise Invalid("invalid_option", "bots play only on shuffled tables: on recorded "
                          "and results tables the scorer enters every move", field="seats")
    first_dealer = cmd.first_dealer
    if first_dealer is None:
        # §9: Rounce's first trump-holder is chosen by lots unless the table names a seat;
        # Loo (§2) leaves it to the table: an unnamed first dealer is seat 0.
        first_dealer = "lots" if opts.is_rounce else 0
    out = tb.create(opts, list(cmd.seats), first_dealer, tokens, seeds(), club=cmd.club,
                    season=cmd.season, members=cmd.members)
    if opts.deal == "shuffled" and opts.auto_deal:
        out += tb.start_hand(tb.replay(out), seed=seeds())
    return out


def start_hand(p: Projection, cmd: c.StartHand, seeds: Seeds) -> list[ev.Event]:
    t = p.table
    mode = t.opts.deal
    if mode == "shuffled":
        if cmd.hands is not None or cmd.turn_up is not None or cmd.result is not None:
            raise Invalid("invalid_hand", "this table is shuffled by the service: send an "
                          "empty body to start the next hand")
        if tb.dealt_untouched(t):
            # API.md leaves open whether auto_deal deals the first hand (it does, at the
            # table's creation): a client that starts every hand itself gets this one, and
            # nothing is appended (a key sent with it is kept all the same), unless the turn
            # timers rest: the admin's start wakes them as a deal does (timers_woken).
            return wake_timers(t)
        return tb.start_hand(t, seed=seeds())
    if mode == "recorded":
        if cmd.hands is None or cmd.turn_up is None or cmd.result is not None:
            raise Invalid("invalid_hand", 'a recorded table needs the deal: {"hands": '
                          '{"0": [5 tiles], ...}, "turn_up": "6-2"}')
        _check_recorded_deal(t, cmd)
        return tb.start_hand(t, recorded=(cmd.hands, cmd.turn_up))
    if cmd.result is None or cmd.hands is not None or cmd.turn_up is not None:
        raise Invalid("invalid_hand", 'a results table needs the outcome: {"result": '
                      '{"decisions": {...}, "tricks": {...}}}')
    events = tb.start_hand(t, result=cmd.result)
    events += tb.settle(tb.replay(events, t))  # results settle at once (API.md)
    after = tb.replay(events, t)
    if after.status == "playing" and tb.hands_done(after):  # as settle() closes the others
        events += tb.close(after, reason="max_hands")
    return events


def _check_recorded_deal(t: tb.Table, cmd: c.StartHand) -> None:
    assert cmd.hands is not None and cmd.turn_up is not None
    if len(cmd.hands) != t.players or any(len(h) != 5 for h in cmd.hands):
        raise Invalid("invalid_deal", f"deal five tiles to each of the {t.players} seats",
                      rule="3.2")
    places: dict[int, list[str]] = {}  # tile -> where it was entered, in the body's order
    for seat, held in enumerate(cmd.hands):
        for x in held:
            places.setdefault(x, []).append(f"seat {seat}'s hand")
    places.setdefault(cmd.turn_up, []).append("the turn-up")
    for x, where in places.items():
        if len(where) > 1:
            # §1: a set holds each of the 28 tiles once; name the tile and where it was entered.
            at = (f"twice in {where[0]}" if where[0] == where[1]
                  else f"in {where[0]} and " + ("as " if where[1] == "the turn-up" else "in ")
                  + where[1])
            raise Invalid("invalid_deal", f"{tile_name(x)} appears twice in the deal ({at}): each "
                          "of the 28 tiles is dealt once; enter the tiles really dealt",
                          rule="3")


def act(p: Projection, cmd: c.Act) -> list[ev.Event]:
    return tb.act(p.table, cmd.action)


def play_bot(p: Projection) -> tuple[list[ev.Event], str]:
    """The bot to act chooses from its seat view only; returns events and 'policy@version'."""
    t = p.table
    seat = bot_to_act(t)
    if seat is None:
        raise Conflict("no_bot_turn", "no bot is to act at this table")
    assert t.hand is not None
    name = t.bots[seat]
    assert name is not None
    policy, version = POLICIES[name]
    rng = NO_DRAWS if name in DETERMINISTIC else random.Random(f"{t.hand.commitment}:{p.version}")
    action = policy(seat_view(t.hand, seat), legal_actions(t.hand, seat), rng)
    return tb.act(t, action), f"{name}@{version}"


def time_out(p: Projection, cmd: c.TimeOut) -> list[ev.Event]:
    return rules_time_out(p.table, cmd.seat)


def timer_owed(p: Projection) -> tuple[int, int] | None:
    """(seat, seconds) when a person is to act at a table with options.turn_seconds."""
    seat = seat_on_the_clock(p.table)
    if seat is None:
        return None
    seconds = p.table.opts.turn_seconds
    assert seconds is not None
    return seat, seconds


SLOW_POLICIES = frozenset({"expert"})  # they search: up to 200 ms a move


def slow_bots(t: tb.Table) -> bool:
    """A bot at the table searches for its moves (its runs get a time budget)."""
    return any(b in SLOW_POLICIES for b in t.bots)


def bot_to_act(t: tb.Table) -> int | None:
    """The bot seat whose turn it is, if any."""
    h = t.hand
    if t.status != "playing" or h is None or not t.live or h.turn is None or h.mode != "shuffled":
        return None
    return h.turn if t.bots[h.turn] is not None else None


def settle(p: Projection, seeds: Seeds) -> list[ev.Event]:
    """Settle the complete hand; then the table closes itself after its `max_hands`, or
    with auto_deal the next hand starts in the same batch (all-bot tables too)."""
    t = p.table
    events = tb.settle(t)
    after = tb.replay(events, t)
    if after.status == "playing" and tb.hands_done(after):
        events += tb.close(after, reason="max_hands")
    elif after.status == "playing" and t.opts.deal == "shuffled" and t.opts.auto_deal:
        events += tb.start_hand(after, seed=seeds())
    return events


def add_spectator(p: Projection, cmd: c.AddSpectator) -> list[ev.Event]:
    return tb.add_spectator(p.table, cmd.id, cmd.token_hash, cmd.label)


def revoke_spectator(p: Projection, cmd: c.RevokeSpectator) -> list[ev.Event]:
    return tb.revoke_spectator(p.table, cmd.id)


def void_hand(p: Projection, cmd: c.VoidHand) -> list[ev.Event]:
    return tb.void(p.table, cmd.number, cmd.reason)


def close(p: Projection) -> list[ev.Event]:
    return tb.close(p.table)


def next_command(p: Projection) -> c.Command | None:
    """What the workers should do next at this table, if anything."""
    if tb.needs_settlement(p.table):
        return c.SettleHand()
    if bot_to_act(p.table) is not None:
        return c.PlayBot()
    return None
