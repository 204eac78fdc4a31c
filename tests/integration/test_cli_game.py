"""`loo play`, `loo replay`, `loo audit` against the embedded store, as a terminal user."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from ledger.cli import main


@pytest.fixture
def env(tmp_path, monkeypatch) -> dict[str, str]:
    url = f"sqlite:///{tmp_path}/cli.db"
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.delenv("REDIS_URL", raising=False)
    return {"DATABASE_URL": url}


def test_play_a_hand_against_bots_then_replay_and_audit_it(env):
    runner = CliRunner()
    result = runner.invoke(main, ["play", "--hands", "1", "--players", "3"],
                           input="1\n" * 60, env=env)
    assert result.exit_code == 0, result.output
    assert "you are seat 0" in result.output and "[1]" in result.output
    assert "hand 1 settled" in result.output
    # The terminal shows the person's own tiles only: other seats appear as counts.
    first_view = result.output.split("[1]")[0]
    assert re.search(r"seat 1 .* 5 tiles", first_view)
    table_id = re.search(r"table ([0-9a-f]{32})", result.output).group(1)
    replay = runner.invoke(main, ["replay", table_id, "1"], env=env)
    assert replay.exit_code == 0, replay.output
    assert "tiles_dealt" in replay.output and "hand_completed" in replay.output
    audit = runner.invoke(main, ["audit", table_id], env=env)
    assert audit.exit_code == 0, audit.output
    assert "hash_chain" in audit.output and "OK" in audit.output


def test_play_refuses_a_number_out_of_range_then_continues(env):
    result = CliRunner().invoke(main, ["play", "--hands", "1", "--players", "2"],
                                input="99\n" + "1\n" * 60, env=env)
    assert result.exit_code == 0, result.output
    assert "99 is not in the range" in result.output


def test_replay_and_audit_of_unknown_table_are_clear_errors(env):
    runner = CliRunner()
    for args in (["replay", "nope", "1"], ["audit", "nope"]):
        result = runner.invoke(main, args, env=env)
        assert result.exit_code != 0
        assert "no table 'nope'" in result.output
        assert "Traceback" not in result.output


def test_audit_names_the_first_tampered_event(env, tmp_path):
    """Alter a row as the database owner would (bypassing the trigger): audit must say where."""
    import json
    import sqlite3

    runner = CliRunner()
    result = runner.invoke(main, ["play", "--hands", "1", "--players", "3"],
                           input="1\n" * 60, env=env)
    table_id = re.search(r"table ([0-9a-f]{32})", result.output).group(1)
    db = sqlite3.connect(f"{tmp_path}/cli.db")
    with db:
        row = db.execute("SELECT data FROM events WHERE table_id = ? AND type = 'stake_posted' "
                         "ORDER BY version LIMIT 1", (table_id,)).fetchone()
        data = json.loads(row[0]) | {"amount": 500}
        with pytest.raises(sqlite3.DatabaseError, match="append-only"):
            db.execute("UPDATE events SET data = ? WHERE table_id = ? AND type = 'stake_posted'",
                       (json.dumps(data), table_id))
    with db:
        db.execute("DROP TRIGGER events_no_update")
        version = db.execute("SELECT min(version) FROM events WHERE table_id = ? AND "
                             "type = 'stake_posted'", (table_id,)).fetchone()[0]
        db.execute("UPDATE events SET data = ? WHERE table_id = ? AND version = ?",
                   (json.dumps(data), table_id, version))
    db.close()
    audit = runner.invoke(main, ["audit", table_id], env=env)
    assert audit.exit_code == 1, audit.output
    assert f"version {version}" in audit.output and "FAILED" in audit.output
