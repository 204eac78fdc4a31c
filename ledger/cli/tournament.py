"""`loo tournament`: a duplicate tournament of bot policies, played locally (no database)."""

from __future__ import annotations

import click

from ledger.core.rules.bots import POLICIES, Policy, expert
from ledger.core.rules.tournament import Timing, tournament


def _names(value: str) -> list[str]:
    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in POLICIES]
    if unknown:
        raise click.BadParameter(f"unknown bot {unknown[0]!r}: choose from "
                                 f"{', '.join(sorted(POLICIES))}")
    if len(set(names)) != len(names) or len(names) < 2:
        raise click.BadParameter("name 2 or more different bots, e.g. expert,heuristic")
    return names


@click.command("tournament", short_help="A duplicate tournament of the bots, played locally.")
@click.option("--bots", "names", default="expert,heuristic,random", show_default=True,
              callback=lambda _c, _p, v: _names(v), help="the policies, comma-separated")
@click.option("--hands", type=click.IntRange(min=1), default=400, show_default=True,
              help="hands dealt (each is played once per seating)")
@click.option("--seats", type=click.IntRange(2, 4), default=4, show_default=True)
@click.option("--variant", type=click.Choice(["loo", "rounce"]), default="loo",
              show_default=True)
@click.option("--scoring", type=click.Choice(["pool", "points"]), default=None,
              help="[default: pool for Loo, points for Rounce]")
@click.option("--samples", type=click.IntRange(min=1), default=48, show_default=True,
              help="the expert's guesses a move (no time limit: the run is reproducible)")
@click.option("--seed", type=int, default=1, show_default=True)
def tournament_cmd(names: list[str], hands: int, seats: int, variant: str,
                   scoring: str | None, samples: int, seed: int) -> None:
    """Play the bots against each other on the same deals from every seat (duplicate),
    through the service's rules engine, and print the standings: chips (pool) or points
    per seat-hand with 95% confidence intervals.

    \b
    Policy i sits on seats i, i+k, ...; every set of 4 deals is played once per rotation
    of that seating, so each policy meets the same tiles from every seat.
    """
    if scoring is None:
        scoring = "points" if variant == "rounce" else "pool"
    if variant == "rounce" and scoring != "points":
        raise click.BadParameter("Domino Rounce is always scored in points", param_hint="--scoring")
    if len(names) > seats:
        raise click.BadParameter(f"{len(names)} bots at {seats} seats", param_hint="--bots")
    table: dict[str, Policy] = {n: POLICIES[n][0] for n in names}
    if "expert" in table:
        table["expert"] = expert(None, samples)
    per_set = 4
    deal_sets = max(2, -(-hands // per_set))  # whole numbers: a float rounds huge ones
    unit = "chips" if scoring == "pool" else "points"
    click.echo(f"tournament: {', '.join(names)} at {seats} seats, {variant} {scoring}; "
               f"{deal_sets * per_set} hands dealt in sets of {per_set}, each played from "
               "every seating (duplicate)"
               + (f"; expert: {samples} guesses a move" if "expert" in names else ""))
    timing = Timing()
    standings = tournament(names, table, seats=seats, deal_sets=deal_sets, hands=per_set,
                           variant=variant, scoring=scoring, seed=seed, timing=timing)
    click.echo(f"{'rank':<5}{'bot':<11}{unit + '/hand':>12}  {'95% CI':<19}{'seat-hands':>11}"
               f"{'ms/move p50':>13}")
    for s in standings:
        mean, low, high = s.per_hand
        times = sorted(timing.times.get(s.policy, [])) or [0.0]
        p50 = times[len(times) // 2] * 1000
        click.echo(f"{s.rank:<5}{s.policy:<11}{mean:>+12.2f}  [{low:+.2f}, {high:+.2f}]"
                   f"{'':<{max(0, 19 - len(f'[{low:+.2f}, {high:+.2f}]'))}}"
                   f"{s.seat_hands:>11,}{p50:>13.1f}")
