"""`loo replay`, `loo audit`, `loo export` name only tables: a club's id is no table."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from ledger.cli.main import main
from tests.integration.conftest import fresh_database


@pytest.fixture(params=["sqlite", "postgres"])
def database_url(request: pytest.FixtureRequest, tmp_path, monkeypatch) -> Iterator[str]:
    monkeypatch.delenv("REDIS_URL", raising=False)
    monkeypatch.setenv("LOO_CHECKPOINT_KEY_FILE", str(tmp_path / "key"))
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/loo.db"
        return
    request.getfixturevalue("pg_url")  # skips when PostgreSQL is not there
    with fresh_database("cli_record") as url:
        yield url


@pytest.mark.parametrize("command", [["audit", "{id}"], ["replay", "{id}", "1"],
                                     ["export", "{id}", "-o", "{out}"]])
def test_a_club_id_is_no_table_to_replay_audit_or_export(database_url, tmp_path, monkeypatch,
                                                         command) -> None:
    # Before: the club's stream was read as a table: `loo audit` FAILED on an IndexError
    # ("chips_conserved: the record could not be checked"), `loo export` exported 0 hands
    # and exited 0.
    monkeypatch.setenv("DATABASE_URL", database_url)
    run = CliRunner().invoke
    made = run(main, ["club", "create", "Red Lion"])
    assert made.exit_code == 0, made.output
    club_id = made.output.split()[1]
    out = tmp_path / "club.ndjson"
    r = run(main, [a.format(id=club_id, out=out) for a in command])
    assert r.exit_code == 1, r.output
    assert r.output.strip() == f"Error: no table '{club_id}'"
    assert not out.exists()
