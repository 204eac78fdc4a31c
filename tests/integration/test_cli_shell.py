"""`loo` from a shell, as a scorer or an operator runs it (CLI audit): a reader that leaves
(`| head -1`), a full disk, standard input or output closed, -o naming a device, a pipe or
a link, and what is shown only once. Real processes: these are the process's own file
descriptors, which click's CliRunner replaces."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ledger.cli.main import main

LOO = [sys.executable, "-c", "from ledger.cli.main import main; main()"]
FULL = "/dev/full"  # every write fails with ENOSPC (Linux)
needs_dev_full = pytest.mark.skipif(not os.path.exists(FULL), reason="no /dev/full here")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    out = {**os.environ, "DATABASE_URL": f"sqlite:///{tmp_path}/loo.db",
           "LOO_CHECKPOINT_KEY_FILE": str(tmp_path / "key")}
    out.pop("REDIS_URL", None)
    return out


@pytest.fixture
def table(env: dict[str, str]) -> str:
    """A results table of two settled hands."""
    from ledger.bootstrap import Settings, bootstrap
    from ledger.core import commands as c

    container = bootstrap(Settings.from_env(env))
    table_id, _t, _p = container.ledger.create_table(c.CreateTable(
        variant="loo", scoring="pool", seats=tuple((n, None) for n in ("Ann", "Bob", "Cat")),
        first_dealer=0, deal="results"))
    for tricks in ({"0": 3, "1": 2, "2": 0}, {"0": 1, "1": 1, "2": 3}):
        container.ledger.execute(table_id, c.StartHand(result={
            "decisions": {"0": "play", "1": "play", "2": "play"}, "tricks": tricks}))
    container.close()
    return table_id


@pytest.fixture
def club(env: dict[str, str]) -> str:
    made = CliRunner().invoke(main, ["club", "create", "Red Lion"], env=env)
    assert made.exit_code == 0, made.output
    club_id = made.output.split()[1]
    for name in ("Ann", "Bob"):
        assert CliRunner().invoke(main, ["club", "members", "add", club_id, name],
                                  env=env).exit_code == 0
    return club_id


def run(args: list[str], env: dict[str, str], *, stdin: Any = subprocess.DEVNULL,
        stdout: Any = subprocess.PIPE, closed: str = "") -> subprocess.CompletedProcess:
    """`loo ARGS`; `closed` "<&-" or ">&-" starts it with standard input or output closed."""
    cmd = ["sh", "-c", f'exec "$@" {closed}', "sh", *LOO, *args] if closed else [*LOO, *args]
    return subprocess.run(cmd, env=env, stdin=stdin, stdout=stdout, stderr=subprocess.PIPE,
                          timeout=120)


def _clubs(env: dict[str, str]) -> int:
    import sqlite3

    path = env["DATABASE_URL"].removeprefix("sqlite:///")
    with sqlite3.connect(path) as db:
        return db.execute("SELECT count(*) FROM events WHERE type = 'club_created'").fetchone()[0]


def _tables(env: dict[str, str]) -> int:
    import sqlite3

    path = env["DATABASE_URL"].removeprefix("sqlite:///")
    if not os.path.exists(path):
        return 0
    with sqlite3.connect(path) as db:
        return db.execute("SELECT count(*) FROM events WHERE type = 'table_created'").fetchone()[0]


COMMANDS = [["replay", "{table}", "1"], ["replay", "{table}", "2", "--events"],
            ["audit", "{table}"], ["export", "{table}"], ["standings", "--club", "{club}"],
            ["standings", "--club", "{club}", "--csv"], ["club", "members", "list", "{club}"]]


@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(a[:2]) + (" --csv" if "--csv" in a
                                                                    else "") for a in COMMANDS])
def test_a_reader_that_leaves_ends_every_command_quietly_with_status_141(env, table, club, args):
    """`loo export T | head -1`: the reader closes the pipe. Every command now ends as `loo
    play` does there: nothing on stderr, status 141 (128 + SIGPIPE, as `yes | head` ends).
    Before, click's handler gave status 1, which reads as the command's failure."""
    read, write = os.pipe()
    os.close(read)  # the reader has left before the first line
    try:
        done = run([a.format(table=table, club=club) for a in args], env, stdout=write)
    finally:
        os.close(write)
    assert done.returncode == 141, done.stderr
    assert done.stderr == b""


@needs_dev_full
@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(a[:2]) + (" --csv" if "--csv" in a
                                                                    else "") for a in COMMANDS])
def test_output_that_cannot_be_written_is_one_line_and_status_1(env, table, club, args):
    """A full disk under standard output: `loo export T > hands.ndjson` said "exported 2
    hand(s)" and exited 0 with the file empty (the lines waited in a buffer that failed at
    exit, unseen); `loo replay`, `loo standings` ended in a traceback. Now one line and 1."""
    with open(FULL, "wb") as full:
        done = run([a.format(table=table, club=club) for a in args], env, stdout=full)
    assert done.returncode == 1, done.stderr
    assert done.stderr.decode() == "error: cannot write to standard output: No space left " \
                                   "on device\n"


def test_export_to_a_named_pipe_or_a_link_writes_through_it(env, table, tmp_path):
    """`loo export T -o FILE` writes a temporary file and renames it onto FILE (whole or not
    at all). Onto a named pipe (or a device: -o /dev/stdout, run as root, replaced the
    device node with a regular file) that replaced the pipe itself, and a symbolic link was
    replaced by a file. Now what is not a regular file is written to as it is, and a link
    has the file it names replaced."""
    whole = run(["export", table], env)
    assert whole.returncode == 0 and len(whole.stdout.splitlines()) == 2, whole.stderr
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    done = run(["export", table, "-o", str(fifo)], env)
    reader.join(30)
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(fifo.lstat().st_mode) and got == [whole.stdout]
    real, link = tmp_path / "real.ndjson", tmp_path / "link.ndjson"
    real.write_text("old\n")
    link.symlink_to(real.name)
    done = run(["export", table, "-o", str(link)], env)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and real.read_bytes() == whole.stdout
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".part")]


@pytest.mark.parametrize(("output", "said"), [
    ("", "an empty path names no file (use - for standard output)"),
    ("{tmp}/no/such/dir/hands.ndjson", "cannot write '{tmp}/no/such/dir/hands.ndjson' "
                                       "({tmp}/no/such/dir: No such file or directory)")])
def test_export_to_a_path_it_cannot_write_is_a_usage_error_naming_it(env, table, tmp_path,
                                                                    output, said):
    """-o '' or in a directory that does not exist: a traceback (mkstemp's, or os.replace's
    IsADirectoryError: '' named the working directory). Now a usage error naming -o."""
    done = run(["export", table, "-o", output.format(tmp=tmp_path)], env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode().splitlines()[-1] == \
        f"Error: Invalid value for '-o' / '--output': {said.format(tmp=tmp_path)}"


@pytest.mark.skipif(os.geteuid() != 0, reason="only root makes a device node")
def test_export_to_a_device_writes_to_it_and_names_it_when_it_fails(env, table, tmp_path):
    """-o /dev/full: the export renamed its temporary file onto the device node, replacing
    it with a regular file (run as root), and said it had exported. Now it writes to the
    device, and names it when the write fails. (A node of the test's own, not /dev/full:
    the code before this fix replaced the node it was given.)"""
    full = tmp_path / "full"
    os.mknod(full, 0o666 | stat.S_IFCHR, os.makedev(1, 7))  # what /dev/full is
    done = run(["export", table, "-o", str(full)], env)
    assert done.returncode == 1, done.stderr
    assert done.stderr.decode() == f"error: {full}: No space left on device\n"
    assert stat.S_ISCHR(full.lstat().st_mode)


def test_with_standard_output_closed_nothing_shown_once_is_created(env, tmp_path, table):
    """`loo club create X >&-` created the club and printed its owner token, shown once, to
    nowhere (click writes nothing without a stdout): exit 0, a club nobody can manage.
    `loo import` lost the new table's tokens the same way. Now: refused before anything is
    created, status 2."""
    exported = run(["export", table], env).stdout
    (tmp_path / "hands.ndjson").write_bytes(exported)
    clubs, tables = _clubs(env), _tables(env)
    for args, what in ((["club", "create", "Red Lion"], "the owner token"),
                       (["import", str(tmp_path / "hands.ndjson")], "the new table's tokens")):
        done = run(args, env, closed=">&-")
        assert done.returncode == 2, done.stderr
        assert done.stderr.decode() == (
            f"error: standard output is closed, where {what} would be shown, once: nothing "
            "was created (run the command with its output open)\n")
    assert (_clubs(env), _tables(env)) == (clubs, tables)


@needs_dev_full
def test_a_token_that_cannot_be_written_is_given_on_stderr_not_lost(env, tmp_path, table):
    """`loo club create X > /dev/full` (or `| head -1`): the club was created, then a
    traceback, its owner token lost for good (only its hash is stored) and a retry made a
    second club. Now standard error says it was created and carries what it shows once."""
    exported = run(["export", table], env).stdout
    (tmp_path / "hands.ndjson").write_bytes(exported)
    clubs, tables = _clubs(env), _tables(env)
    with open(FULL, "wb") as full:
        made = run(["club", "create", "Red Lion"], env, stdout=full)
        imported = run(["import", str(tmp_path / "hands.ndjson")], env, stdout=full)
    assert (_clubs(env), _tables(env)) == (clubs + 1, tables + 1)
    for done, what in ((made, "club club_"), (imported, "table ")):
        assert done.returncode == 1, done.stderr
        first, *shown = done.stderr.decode().splitlines()
        assert first.startswith(f"error: {what}") and first.endswith(
            "was created, but standard output failed (No space left on device); its output "
            "is here instead (running the command again would create another):"), first
        assert "Traceback" not in done.stderr.decode()
    club_line, token_line = made.stderr.decode().splitlines()[1:]
    assert club_line.startswith("club club_") and club_line.endswith(" (Red Lion)")
    assert token_line.startswith("owner token (shown once, keep it): ")
    out = json.loads(imported.stderr.decode().splitlines()[1])
    assert out["admin_token"] and len(out["seat_tokens"]) == 3


@pytest.mark.skipif(not os.path.exists("/proc/self/mem"), reason="needs Linux /proc")
@pytest.mark.parametrize(("args", "name"), [(["verify", "/proc/self/mem"], "/proc/self/mem"),
                                            (["import", "/proc/self/mem"], "/proc/self/mem"),
                                            (["verify", "-"], "standard input")])
def test_input_that_cannot_be_read_is_named_in_one_line(env, args, name):
    # Before: "error: cannot write to standard output: Input/output error" (the read's EIO
    # taken for the output's).
    with open("/proc/self/mem", "rb") as mem:  # reading it at 0 fails (EIO)
        r = run(args, env, stdin=mem if args[-1] == "-" else subprocess.DEVNULL)
    assert r.returncode == 1, r.stderr
    assert r.stderr.decode() == f"error: {name}: cannot read it: Input/output error\n"
    assert _tables(env) == 0


@pytest.mark.parametrize("args", [["verify", "-"], ["import", "-"]])
def test_reading_a_closed_standard_input_is_a_usage_error(env, args):
    """`loo verify - <&-`: a traceback (click's RuntimeError: no binary stream for stdin)."""
    done = run(args, env, closed="<&-")
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode().splitlines()[-1] == (
        "Error: Invalid value for 'FILE': standard input is closed: name a file, or give - "
        "some input")


@pytest.mark.parametrize(("closed", "said"), [
    ("<&-", "standard input is closed: your moves are read from it"),
    (">&-", "standard output is closed: the table is shown there")])
def test_play_with_its_terminal_closed_creates_nothing(env, closed, said):
    """`loo play <&-` created a table and ended in a traceback (input(): lost sys.stdin),
    leaving the table open and waiting on a seat nobody holds a token for."""
    done = run(["play"], env, closed=closed)
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode() == f"error: {said}; nothing was created\n"
    assert _tables(env) == 0


@needs_dev_full
def test_play_whose_output_fails_closes_the_table_in_one_line(env):
    """`loo play > /dev/full`: a traceback, and the table left open. Now its table is closed,
    as when the reader of a pipe leaves, and one line says why: status 1."""
    with open(FULL, "wb") as full:
        done = run(["play", "--players", "2", "--hands", "1"], env, stdout=full)
    assert done.returncode == 1, done.stderr
    line = done.stderr.decode()
    assert line.startswith("error: cannot go on: No space left on device; table ")
    assert line.endswith(" is closed\n") and line.count("\n") == 1
    table_id = line.split("table ")[1].split()[0]
    from ledger.bootstrap import Settings, open_database

    store = open_database(Settings.from_env(env))
    try:
        assert store.load(table_id)[-1].type == "table_closed"
    finally:
        store.close()


@pytest.mark.parametrize(("variable", "value", "said"), [
    ("LOO_RATE_LIMIT_READ", "abc", "'abc' is not a rate limit (e.g. 30/minute, or "
                                   "10/second;500/hour)"),
    ("LOO_RATE_LIMITS", "maybe", "'maybe' is neither on nor off"),
    ("LOO_RATE_LIMIT_LOOPBACK", "x", "'x' is neither exempt nor limit"),
    # Read in the worker as a silent 10 whatever it said (noted by the CLI audit).
    ("LOO_REQUEST_READ_SECONDS", "ten", "'ten' is not a number of seconds from 0.1 to 3600"),
    ("LOO_REQUEST_READ_SECONDS", "0", "'0' is not a number of seconds from 0.1 to 3600"),
    ("LOO_REQUEST_READ_SECONDS", "nan", "'nan' is not a number of seconds from 0.1 to 3600")])
def test_serve_with_a_bad_rate_limit_stops_before_it_listens(env, variable, value, said):
    """These were read in each gunicorn worker: `loo serve` said "serving on ...", then the
    worker failed to boot (a traceback, "Worker failed to boot", status 3). Now one line
    naming the variable, status 2, as every other variable (README Configuration)."""
    done = run(["serve", "--port", "0"], {**env, variable: value})
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode() == f"error: {variable}: {said}\n"


def test_checkpoint_key_rotate_never_loses_the_retired_key(env, tmp_path):
    """README "Rotating the checkpoint key": once the key file is replaced, the printed
    LOO_CHECKPOINT_RETIRED_KEYS line is the only copy of the old key's public key, without
    which the checkpoints it signed no longer verify. `loo checkpoint-key rotate >&-`
    rotated and printed it to nowhere, status 0; with the output failing (a full disk) the
    key was rotated, then a traceback. Now a closed output rotates nothing (status 2), and a
    failing one gives the line on standard error (status 1)."""
    from ledger.app.checkpoints import Signer, parse_key

    key = tmp_path / "key"
    key.write_text(os.urandom(32).hex() + "\n")
    old = Signer.from_seed(parse_key(key.read_text().strip()))
    done = run(["checkpoint-key", "rotate"], env, closed=">&-")
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode() == (
        "error: standard output is closed, where the retired key's public key would be shown, "
        "once: the key was not rotated (run the command with its output open)\n")
    assert Signer.from_seed(parse_key(key.read_text().strip())).key_id == old.key_id
    if not os.path.exists(FULL):
        return
    with open(FULL, "wb") as full:
        done = run(["checkpoint-key", "rotate"], env, stdout=full)
    assert done.returncode == 1, done.stderr
    said = done.stderr.decode().splitlines()
    new = Signer.from_seed(parse_key(key.read_text().strip()))
    assert said[0] == (f"error: the checkpoint key was rotated (new key {new.key_id}), but "
                       "standard output failed (No space left on device); its output is here "
                       "instead (running the command again would rotate it again):")
    assert said[-1] == f"LOO_CHECKPOINT_RETIRED_KEYS={old.public_bytes.hex()}"
