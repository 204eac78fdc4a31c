"""`loo play`, `loo replay`, `loo audit` against the embedded store, as a terminal user."""

from __future__ import annotations

import hashlib
import itertools
import re
import uuid
from typing import Any

import pytest
from click.testing import CliRunner

from ledger.cli import game as cli_game
from ledger.cli.main import main


@pytest.fixture
def env(tmp_path, monkeypatch) -> dict[str, str]:
    url = f"sqlite:///{tmp_path}/cli.db"
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.delenv("REDIS_URL", raising=False)
    return {"DATABASE_URL": url}


@pytest.fixture
def fixed_seeds(monkeypatch) -> None:
    """Deterministic deals (and so deterministic bots): every run plays the same game."""
    from ledger.app.service import Ledger

    counter = itertools.count()

    def seeds() -> bytes:
        return hashlib.sha256(f"cli-test:{next(counter)}".encode()).digest()

    monkeypatch.setattr(cli_game, "Ledger", lambda store: Ledger(store, seeds=seeds))


def _table_id(output: str) -> str:
    return re.search(r"table ([0-9a-f]{32})", output).group(1)


def _one_hand_played(runner: CliRunner, env: dict[str, str], tmp_path) -> tuple[str, Any]:
    """A 3-player table after one hand of `loo play`, and its SQLite file opened raw."""
    import sqlite3

    result = runner.invoke(main, ["play", "--hands", "1", "--players", "3"],
                           input="1\n" * 60, env=env)
    return _table_id(result.output), sqlite3.connect(f"{tmp_path}/cli.db")


def _store(env: dict[str, str]):
    from ledger.store.sqlite import SqliteStore

    return SqliteStore(env["DATABASE_URL"].removeprefix("sqlite:///"))


def test_play_a_hand_against_bots_then_replay_and_audit_it(env, fixed_seeds):
    runner = CliRunner()
    result = runner.invoke(main, ["play", "--hands", "1", "--players", "3"],
                           input="1\n" * 60, env=env)
    assert result.exit_code == 0, result.output
    assert "you are seat 0" in result.output and "[1]" in result.output
    assert "hand 1 settled" in result.output
    # The terminal shows the person's own tiles only: other seats appear as counts.
    first_view = result.output.split("[1]")[0]
    assert re.search(r"seat 1 .* 5 tiles", first_view)
    table_id = _table_id(result.output)
    replay = runner.invoke(main, ["replay", table_id, "1"], env=env)
    assert replay.exit_code == 0, replay.output
    # Trick by trick, each with its leader, its suit and its winner, then the result.
    tricks = re.findall(r"^  trick (\d): [^,]+ leads \w+.* → won by ", replay.output, re.M)
    assert tricks == ["1", "2", "3", "4", "5"], replay.output
    assert "tricks won:" in replay.output and "deal:" in replay.output
    assert "its sha256 is the commitment" in replay.output
    events = runner.invoke(main, ["replay", table_id, "1", "--events"], env=env)
    assert "tiles_dealt" in events.output and "hand_completed" in events.output
    audit = runner.invoke(main, ["audit", table_id], env=env)
    assert audit.exit_code == 0, audit.output
    assert "hash_chain" in audit.output and "OK" in audit.output


def test_play_stops_after_the_last_hand_and_shows_how_it_ended(env, fixed_seeds):
    """--hands 1: hand 1's last trick and settlement are shown, no hand 2 is dealt (its stakes
    would be in the final balances), and the table is closed."""
    result = CliRunner().invoke(main, ["play", "--hands", "1", "--players", "4"],
                                input="1\n" * 60, env=env)
    assert result.exit_code == 0, result.output
    summary = result.output.rsplit("your move:", 1)[1]
    assert "trick 5:" in summary and "tricks won:" in summary
    assert summary.index("tricks won:") < summary.index("hand 1 settled")
    stored = _store(env).load(_table_id(result.output))
    assert {s.hand for s in stored} == {None, 1}
    assert stored[-1].type == "table_closed"
    settled = next(s for s in stored if s.type == "hand_settled").data
    balances = re.search(r"^balances: (.*) · pool left over (\d+)$", result.output, re.M)
    shown = dict(re.findall(r"(You|Bot \d) (-?\d+)", balances.group(1)))
    names = ["You", "Bot 1", "Bot 2", "Bot 3"]
    assert {names[int(k)]: str(v) for k, v in settled["balances"].items()} == shown
    assert int(balances.group(2)) == settled["pool"]


def _typed(body: dict[str, Any]) -> str:
    """What a person would type for a listed move."""
    if body["type"] == "play":
        tile = body["tile"]
        hi, lo = tile.split("-")
        return f"{lo}-{hi}" if body.get("suit") == int(lo) and hi != lo else tile
    if body["type"] == "discard":
        return " ".join(reversed(body["tiles"]))
    text = body["choice"]
    if body.get("take_turn_up"):
        text = f"take {body['discard'][0]}"
    return text + (" pool" if body.get("for_pool") else "")


def test_typed_moves_mean_the_listed_ones_and_forbidden_ones_are_refused_by_rule(
        env, fixed_seeds, monkeypatch):
    """Every listed move can be typed (a lead's first end is its suit); a tile the rules
    forbid is refused with the rule it breaks, and the game goes on."""
    kinds: set[str] = set()
    refused: dict[int, str] = {}  # version -> the tile refused there

    def move(view: dict[str, Any], hint: Any = None) -> dict[str, Any]:
        legal, h = view["legal_actions"], view["hand"]
        for body in legal:
            assert cli_game.parse_move(_typed(body), view) == body, (body, _typed(body))
            kinds.add(body["type"] + ("+take" if body.get("take_turn_up") else ""))
        if h["phase"] == "deciding":
            miss = next((b for b in legal if b.get("choice") == "miss"), None)
            if miss and "discard" not in kinds:
                return miss
        if h["phase"] == "playing" and view["version"] not in refused:
            offered = {b["tile"] for b in legal}
            held = [t for t in h["hands"]["0"] if t not in offered]
            if held:  # a tile the rules forbid now (must follow, must trump, must lead trumps)
                refused[view["version"]] = held[0]
                return cli_game.parse_move(held[0], view)
        return legal[0]

    monkeypatch.setattr(cli_game, "read_move", move)
    result = CliRunner().invoke(main, ["play", "--hands", "4", "--players", "4"], env=env)
    assert result.exit_code == 0, result.output
    assert refused, "no forbidden tile was ever held: change the seeds"
    assert re.search(r"^refused \(rule 6\.[1-4], /docs/rules#rule-6\.[1-4]\): ", result.output,
                     re.M), result.output
    assert {"decide", "decide+take", "discard", "play"} <= kinds
    assert "4 hands played; the table is closed." in result.output


def test_parse_move_reads_numbers_tiles_and_words():
    view = {"hand": {"phase": "playing", "trump": 6, "tricks": [],
                     "hands": {"0": ["5-3", "6-2"]}},
            "legal_actions": [{"type": "play", "tile": "6-2", "suit": 6},
                              {"type": "play", "tile": "5-3", "suit": 5},
                              {"type": "play", "tile": "5-3", "suit": 3}]}
    assert cli_game.parse_move("2", view) == view["legal_actions"][1]
    assert cli_game.parse_move(" 3-5 ", view) == view["legal_actions"][2]
    assert cli_game.parse_move("5-3", view) == view["legal_actions"][1]
    assert cli_game.parse_move("2-6", view) == view["legal_actions"][0]  # a trump leads trumps
    for text, message in [("4", "there is no move 4: choose a number from 1 to 3"),
                          ("0", "there is no move 0"), ("7-7", "'7-7' is not a tile"),
                          ("abc", "name one tile to play"), ("6-2 5-3", "name one tile")]:
        with pytest.raises(ValueError, match=re.escape(message)):
            cli_game.parse_move(text, view)


def test_play_against_experts_gives_a_hint_when_asked(env, fixed_seeds):
    """issue 18: `loo play --bot expert`; typing hint shows the expert's move for you."""
    result = CliRunner().invoke(main, ["play", "--players", "3", "--bot", "expert",
                                       "--hands", "1"], input="hint\n" + "1\n" * 40, env=env)
    assert result.exit_code == 0, result.output
    assert re.search(r"your move:   hint: (play|miss|drop|discard)", result.output), result.output
    assert "guessed deals" in result.output or "the only legal action" in result.output
    assert "1 hand played; the table is closed." in result.output


def test_play_answers_garbage_and_leaves_cleanly_at_the_end_of_input(env, fixed_seeds):
    runner = CliRunner()
    result = runner.invoke(main, ["play", "--players", "3"],
                           input="abc\n\n99\n-1\n?\n", env=env)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Traceback" not in out and "Aborted" not in out
    assert "there is no move 99: choose a number from 1 to" in out
    assert "type a number from 1 to" in out  # the empty line and the garbage
    assert "Answer with the number of a listed move" in out  # ?
    assert "you left (end of input); the table is closed, hand 1 abandoned." in out
    table_id = _table_id(out)
    replay = runner.invoke(main, ["replay", table_id, "1"], env=env)
    assert replay.exit_code == 0 and "hand 1 (abandoned)" in replay.output, replay.output
    assert runner.invoke(main, ["audit", table_id], env=env).exit_code == 0


def test_ctrl_c_at_the_prompt_closes_the_table_and_exits_130(env, fixed_seeds, monkeypatch):
    def interrupted(*_args: Any) -> str:
        raise KeyboardInterrupt

    monkeypatch.setattr("builtins.input", interrupted)
    result = CliRunner().invoke(main, ["play", "--players", "2"], env=env)
    assert result.exit_code == 130, result.output
    assert "interrupted; the table is closed, hand 1 abandoned." in result.output
    assert "Aborted" not in result.output
    assert _store(env).load(_table_id(result.output))[-1].type == "table_closed"


@pytest.mark.parametrize(("args", "message"), [
    (["--hands", "-1"], "-1 is not in the range x>=0"),
    (["--name", "  "], "a name is 1 to 60 printable characters"),
    (["--variant", "rounce", "--scoring", "pool"], "Domino Rounce is always scored in points"),
])
def test_play_refuses_bad_options_before_creating_a_table(env, args, message):
    # A usage error, status 2, as `loo tournament` says it (Rounce in pool scoring was a
    # refusal by the ledger, status 1).
    result = CliRunner().invoke(main, ["play", *args], env=env)
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output
    assert "you are seat 0" not in result.output


def test_play_help_documents_the_options_and_how_to_answer():
    out = CliRunner().invoke(main, ["play", "--help"]).output
    for text in ("--players", "--variant", "--scoring", "--bot", "--name", "--hands",
                 "3-6", "take 6-3", "Ctrl-D", "loo replay TABLE N"):
        assert text in out, text


@pytest.mark.redis
def test_play_goes_on_with_redis_url_set_and_leaves_no_jobs(env, fixed_seeds, redis_url):
    """With REDIS_URL the API's follow-ups go to RQ; `loo play` must not wait on a worker."""
    from workers.queue import make_queue

    prefix = f"t{uuid.uuid4().hex[:8]}"
    result = CliRunner().invoke(main, ["play", "--hands", "1", "--players", "3"],
                                input="1\n" * 60,
                                env=env | {"REDIS_URL": redis_url, "LOO_QUEUE_PREFIX": prefix})
    assert result.exit_code == 0, result.output
    assert "hand 1 settled" in result.output
    queue = make_queue(redis_url, prefix)
    assert queue.count == 0
    queue.connection.close()


def test_replay_and_audit_of_unknown_table_are_clear_errors(env):
    runner = CliRunner()
    assert runner.invoke(main, ["db", "upgrade"], env=env).exit_code == 0  # a ledger, no table
    for args in (["replay", "nope", "1"], ["audit", "nope"]):
        result = runner.invoke(main, args, env=env)
        assert result.exit_code != 0
        assert "no table 'nope'" in result.output
        assert "Traceback" not in result.output


def _live_table(env: dict[str, str]) -> tuple[str, str]:
    """A table whose hand 1 waits on the person at seat 0; returns its id and the seed."""
    from ledger.bootstrap import Settings, bootstrap
    from ledger.core import commands as c

    container = bootstrap(Settings.from_env(env))
    seats = (("Ann", None), ("Bob", "heuristic"), ("Cat", "heuristic"))
    table_id, _t, _p = container.ledger.create_table(c.CreateTable(
        variant="loo", scoring=None, seats=seats, first_dealer=0, deal="shuffled"))
    stored = container.store.load(table_id)
    container.close()
    return table_id, next(s for s in stored if s.type == "tiles_dealt").data["seed"]


def test_replay_of_a_live_hand_keeps_its_tiles_hidden_unless_asked(env):
    table_id, seed = _live_table(env)
    runner = CliRunner()
    hidden = runner.invoke(main, ["replay", table_id, "1"], env=env)
    assert hidden.exit_code == 1
    assert "still being played: its tiles stay hidden until it is over" in hidden.output
    assert "deal:" not in hidden.output
    for extra in ([], ["--events"]):
        shown = runner.invoke(main, ["replay", table_id, "1", "--live", *extra], env=env)
        assert shown.exit_code == 0, shown.output
        assert seed not in shown.output  # secret until revealed, even for the admin
    assert "boneyard" in shown.output
    bad = runner.invoke(main, ["replay", table_id, "2"], env=env)
    assert "hand 2 has not been played" in bad.output and "(hands: 1 to 1)" in bad.output
    zero = runner.invoke(main, ["replay", table_id, "0"], env=env)
    assert zero.exit_code == 2 and "0 is not in the range x>=1" in zero.output


def test_replay_tells_every_kind_of_hand(env):
    """All-bot tables of every kind, a few hands each: every hand replays, and its result
    line matches the record."""
    from ledger.bootstrap import Settings, bootstrap
    from ledger.core import commands as c

    container = bootstrap(Settings.from_env(env))
    led, runner = container.ledger, CliRunner()
    for variant, scoring, players in [("loo", "pool", 4), ("loo", "points", 2),
                                      ("rounce", "points", 3)]:
        seats = tuple((f"B{i}", "random" if i % 2 else "heuristic") for i in range(players))
        table_id, _t, _p = led.create_table(c.CreateTable(
            variant=variant, scoring=scoring, seats=seats, first_dealer="lots",
            deal="shuffled"))
        for _ in range(3):
            if led.load(table_id).table.status == "playing":
                led.advance(table_id, led.execute(table_id, c.StartHand()).projection.version)
        for s in container.store.load(table_id):
            if s.type != "hand_completed":
                continue
            replay = runner.invoke(main, ["replay", table_id, str(s.hand)], env=env)
            assert replay.exit_code == 0, replay.output
            won = re.search(r"^  tricks won: (.*)$", replay.output, re.M).group(1)
            for seat, n in s.data["tricks_won"].items():
                assert f"B{seat} {'dropped' if int(seat) in s.data['dropped'] else n}" in won
    container.close()


def test_audit_names_the_first_tampered_event(env, tmp_path, fixed_seeds):
    """Alter a row as the database owner would (bypassing the trigger): audit must say where."""
    import json
    import sqlite3

    runner = CliRunner()
    table_id, db = _one_hand_played(runner, env, tmp_path)
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
    assert re.search(r"^table \w+: \d+ events, 1 hand: FAILED \(hash_chain: ", audit.output,
                     re.M), audit.output


@pytest.mark.parametrize("tamper", [
    "UPDATE events SET data = '{}' WHERE table_id = :t AND type = 'tile_played'",
    "UPDATE events SET type = 'bogus' WHERE table_id = :t AND type = 'trump_turned'",
    "UPDATE events SET data = json_set(data, '$.seed', 'zz') WHERE table_id = :t AND "
    "type = 'seed_revealed'",
    "UPDATE events SET data = json_set(data, '$.amount', '5') WHERE table_id = :t AND "
    "type = 'stake_posted'",
    "UPDATE events SET data = 'not json' WHERE table_id = :t AND type = 'stake_posted'",
    "DELETE FROM events WHERE table_id = :t AND version = 1",
], ids=["empty_play", "unknown_type", "seed_not_hex", "amount_a_string", "not_json",
        "first_event_gone"])
def test_audit_and_replay_report_a_damaged_record_without_a_traceback(env, tmp_path,
                                                                       fixed_seeds, tamper):
    """A row altered outside the service (not only re-hashed data: unreadable events, a
    missing first event, a seed that is not hex) fails the audit, exit 1, never a crash."""

    runner = CliRunner()
    table_id, db = _one_hand_played(runner, env, tmp_path)
    with db:
        db.execute("DROP TRIGGER events_no_update")
        db.execute("DROP TRIGGER events_no_delete")
        db.execute(tamper, {"t": table_id})
    db.close()
    audit = runner.invoke(main, ["audit", table_id], env=env)
    assert audit.exit_code == 1, audit.output
    assert isinstance(audit.exception, SystemExit), audit.exception  # not a traceback
    assert "FAILED" in audit.output or "cannot be read" in audit.output, audit.output
    replay = runner.invoke(main, ["replay", table_id, "1"], env=env)
    assert isinstance(replay.exception, SystemExit) or replay.exception is None, replay.exception
    if replay.exit_code:
        assert replay.exit_code == 1 and "Error: " in replay.output, replay.output
        assert "cannot be told" in replay.output or "cannot be read" in replay.output


def test_replay_and_audit_of_a_table_id_that_is_not_utf8_say_no_such_table(env):
    """A terminal in another encoding hands Python undecodable bytes as surrogates (`loo
    export` of such an id ended in the driver's UnicodeEncodeError, CLI audit)."""
    runner = CliRunner()
    for args in (["replay", "ab\udcffc", "1"], ["audit", "\udcff"], ["export", "\udcff"]):
        result = runner.invoke(main, args, env=env)
        assert result.exit_code == 1, result.output
        assert isinstance(result.exception, SystemExit), result.exception
        assert "no table" in result.output


def test_play_piped_into_a_reader_that_leaves_closes_the_table_quietly(tmp_path):
    """`loo play | head -n 3`: the reader closes the pipe; the table is closed, no traceback."""
    import os
    import subprocess
    import sys

    url = f"sqlite:///{tmp_path}/cli.db"
    env = {**os.environ, "DATABASE_URL": url}
    env.pop("REDIS_URL", None)
    play = subprocess.Popen(
        [sys.executable, "-c", "from ledger.cli.main import main; main()", "play",
         "--players", "3", "--hands", "50"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert play.stdout is not None and play.stdin is not None
    first = play.stdout.readline()
    play.stdout.close()  # the reader leaves after one line
    try:
        play.stdin.write(b"1\n" * 400)
        play.stdin.close()
    except BrokenPipeError:
        pass
    err = play.stderr.read().decode() if play.stderr else ""
    status = play.wait(timeout=60)
    assert status == 141, (status, err)
    assert "Traceback" not in err and err == "", err
    table_id = _table_id(first.decode())
    [t_status] = [e.data for e in _store({"DATABASE_URL": url}).load(table_id)
                  if e.type == "table_closed"]
    assert t_status is not None


def test_ctrl_c_in_any_command_exits_130_without_a_traceback(env, monkeypatch):
    """Other commands ended on Ctrl-C with click's "Aborted!" and status 1, read as the
    command's failure (CLI audit): every command now exits 130, as `loo play` does, saying
    it was interrupted, and writes nothing after."""
    import ledger.app.verify as verify

    def interrupted(*_args: Any, **_kwargs: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(verify, "verify_stream", interrupted)
    result = CliRunner().invoke(main, ["verify", "-"], input='{"format": "loo-hh"}\n', env=env)
    assert result.exit_code == 130, result.output
    assert "interrupted" in result.output and "Aborted" not in result.output
    assert "Traceback" not in result.output


def test_loo_audit_fails_naming_the_checkpoint_when_table_closed_is_deleted(env, tmp_path,
                                                                           fixed_seeds):
    """API.md Checkpoints: `loo play` closes its table; table_closed was not signed, so its
    row could be deleted (the table open again) and `loo audit` still said OK."""
    runner = CliRunner()
    table_id, db = _one_hand_played(runner, env, tmp_path)
    with db:
        version, kind = db.execute("SELECT version, type FROM events WHERE table_id = ? "
                                   "ORDER BY version DESC LIMIT 1", (table_id,)).fetchone()
    assert kind == "table_closed"
    assert runner.invoke(main, ["audit", table_id], env=env).exit_code == 0
    with db:
        db.execute("DROP TRIGGER events_no_delete")
        db.execute("DELETE FROM events WHERE table_id = ? AND version = ?", (table_id, version))
    db.close()
    audit = runner.invoke(main, ["audit", table_id], env=env)
    assert audit.exit_code == 1, audit.output
    assert re.search(rf"^checkpoints +FAILED: the log no longer reaches the checkpoint at "
                     rf"version {version} .*events deleted", audit.output, re.M), audit.output


def test_replay_of_a_voided_hand_says_so_and_the_next_hand_starts_from_the_pool_it_left(env):
    """API.md Corrections: a voided hand stays in the record, its chips given back. `loo
    replay` told a voided hand as if it stood ("complete", its balances, no word of the void),
    and counted its pool into the next hand's start: after hand 1 (pool 25) was voided, the
    re-entered hand 2 said "pool at the start 50" where the table had 25 (CLI audit)."""
    from ledger.bootstrap import Settings, bootstrap
    from ledger.core import commands as c

    container = bootstrap(Settings.from_env(env))
    led = container.ledger
    table_id, _t, _p = led.create_table(c.CreateTable(
        variant="loo", scoring="pool", seats=tuple((n, None) for n in ("Ann", "Bob", "Cat")),
        first_dealer=0, deal="results"))
    result = {"decisions": {"0": "play", "1": "play", "2": "play"},
              "tricks": {"0": 3, "1": 2, "2": 0}}
    led.execute(table_id, c.StartHand(result=result))
    led.execute(table_id, c.VoidHand(1, "tricks entered for the wrong seat"))
    led.execute(table_id, c.StartHand(result=result))
    container.close()
    runner = CliRunner()
    voided = runner.invoke(main, ["replay", table_id, "1"], env=env)
    assert voided.exit_code == 0, voided.output
    assert "hand 1 (complete, voided)" in voided.output.splitlines()[0]
    assert "  VOIDED (tricks entered for the wrong seat): its chips and points were given " \
           "back" in voided.output
    assert "  balances after the void: Ann 0, Bob 0, Cat 0 · pool carried 0" in voided.output
    again = runner.invoke(main, ["replay", table_id, "2"], env=env)
    assert again.exit_code == 0, again.output
    assert "hand 2 (complete) ·" in again.output.splitlines()[0]
    assert "· pool at the start 20" in again.output, again.output  # 3 antes + the dealer's
    assert "VOIDED" not in again.output


def test_replay_tells_whose_turn_timer_ran_out(env):
    """API.md turn timers: when a seat's timer runs out the service acts for it
    (`turn_timed_out`, then the action's own events). `loo replay` passed over the event and
    told the service's drop or play as the player's own."""
    from ledger.app import handlers
    from ledger.bootstrap import Settings, bootstrap
    from ledger.core import commands as c

    container = bootstrap(Settings.from_env(env))
    led = container.ledger
    table_id, _t, _p = led.create_table(c.CreateTable(
        variant="loo", scoring="pool", seats=tuple((n, None) for n in ("Ann", "Bob", "Cat")),
        first_dealer=0, deal="shuffled", options={"turn_seconds": 30}))
    timed: list[int] = []
    while True:
        p = led.load(table_id)
        if p.table.hand is None or p.table.hand.number != 1 or p.table.hand.phase == "complete":
            break
        owed = handlers.timer_owed(p)
        assert owed is not None, p.table.hand
        timed.append(owed[0])
        led.execute(table_id, c.TimeOut(owed[0]), expected_version=p.version)
    container.close()
    out = CliRunner().invoke(main, ["replay", table_id, "1"], env=env)
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    told = lines[lines.index("timers:") + 1:]
    names = ("Ann", "Bob", "Cat")
    assert told == [f"  {names[s]}'s turn timer ran out (30 s): the service acted for them"
                    for s in timed], out.output
