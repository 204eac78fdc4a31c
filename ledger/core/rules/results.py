"""`results` tables: a hand entered as its decisions and trick counts, checked by the rules."""

from __future__ import annotations

from typing import Any

from ledger.core import events as ev
from ledger.core.errors import Invalid
from ledger.core.rules.deal import deal_order
from ledger.core.rules.hand import TRICKS, Hand, evolve, looed_seats, violation
from ledger.core.rules.options import Options


def result_events(h: Hand, result: dict[str, Any]) -> list[ev.Event]:
    """The events of a hand given as a result; raises RuleViolation/Invalid if impossible."""
    opts, n, dealer = h.opts, h.players, h.dealer
    decisions = _decisions(result.get("decisions"), n)
    for_pool = result.get("for_pool", False)
    if not isinstance(for_pool, bool):
        raise Invalid("invalid_result", "for_pool must be true or false", field="for_pool")
    others = [s for s in deal_order(n, dealer) if s != dealer]
    if any(decisions.get(s) is None for s in others):
        missing = [s for s in others if decisions.get(s) is None]
        raise Invalid("invalid_result", f"decisions must name every seat: missing {missing}",
                      field="decisions")
    # §4 one seat after another: an impossible choice of the others (a drop in 2-player Loo,
    # a miss when none is left) is the fault to name, before any conclusion about the
    # dealer's turn drawn from those choices ("every other player dropped" is none when a
    # drop could not be made).
    _check_choices(opts, [decisions[s] for s in others])
    others_in = [s for s in others if decisions[s] != "drop"]
    if not others_in:
        if decisions.get(dealer) not in (None, "play") or for_pool:
            raise violation("invalid_result", "4", "every other player dropped: the dealer "
                            "wins without play and makes no decision")
        decisions.pop(dealer, None)
    elif dealer not in decisions:
        if len(others_in) != 1 or not opts.drop_allowed:  # 2-player Loo: he cannot have dropped
            raise Invalid("invalid_result", f"the dealer's decision (seat {dealer}) is needed",
                          field="decisions")
        decisions[dealer] = "drop"  # omitted with one player left: the dealer dropped
    drops = [s for s, c in decisions.items() if c == "drop"]
    _check_choices(opts, list(decisions.values()))  # the dealer's own choice too
    if for_pool and not (opts.scoring == "pool" and n == 4 and decisions.get(dealer) == "play"
                         and len(others_in) == 1 and decisions[others_in[0]] == "miss"):
        raise violation("for_pool_not_allowed", "4", "only the dealer of a 4-player pool "
                        "game, when the one other player still in took the miss, plays for "
                        "the pool")
    out: list[ev.Event] = []
    for s in deal_order(n, dealer):
        if s in decisions:
            out.append(ev.PlayerDecided(seat=s, choice=decisions[s],
                                        for_pool=for_pool and s == dealer))
    state = h
    for e in out:
        state = evolve(state, e)
    active = state.active
    tricks = _tricks(result.get("tricks"), n)
    if len(active) == 1:
        (winner,) = active
        if tricks is not None and tricks != tuple(TRICKS if s == winner else 0 for s in range(n)):
            raise violation("invalid_result", "4", f"only seat {winner} is left in: "
                            "it wins all five tricks without play")
        reason = "all_dropped" if winner == dealer and not others_in else "one_left"
        won = ev.HandWonWithoutPlay(seat=winner, reason=reason)
        state = evolve(state, won)
        return out + [won, ev.HandCompleted(tricks_won=state.tricks_won, looed=(),
                                            dropped=tuple(sorted(drops)))]
    if tricks is None:
        raise Invalid("invalid_result", "tricks are needed: the hand was played",
                      field="tricks")
    if sum(tricks) != TRICKS:
        raise violation("invalid_result", "6", f"tricks must add up to 5 (got {sum(tricks)})")
    bad = [s for s in drops if tricks[s]]
    if bad:
        raise violation("invalid_result", "4", f"seat {bad[0]} dropped and cannot win a trick")
    return out + [ev.HandCompleted(tricks_won=tricks, looed=looed_seats(state, tricks),
                                   dropped=tuple(sorted(drops)), for_pool=for_pool)]


def _check_choices(opts: Options, choices: list[str]) -> None:
    """§4: drops only where allowed; no more misses than the number of players allows."""
    if "drop" in choices and not opts.drop_allowed:
        raise violation("drop_not_allowed", "4", "dropping is allowed only with 3 or 4 "
                        "players in Loo")
    if choices.count("miss") > opts.max_misses:
        raise violation("miss_unavailable", "4", f"at most {opts.max_misses} miss"
                        + ("es" if opts.max_misses > 1 else "")
                        + f" with {opts.players} players")


def _decisions(raw: Any, n: int) -> dict[int, str]:
    if not isinstance(raw, dict):
        raise Invalid("invalid_result", 'decisions must be an object like {"0": "play"}',
                      field="decisions")
    out: dict[int, str] = {}
    for key, choice in raw.items():
        seat = _seat(key, n, "decisions")
        if choice not in ("play", "miss", "drop"):
            raise Invalid("invalid_result", f"seat {seat}: choose play, miss or drop",
                          field="decisions")
        out[seat] = choice
    return out


def _tricks(raw: Any, n: int) -> tuple[int, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise Invalid("invalid_result", 'tricks must be an object like {"0": 3}', field="tricks")
    counts = [0] * n
    for key, count in raw.items():
        seat = _seat(key, n, "tricks")
        if isinstance(count, bool) or not isinstance(count, int) or not 0 <= count <= TRICKS:
            raise Invalid("invalid_result", f"seat {seat}: tricks must be 0..5", field="tricks")
        counts[seat] = count
    return tuple(counts)


def _seat(key: Any, n: int, field: str) -> int:
    try:
        seat = int(key)
    except (TypeError, ValueError):
        seat = -1
    if not 0 <= seat < n or str(seat) != str(key):
        raise Invalid("invalid_result", f"{key!r} is not a seat (0..{n - 1})", field=field)
    return seat
