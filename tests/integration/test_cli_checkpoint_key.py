"""README "Rotating the checkpoint key": `loo checkpoint-key rotate` makes a new key and prints
the LOO_CHECKPOINT_RETIRED_KEYS line that keeps the old one trusted; followed verbatim, the
old tables still audit and the new checkpoints are signed with the new key."""

from __future__ import annotations

import re
import stat
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ledger.api.app import create_app
from ledger.app.checkpoints import Signer, parse_key
from ledger.bootstrap import Settings, bootstrap
from ledger.cli.main import main
from tests.e2e.club import Club, Table
from tests.e2e.test_api_checkpoints import ROUND, _three_hands


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for var in ("REDIS_URL", "LOO_CHECKPOINT_KEY", "LOO_CHECKPOINT_KEY_FILE",
                "LOO_CHECKPOINT_RETIRED_KEYS", "LOO_CHECKPOINT_REVOKED_KEYS"):
        monkeypatch.delenv(var, raising=False)
    return {"DATABASE_URL": f"sqlite:///{tmp_path}/loo.db"}


def _club_table(env: dict[str, str]) -> tuple[Table, str]:
    """A table of three settled hands made by the service under `env`, and the key_id that
    signed its checkpoints."""
    container = bootstrap(Settings.from_env(env))
    try:
        club = Club(create_app(container).test_client())
        t = _three_hands(club)
        return t, container.ledger.signer.public()["key_id"]
    finally:
        container.close()


def _loo(*args: str, env: dict[str, str]) -> Any:
    return CliRunner().invoke(main, list(args), env=env)


def test_checkpoint_key_rotate_with_a_key_file_then_the_printed_line_keeps_old_tables_green(
        env: dict[str, str], tmp_path: Path):
    old_table, old_id = _club_table(env)
    table = old_table.id
    key_file = tmp_path / "loo.db.checkpoint-key"
    old_seed = key_file.read_text()
    shown = _loo("checkpoint-key", "show", env=env)
    assert shown.exit_code == 0 and shown.output.split()[:2] == ["current", old_id], shown.output
    r = _loo("checkpoint-key", "rotate", env=env)
    assert r.exit_code == 0, r.output
    assert key_file.read_text() != old_seed and len(parse_key(key_file.read_text())) == 32
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    new_id = Signer.from_file(key_file, create=False).public()["key_id"]
    assert f"new key {new_id}, the old key {old_id} retired" in r.output
    line = r.output.strip().splitlines()[-1]
    name, _, value = line.partition("=")
    assert name == "LOO_CHECKPOINT_RETIRED_KEYS"
    assert [Signer.from_seed(parse_key(old_seed)).public_bytes.hex()] == value.split(",")
    # Not yet set: the old table fails, and the message says what to set.
    r = _loo("audit", table, env=env)
    assert r.exit_code == 1 and "LOO_CHECKPOINT_RETIRED_KEYS" in r.output, r.output
    rotated = env | {name: value}
    r = _loo("audit", table, env=rotated)
    assert r.exit_code == 0 and r.output.splitlines()[-1].endswith(": OK"), r.output
    shown = _loo("checkpoint-key", "show", env=rotated)
    assert [ln.split()[:2] for ln in shown.output.splitlines()] == [["current", new_id],
                                                                    ["retired", old_id]]
    # The service restarted with it: new checkpoints carry the new key, the old still audit.
    container = bootstrap(Settings.from_env(rotated))
    try:
        club = Club(create_app(container).test_client())
        assert club.start(old_table, ROUND).status_code == 200  # its fourth hand
        signed = club.get(old_table, path="/checkpoints").get_json()["items"]
        assert [cp["key_id"] for cp in signed] == [old_id] * 3 + [new_id]
        assert club.get(old_table, path="/audit").get_json()["ok"] is True
    finally:
        container.close()
    # A second rotation keeps the first's retired key in the line it prints.
    r = _loo("checkpoint-key", "rotate", env=rotated)
    assert r.exit_code == 0, r.output
    again = r.output.strip().splitlines()[-1].partition("=")[2].split(",")
    assert again[0] == value and len(again) == 2


def test_checkpoint_key_rotate_with_the_key_in_the_environment_prints_both_lines(
        env: dict[str, str]):
    seed = "22" * 32
    env = env | {"LOO_CHECKPOINT_KEY": seed}
    table, _ = _club_table(env)
    r = _loo("checkpoint-key", "rotate", env=env)
    assert r.exit_code == 0, r.output
    assert "Nothing was written" in r.output
    lines = dict(ln.split("=", 1) for ln in r.output.splitlines() if re.match(r"LOO_\w+=", ln))
    assert set(lines) == {"LOO_CHECKPOINT_KEY", "LOO_CHECKPOINT_RETIRED_KEYS"}
    assert lines["LOO_CHECKPOINT_KEY"] != seed
    r = _loo("audit", table.id, env=env | lines)
    assert r.exit_code == 0, r.output


def test_checkpoint_key_rotate_without_a_key_yet_writes_nothing(env: dict[str, str],
                                                                  tmp_path: Path):
    r = _loo("checkpoint-key", "rotate", env=env)
    assert r.exit_code == 2 and "error: LOO_CHECKPOINT_KEY_FILE: there is no checkpoint key" \
        in r.output, r.output
    assert not (tmp_path / "loo.db.checkpoint-key").exists()


@pytest.mark.parametrize(("url", "said"), [
    ("sqlite://rel/loo.db", "error: DATABASE_URL: 'sqlite://rel/loo.db' names no file"),
    ("sqlite:///", "error: DATABASE_URL: 'sqlite:///' names no file"),
    ("memory://", "error: LOO_CHECKPOINT_KEY_FILE: this DATABASE_URL keeps its checkpoint "
                  "key in memory only")])
@pytest.mark.parametrize("command", ["show", "rotate"])
def test_checkpoint_key_with_a_database_url_that_names_no_file_shows_and_writes_nothing(
        env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str,
        said: str, command: str):
    # Before: sqlite://rel/loo.db looked for the key in //rel/loo.db.checkpoint-key (at the
    # root); sqlite:/// and memory:// showed a key made up for this run as the current one.
    if command == "rotate" and url == "memory://":
        said = said.replace("in memory only", "in memory only: there is no key to rotate")
    monkeypatch.chdir(tmp_path)
    before = sorted(tmp_path.iterdir())
    r = _loo("checkpoint-key", command, env=env | {"DATABASE_URL": url})
    assert r.exit_code == 2, r.output
    assert r.output.strip().startswith(said), r.output
    assert sorted(tmp_path.iterdir()) == before


def test_audit_and_the_club_readers_never_make_a_checkpoint_key(env: dict[str, str],
                                                                  tmp_path: Path):
    # The service ran with its key in LOO_CHECKPOINT_KEY: there is no key file beside the
    # ledger. Before: `loo audit` (and `loo standings`, `loo club members list`) made
    # loo.db.checkpoint-key, a new key the service would take for its own on a restart
    # without the variable, and the audit called the service's checkpoints forged ("signed
    # with key ..., which is neither the current key ...: otherwise the checkpoint is forged").
    seed = Signer.generate().private.private_bytes_raw().hex()
    t, _key_id = _club_table(env | {"LOO_CHECKPOINT_KEY": seed})
    made = _loo("club", "create", "Red Lion", env=env | {"LOO_CHECKPOINT_KEY": seed})
    assert made.exit_code == 0, made.output
    club_id = made.output.split()[1]
    key_file = tmp_path / "loo.db.checkpoint-key"
    assert not key_file.exists()
    for args in (["standings", "--club", club_id], ["club", "members", "list", club_id]):
        r = _loo(*args, env=env)
        assert r.exit_code == 0, r.output
        assert not key_file.exists(), args
    r = _loo("audit", t.id, env=env)
    assert r.exit_code == 2, r.output
    assert r.output.startswith("error: LOO_CHECKPOINT_KEY_FILE: there is no checkpoint key in "
                               f"'{key_file}' yet"), r.output
    assert "forged" not in r.output and not key_file.exists()
    r = _loo("audit", t.id, env=env | {"LOO_CHECKPOINT_KEY": seed})
    assert r.exit_code == 0 and r.output.rstrip().endswith(": OK"), r.output


def test_audit_of_a_table_with_no_checkpoint_needs_no_key(env: dict[str, str], tmp_path: Path):
    container = bootstrap(Settings.from_env(env | {"LOO_CHECKPOINT_KEY": "00" * 32}))
    try:
        club = Club(create_app(container).test_client())
        t = club.create(deal="results", first_dealer=0)  # no hand settled: nothing signed
    finally:
        container.close()
    r = _loo("audit", t.id, env=env)
    assert r.exit_code == 0 and r.output.rstrip().endswith(": OK"), r.output
    assert not (tmp_path / "loo.db.checkpoint-key").exists()


def test_checkpoint_key_a_leaked_key_revoked_after_its_rotation_fails_what_it_signed(
        env: dict[str, str]):
    """README "Rotating the checkpoint key": a retired key that leaked still vouched for what
    carried its id. Its public key in LOO_CHECKPOINT_REVOKED_KEYS (left in the retired list
    too, or not): `show` lists it as revoked, the audit of a table it signed fails naming it
    revoked, GET /v1/checkpoints/key lists it under `revoked`; the current key cannot be
    revoked (rotate first)."""
    old_table, old_id = _club_table(env)
    r = _loo("checkpoint-key", "rotate", env=env)
    assert r.exit_code == 0, r.output
    name, _, value = r.output.strip().splitlines()[-1].partition("=")
    revoked = env | {name: value, "LOO_CHECKPOINT_REVOKED_KEYS": value}
    shown = _loo("checkpoint-key", "show", env=revoked)
    assert [ln.split()[:2] for ln in shown.output.splitlines()][1:] == [["revoked", old_id]]
    r = _loo("audit", old_table.id, env=revoked)
    assert r.exit_code == 1, r.output
    assert f"signed with key {old_id}, which is revoked (LOO_CHECKPOINT_REVOKED_KEYS)" \
        in r.output, r.output
    container = bootstrap(Settings.from_env(revoked))
    try:
        club = Club(create_app(container).test_client())
        key = club.c.get("/v1/checkpoints/key").get_json()
        assert [k["key_id"] for k in key["revoked"]] == [old_id]
        assert old_id not in [k["key_id"] for k in key["keys"]]
        out = club.get(old_table, path="/audit").get_json()
        assert out["ok"] is False and "which is revoked" in out["checks"]["checkpoints"]
    finally:
        container.close()
    current = Signer.from_file(Path(env["DATABASE_URL"].removeprefix("sqlite:///")
                                    + ".checkpoint-key"), create=False)
    r = _loo("checkpoint-key", "show",
             env=revoked | {"LOO_CHECKPOINT_REVOKED_KEYS": current.public_bytes.hex()})
    assert r.exit_code == 2 and "LOO_CHECKPOINT_REVOKED_KEYS: entry 1: it is the current " \
        "key's public key: rotate first" in r.output, r.output
