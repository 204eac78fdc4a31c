"""`loo club ...` and `loo standings`: the scorer at the desk, on the configured store."""

from __future__ import annotations

import csv
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click

from ledger.app.clubs import Clubs
from ledger.cli.output import require_stdout, show_once
from ledger.core import club as cl
from ledger.core.errors import LedgerError
from ledger.store.base import StoreError

# A NUL, or a lone surrogate: what an argument's bytes that are not UTF-8 decode to.
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")

STANDINGS_FIELDS = ("rank", "member", "name", "tables", "hands", "chips", "points",
                    "games_won", "tricks", "loos", "looed_chips")


@contextmanager
def _clubs(create: bool = False) -> Iterator[Clubs]:
    """The clubs of DATABASE_URL; a refusal is one line on stderr and exit status 1. Only
    `create` makes a ledger that is not there: the others need a club already in one."""
    from ledger.bootstrap import Settings, bootstrap

    container = bootstrap(Settings.from_env(), create=create)
    try:
        yield Clubs(container.ledger)
    except LedgerError as err:
        raise click.ClickException(err.detail) from None
    except StoreError as err:
        raise click.ClickException(str(err)) from None
    finally:
        container.close()


def _valid(schema: str, body: dict[str, Any], hints: dict[str, str]) -> None:
    """What the API would refuse (schemas/requests.py) is a usage error here, naming it."""
    from marshmallow import ValidationError

    import schemas.requests as rq

    try:
        getattr(rq, schema)().load(body)
    except ValidationError as err:
        field, said = next(iter(err.normalized_messages().items()))
        text = "; ".join(str(m).rstrip(".") for m in said) if isinstance(said, list) else str(said)
        raise click.BadParameter(text, param_hint=hints.get(field, field)) from None
    for field, value in body.items():  # what the API refuses as invalid_text (a 500 here)
        if isinstance(value, str) and _UNSTORABLE.search(value):
            raise click.BadParameter("text may not hold a NUL character or bytes that are "
                                     "not UTF-8", param_hint=hints.get(field, field))


@click.group("club", short_help="Clubs: create one, add and list its members.")
def club_cmd() -> None:
    """A club keeps its members, seasons and tables (see the README's club walk-through)."""


@club_cmd.command("create")
@click.argument("name")
def create_cmd(name: str) -> None:
    """Create club NAME; prints its id and the first owner token (shown once)."""
    _valid("ClubIn", {"name": name}, {"name": "NAME"})
    require_stdout("the owner token")
    with _clubs(create=True) as clubs:
        loaded, token = clubs.create(name.strip(), None, None)
    show_once([f"club {loaded.id} ({loaded.club.name})",
               f"owner token (shown once, keep it): {token}"],
              f"club {loaded.id} was created")


@club_cmd.group("members", short_help="Add and list a club's members.")
def members_cmd() -> None:
    """A club's members: the people (and named bots) who sit at its tables."""


@members_cmd.command("add")
@click.argument("club_id", metavar="CLUB")
@click.argument("name")
@click.option("--external-id", default=None, help="the club's own membership number")
def members_add(club_id: str, name: str, external_id: str | None) -> None:
    """Add member NAME to CLUB; prints the new member's id."""
    _valid("MemberIn", {"name": name, "external_id": external_id},
           {"name": "NAME", "external_id": "--external-id"})
    with _clubs() as clubs:
        mid = clubs.new_id("mem_", f"member|{club_id}", None)
        clubs.execute(club_id, lambda c: cl.join(c, mid, name.strip(), external_id))
    show_once([mid], f"member {mid} of {club_id} was added",
              "running the command again would add the member twice")


@members_cmd.command("list")
@click.argument("club_id", metavar="CLUB")
@click.option("--archived/--live", default=None, help="only archived, or only live, members")
def members_list(club_id: str, archived: bool | None) -> None:
    """The members of CLUB: id, name, external id, archived."""
    with _clubs() as clubs:
        members = clubs.load(club_id).club.members
    for m in members:
        if archived is None or m.archived == archived:
            click.echo(f"{m.id}\t{m.name}\t{m.external_id or ''}"
                       f"{chr(9) + 'archived' if m.archived else ''}")


@click.command("standings", short_help="A club's league table, as text or CSV.")
@click.option("--club", "club_id", required=True, help="the club's id")
@click.option("--season", default=None, help="only this season's tables")
@click.option("--variant", type=click.Choice(["loo", "rounce"]), default=None)
@click.option("--scoring", type=click.Choice(["pool", "points"]), default=None)
@click.option("--csv", "as_csv", is_flag=True, help="CSV with a header line (formulas inert)")
def standings_cmd(club_id: str, season: str | None, variant: str | None, scoring: str | None,
                  as_csv: bool) -> None:
    """The standings of a club: one row per member, every figure from the events."""
    from ledger.api.clubs import inert

    with _clubs() as clubs:
        loaded = clubs.load(club_id)
        if season is not None:
            loaded.club.season(season)
        out: dict[str, Any] = clubs.standings(loaded, season, variant, scoring)
    if as_csv:
        w = csv.writer(sys.stdout)
        w.writerow(STANDINGS_FIELDS)
        for row in out["rows"]:
            w.writerow([inert(row[k]) for k in STANDINGS_FIELDS])
        return
    click.echo(f"{'#':>3}  {'name':<20} {'tables':>6} {'hands':>6} {'chips':>7} {'points':>6} "
               f"{'won':>4} {'tricks':>6} {'loos':>5}")
    for r in out["rows"]:
        click.echo(f"{r['rank']:>3}  {r['name'][:20]:<20} {r['tables']:>6} {r['hands']:>6} "
                   f"{r['chips']:>7} {r['points']:>6} {r['games_won']:>4} {r['tricks']:>6} "
                   f"{r['loos']:>5}")
    if out["mixed_points"]:
        click.echo("points: Loo and Rounce tables together, each Rounce table counted as its "
                   "target minus its score (higher is better)")
