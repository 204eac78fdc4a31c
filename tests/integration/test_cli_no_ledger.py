"""Commands that only read never create a ledger (README "Configuration", "Commands"): in a
directory with no ./loo.db (DATABASE_URL unset), `loo replay`, `loo audit`, `loo export`,
`loo standings` and `loo club members list|add` say there is none, exit status 2 (the store
is not there: a configuration error, as a PostgreSQL server that does not answer), and
leave the directory as it was. The commands that write still make it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ledger.cli.main import main

READERS = [["replay", "abc", "1"], ["replay", "abc", "1", "--events"], ["audit", "abc"],
           ["export", "abc"], ["export", "abc", "-o", "out.ndjson"],
           ["export", "abc", "--hand", "1"], ["standings", "--club", "club_x"],
           ["standings", "--club", "club_x", "--csv"], ["club", "members", "list", "club_x"],
           ["club", "members", "add", "club_x", "Ann"]]
NO_LEDGER = ("error: no ledger at ./loo.db (set DATABASE_URL or run `loo serve`/`loo play` "
             "first)")


@pytest.fixture
def empty_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory, the default store and key file (nothing set)."""
    for var in ("DATABASE_URL", "REDIS_URL", "LOO_CHECKPOINT_KEY", "LOO_CHECKPOINT_KEY_FILE",
                "LOO_CHECKPOINT_RETIRED_KEYS"):
        monkeypatch.delenv(var, raising=False)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


@pytest.mark.parametrize("args", READERS, ids=" ".join)
def test_a_command_that_only_reads_creates_no_ledger(empty_cwd: Path, args: list[str]):
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2, r.output
    assert r.output.strip() == NO_LEDGER
    assert list(empty_cwd.iterdir()) == []  # no loo.db, no key file, no output file


@pytest.mark.parametrize("args", [["audit", "abc"], ["standings", "--club", "club_x"]])
def test_a_database_url_naming_no_file_is_no_ledger_either(empty_cwd: Path, args: list[str]):
    r = CliRunner().invoke(main, args, env={"DATABASE_URL": "sqlite:///typo/loo.db"})
    assert r.exit_code == 2, r.output
    assert r.output.strip() == ("error: DATABASE_URL: no ledger at ./typo/loo.db (no such "
                                "file: check the path, or run `loo db upgrade` to create an "
                                "empty one)")
    assert list(empty_cwd.iterdir()) == []


def test_the_commands_that_write_still_create_the_ledger(empty_cwd: Path):
    r = CliRunner().invoke(main, ["db", "upgrade"])
    assert r.exit_code == 0, r.output
    assert (empty_cwd / "loo.db").is_file()
    (empty_cwd / "loo.db").unlink()
    made = CliRunner().invoke(main, ["club", "create", "Red Lion"])
    assert made.exit_code == 0, made.output
    club_id = made.output.split()[1]
    # ... and then the readers read it
    assert CliRunner().invoke(main, ["club", "members", "add", club_id, "Ann"]).exit_code == 0
    listed = CliRunner().invoke(main, ["club", "members", "list", club_id])
    assert listed.exit_code == 0 and "\tAnn" in listed.output
    r = CliRunner().invoke(main, ["audit", "abc"])
    assert r.exit_code == 1 and r.output.strip() == "Error: no table 'abc'"


def test_import_creates_the_ledger(empty_cwd: Path, tmp_path: Path):
    # A file `loo export` wrote elsewhere, imported into a directory with no ledger yet.
    from ledger.bootstrap import Settings, bootstrap
    from ledger.core import commands as c

    elsewhere = f"sqlite:///{tmp_path}/there.db"
    container = bootstrap(Settings.from_env({"DATABASE_URL": elsewhere}))
    table_id, _t, _p = container.ledger.create_table(c.CreateTable(
        variant="loo", scoring="pool", seats=(("Ann", None), ("Bob", None)), first_dealer=0,
        deal="results"))
    container.ledger.execute(table_id, c.StartHand(result={
        "decisions": {"0": "play", "1": "play"}, "tricks": {"0": 3, "1": 2}}))
    container.close()
    file = tmp_path / "hands.ndjson"
    exported = CliRunner().invoke(main, ["export", table_id, "-o", str(file)],
                                  env={"DATABASE_URL": elsewhere})
    assert exported.exit_code == 0, exported.output
    r = CliRunner().invoke(main, ["import", str(file)])
    assert r.exit_code == 0, r.output
    assert (empty_cwd / "loo.db").is_file()
    assert json.loads(r.stdout)["hands"] == 1
