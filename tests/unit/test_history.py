"""loo-hh 1.0 (API.md "Hand history"): random games in every variant and deal mode export,
validate against the JSON Schema, verify offline, and mutated files are refused with the
first problem named."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import random
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.app.history import hand_document, schema, table_history
from ledger.app.service import Ledger
from ledger.app.verify import VerifyError, documents, verify_document, verify_stream
from ledger.core import commands as c
from ledger.core.rules.deal import deal, shuffle
from ledger.core.rules.legal import legal_actions
from ledger.store.hashing import event_hash
from ledger.store.memory import MemoryStore

# (variant, scoring, players, deal mode)
GAMES = [("loo", "pool", 4, "shuffled"), ("loo", "pool", 3, "recorded"),
         ("loo", "points", 2, "shuffled"), ("rounce", "points", 3, "shuffled"),
         ("loo", "pool", 4, "results"), ("rounce", "points", 2, "recorded"),
         ("loo", "points", 3, "results")]


def play(variant: str, scoring: str, players: int, mode: str, seed: int,
         hands: int = 3) -> tuple[Ledger, str]:
    """A table of `hands` hands, every move a random legal one (bots on shuffled tables)."""
    rng = random.Random(seed)
    counter = iter(range(10**6))
    led = Ledger(MemoryStore(), seeds=lambda: rng.randbytes(31) + bytes([next(counter) % 256]))
    bot = "random" if mode == "shuffled" else None
    seats = tuple((f"P{i}", bot) for i in range(players))
    tid, _, p = led.create_table(c.CreateTable(variant, scoring, seats, 0, mode,
                                               {"auto_deal": False}))
    for _ in range(hands):
        p = led.load(tid)
        if p.table.status != "playing":
            break
        if mode == "shuffled":
            led.execute(tid, c.StartHand())
            while (a := led.load(tid)).table.live and a.table.hand.turn is not None:
                led.execute(tid, c.PlayBot())
            if led.load(tid).table.live is False and not led.load(tid).table.settled:
                led.execute(tid, c.SettleHand())
            continue
        if mode == "results":
            n = players
            decisions = {str(s): "play" for s in range(n)}
            tricks = [0] * n
            for _k in range(5):
                tricks[rng.randrange(n)] += 1
            led.execute(tid, c.StartHand(result={"decisions": decisions, "tricks":
                                                 {str(s): k for s, k in enumerate(tricks)}}))
            continue
        d = deal(shuffle(rng.randbytes(32)), players, p.table.dealer)
        led.execute(tid, c.StartHand(hands=d.hands, turn_up=d.turn_up))
        while (a := led.load(tid)).table.live and a.table.hand.turn is not None:
            h = a.table.hand
            led.execute(tid, c.Act(rng.choice(legal_actions(h, h.turn))))
        if not led.load(tid).table.settled:
            led.execute(tid, c.SettleHand())
    return led, tid


def export(led: Ledger, tid: str) -> list[dict[str, Any]]:
    return list(table_history(tid, lambda a, b: led.store.load_raw(tid, a, b),
                              led.store.version(tid), led.checkpoints(tid)))


@pytest.mark.parametrize("game", GAMES, ids=["-".join(map(str, g)) for g in GAMES])
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32))
def test_every_hand_exports_validates_and_verifies_offline(game, seed):
    led, tid = play(*game, seed=seed)
    docs = export(led, tid)
    assert docs, "at least one hand is complete"
    key = led.signer.private.public_key()
    for doc in docs:
        jsonschema.validate(doc, schema())
        assert doc["hand"]["mode"] == game[3]
        assert ("transfers" in doc["hand"]) == (game[1] == "pool")
        assert doc["checkpoint"]["version"] == doc["events"][-1]["version"]
        verify_document(json.loads(json.dumps(doc)), key)  # as read back from a file


def _mutated(doc: dict[str, Any], how: str) -> dict[str, Any]:
    d = copy.deepcopy(doc)
    h = d["hand"]
    if how == "wrong_seed":
        h["seed"] = "00" * 32
    elif how == "swapped_tile":
        h["deal"]["0"][0], h["deal"]["1"][0] = h["deal"]["1"][0], h["deal"]["0"][0]
    elif how == "other_turn_up":
        h["turn_up"] = next(t for t in ("0-0", "1-0") if t != h["turn_up"])
    elif how == "broken_hash":
        d["events"][3]["hash"] = "f" * 64
    elif how == "unknown_spec_version":
        d["spec_version"] = "2.0"
    elif how == "mode_not_the_tables_deal":
        h["mode"] = "recorded"
    elif how == "relabelled_table":
        d["table"]["id"] = "f" * 32
        del d["checkpoint"]
    elif how == "seat_numbered_twice":
        d["table"]["seats"][1]["seat"] = 0
    elif how == "dealer_not_a_seat":
        d["table"]["seats"] = d["table"]["seats"][:3]
        h["dealer"] = 3
    elif how == "before_not_a_number":
        h["before"]["pool"] = "x"
    elif how == "name_too_long":
        d["table"]["seats"][2]["name"] = "A" * 100_000
    elif how == "name_blank":
        d["table"]["seats"][1]["name"] = ""
    elif how == "name_with_a_newline":
        d["table"]["seats"][0]["name"] = "Ann\nBob"
    elif how == "illegal_action":
        play = next(a for a in h["actions"] if a["type"] == "play")
        held = {t for s in h["deal"].values() for t in s}
        play["tile"] = next(t for t in ("0-0", "6-6", "3-3", "5-4") if t not in held)
    return d


WHY = {"wrong_seed": "seed does not match the commitment",
       "swapped_tile": r"deal is not the one the seed gives \(seat 0's tiles differ\)",
       "other_turn_up": r"deal is not the one the seed gives \(the turn-up differs\)",
       "broken_hash": "hash chain: version", "unknown_spec_version": "spec_version '2.0'",
       "illegal_action": "illegal",
       "mode_not_the_tables_deal": "hand.mode 'recorded' is not the table's deal 'shuffled'",
       "relabelled_table": "is an event of table [0-9a-f]{32}, not of table.id f{32}",
       "seat_numbered_twice": r"table.seats must number the seats 0 to 3, each once \(found "
                              r"\[0, 0, 2, 3\]\)",
       "dealer_not_a_seat": "dealer 3 is not a seat of this 3-seat table",
       "before_not_a_number": "hand.before.pool must be a whole number",
       # A name table creation refuses (ledger.core.names): found by the CLI audit, which
       # imported a 100,000-character name, an empty one and one with a newline.
       "name_too_long": r"table.seats\[2\].name: a name is 1 to 60 characters \(this one "
                        r"has 100000\)",
       "name_blank": r"table.seats\[1\].name: a name cannot be blank",
       "name_with_a_newline": r"table.seats\[0\].name: a name is printable text"}


@pytest.mark.parametrize("how", sorted(WHY))
def test_mutated_files_are_refused_naming_the_first_problem(how):
    led, tid = play("loo", "pool", 4, "shuffled", seed=7, hands=1)
    (doc,) = export(led, tid)
    with pytest.raises(VerifyError, match=WHY[how]):
        verify_document(_mutated(doc, how), led.signer.private.public_key())
    from ledger.app.imports import ImportRefused, plan

    with pytest.raises(ImportRefused, match=WHY[how]):  # import refuses it the same way
        plan([(1, _mutated(doc, how))])


def test_a_forged_checkpoint_signature_is_refused_with_the_key():
    led, tid = play("loo", "pool", 4, "shuffled", seed=8, hands=1)
    (doc,) = export(led, tid)
    doc["checkpoint"]["at"] = "2001-01-01T00:00:00+00:00"
    verify_document(doc)  # without a key only the hash is checked
    with pytest.raises(VerifyError, match="signature does not match"):
        verify_document(doc, led.signer.private.public_key())


def test_ndjson_stream_names_the_line_and_junk_is_refused_at_once():
    led, tid = play("loo", "pool", 3, "recorded", seed=9, hands=2)
    docs = export(led, tid)
    text = b"".join(json.dumps(d).encode() + b"\n" for d in docs)
    assert len(list(verify_stream(documents(io.BytesIO(text))))) == len(docs)
    broken = text + json.dumps(_mutated(docs[0], "broken_hash")).encode() + b"\n"
    with pytest.raises(VerifyError, match=f"line {len(docs) + 1}: hash chain"):
        list(verify_stream(documents(io.BytesIO(broken))))
    junk = io.BytesIO(random.Random(1).randbytes(50 * 1024 * 1024))
    with pytest.raises(VerifyError, match="line 1: not JSON|not a loo-hh"):
        list(verify_stream(documents(junk)))


def test_blank_lines_before_the_first_file_are_skipped_like_those_between_files():
    # NDJSON readers skip blank lines; a stream that starts with one is not "empty input",
    # and the line numbers in a failure still count the blank lines.
    led, tid = play("loo", "pool", 3, "recorded", seed=9, hands=2)
    docs = export(led, tid)
    text = b"\n\r\n" + b"".join(json.dumps(d).encode() + b"\n\n" for d in docs)
    assert [line for line, _ in documents(io.BytesIO(text))] == [3, 5]
    assert len(list(verify_stream(documents(io.BytesIO(text))))) == len(docs)
    broken = b"\n\n" + json.dumps(_mutated(docs[0], "broken_hash")).encode() + b"\n"
    with pytest.raises(VerifyError, match="line 3: hash chain"):
        list(verify_stream(documents(io.BytesIO(broken))))
    pretty = b"\n" + json.dumps(docs[0], indent=2).encode()
    assert len(list(verify_stream(documents(io.BytesIO(pretty))))) == 1
    with pytest.raises(VerifyError, match="line 1: empty input"):
        list(documents(io.BytesIO(b"\n \n\t\n")))
    with pytest.raises(VerifyError, match="line 2: not JSON"):
        list(documents(io.BytesIO(b"\n{oops\n")))


def test_loo_verify_reads_a_file_or_stdin_offline_and_exits_1_naming_the_failure(tmp_path):
    from click.testing import CliRunner

    from ledger.cli.main import main

    led, tid = play("rounce", "points", 3, "shuffled", seed=10, hands=2)
    docs = export(led, tid)
    key = led.signer.public()["public_key"]
    good = tmp_path / "good.ndjson"
    good.write_bytes(b"".join(json.dumps(d).encode() + b"\n" for d in docs))
    env = {"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}  # never opened
    r = CliRunner().invoke(main, ["verify", str(good), "--key", key], env=env)
    assert r.exit_code == 0 and f"OK: {len(docs)} hand(s) verified" in r.output, r.output
    bad = json.dumps(_mutated(docs[-1], "wrong_seed"))
    r = CliRunner().invoke(main, ["verify", "-"], input=bad, env=env)
    assert r.exit_code == 1 and "FAILED: line 1: hand 2: the seed does not match" in r.output
    r = CliRunner().invoke(main, ["verify", str(good), "--key", "not-a-key"], env=env)
    assert r.exit_code == 2


def test_loo_verify_with_a_key_says_which_hands_carry_no_checkpoint(tmp_path):
    """API.md "Hand history": loo verify checks the checkpoint signature where a key is
    given. A stream whose checkpoints were stripped (and whose chain an editor could then
    re-hash) was reported "OK: n hand(s) verified (checkpoint signatures checked)" though no
    signature was checked: it now says how many were and names the first hand without."""
    from click.testing import CliRunner

    from ledger.cli.main import main

    led, tid = play("loo", "pool", 3, "shuffled", seed=11, hands=2)
    docs = export(led, tid)
    key = led.signer.public()["public_key"]
    del docs[1]["checkpoint"]
    path = tmp_path / "stripped.ndjson"
    path.write_bytes(b"".join(json.dumps(d).encode() + b"\n" for d in docs))
    env = {"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}  # never opened
    r = CliRunner().invoke(main, ["verify", str(path), "--key", key], env=env)
    assert r.exit_code == 0, r.output
    assert r.output.strip() == (
        f"OK: 2 hand(s) verified; 1 checkpoint signature(s) checked, 1 hand(s) carry no "
        f"checkpoint, so nothing signs them (the first: hand 2 of table {tid})"), r.output
    r = CliRunner().invoke(main, ["verify", str(path)], env=env)  # no key: nothing claimed
    assert r.exit_code == 0 and r.output.strip() == "OK: 2 hand(s) verified", r.output


def _same_hand(a: dict[str, Any], b: dict[str, Any]) -> None:
    """Round trip: the same hand, ids, times, hashes and the source's deal mode aside."""
    keep = ("number", "dealer", "deal", "turn_up", "trump", "tricks", "result", "voided",
            "before")
    assert {k: a["hand"].get(k) for k in keep} == {k: b["hand"].get(k) for k in keep}
    for k in ("transfers", "scores"):  # versions are ids: a shuffled hand reveals its seed
        assert [{**x, "version": 0} for x in a["hand"].get(k, [])] == [
            {**x, "version": 0} for x in b["hand"].get(k, [])]
    strip = [{k: v for k, v in x.items() if k != "drawn"} for x in a["hand"]["actions"]]
    assert strip == [{k: v for k, v in x.items() if k != "drawn"} for x in b["hand"]["actions"]]
    types = [e["type"] for e in a["events"] if e["type"] != "seed_revealed"]
    assert types == [e["type"] for e in b["events"]]


@pytest.mark.parametrize("game", GAMES, ids=["-".join(map(str, g)) for g in GAMES])
def test_export_import_export_gives_the_same_hands(game):
    from ledger.app.imports import plan

    led, tid = play(*game, seed=11)
    docs = export(led, tid)
    target = Ledger(MemoryStore())
    new_id, _tokens, _p = target.import_table(plan(enumerate(docs, 1)))
    again = export(target, new_id)
    assert len(again) == len(docs)
    for a, b in zip(docs, again, strict=True):
        _same_hand(a, b)
        assert b["hand"]["mode"] == ("results" if game[3] == "results" else "recorded")
        verify_document(b, target.signer.private.public_key())
    assert export(target, new_id)[0]["table"]["id"] == new_id


def test_an_illegal_file_is_refused_whole_naming_the_hand_and_action():
    from ledger.app.imports import ImportRefused, plan

    led, tid = play("loo", "pool", 3, "recorded", seed=12, hands=2)
    docs = export(led, tid)
    bad = _mutated(docs[1], "illegal_action")
    target = Ledger(MemoryStore())
    with pytest.raises(ImportRefused, match=r"line 2: hand 2, action \d+ \(seat \d play"):
        target.import_table(plan(enumerate([docs[0], bad], 1)))
    with pytest.raises(ImportRefused, match="hand 2 where hand 1 was expected"):
        plan(enumerate([docs[1]], 1))
    assert target.store.table_ids() == []  # nothing created


def test_loo_import_creates_the_table_or_refuses_the_whole_file(tmp_path):
    from click.testing import CliRunner

    from ledger.cli.main import main
    from ledger.store.sqlite import SqliteStore

    led, tid = play("loo", "points", 3, "results", seed=13, hands=3)
    docs = export(led, tid)
    text = "".join(json.dumps(d) + "\n" for d in docs)
    env = {"DATABASE_URL": f"sqlite:///{tmp_path}/loo.db"}
    bad = text.replace('"spec_version": "1.0"', '"spec_version": "9.9"', 1)
    r = CliRunner().invoke(main, ["import", "-"], input=bad, env=env)
    assert r.exit_code == 1 and "REFUSED: line 1: spec_version '9.9'" in r.output, r.output
    r = CliRunner().invoke(main, ["import", "-"], input=text, env=env)
    assert r.exit_code == 0, r.output
    out = json.loads(r.output.strip().splitlines()[-1])
    assert out["hands"] == 3 and out["admin_token"]
    store = SqliteStore(f"{tmp_path}/loo.db")
    assert store.table_ids() == [out["id"]]  # the refused file created nothing
    assert len(store.checkpoints(out["id"])) == 3
    store.close()
    r = CliRunner().invoke(main, ["export", out["id"]], env=env)
    assert r.exit_code == 0 and len(r.stdout.strip().splitlines()) == 3


def test_import_refuses_junk_naming_the_line():
    from ledger.app.imports import ImportRefused, plan
    from ledger.app.verify import NotJson

    junk = io.BytesIO(b'{"format": "loo-hh"}\n' + random.Random(2).randbytes(1 << 20))
    with pytest.raises(ImportRefused, match="line 1: spec_version None is not supported"):
        plan(documents(junk))
    with pytest.raises(NotJson, match="line 1: not JSON"):  # malformed: the API's 400
        plan(documents(io.BytesIO(random.Random(3).randbytes(1 << 20))))


@pytest.mark.parametrize("game", GAMES, ids=["-".join(map(str, g)) for g in GAMES])
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32))
def test_the_exports_shortcuts_give_what_the_plain_decode_fold_and_actions_give(game, seed):
    """The export decodes recurring events once (shared: they are frozen) and encodes their
    data once, writes plays straight from their events, folds only the table-level events
    of a hand and reads its decisions and tricks from its events: the same events, data,
    tables and files as decoding each event and folding every move."""
    from ledger.app.history import _TABLE_LEVEL, _actions, _decode_raw, action_json, actions_of
    from ledger.app.projector import decode, project
    from ledger.core.rules import table as tb
    from ledger.core.rules.tiles import NAMES

    led, tid = play(*game, seed=seed, hands=4)
    stored, raw = led.store.load(tid), led.store.load_raw(tid)
    memo: dict[Any, Any] = {}
    for encoded in (False, True, True):  # the last from memo
        decoded, datas = _decode_raw(raw, memo, encoded)
        assert decoded == [decode(s) for s in stored]
        assert [orjson.dumps(d) for d in datas] == [orjson.dumps(s.data) for s in stored]
    assert memo, "some events were shared"
    p = project([])
    for number in sorted({s.hand for s in stored if s.hand is not None}):
        first = next(s.version for s in stored if s.hand == number)
        before = project(stored[:first - 1]).table
        mine = [s for s in stored if s.hand == number]
        decoded = [decode(s) for s in mine]
        for ordered in (False, True):
            assert _actions(decoded, ordered) == [action_json(a)
                                                  for a in actions_of(decoded, ordered)]
        folded = tb.replay(decoded, before)
        table_only = tb.replay([e for e in decoded if type(e) in _TABLE_LEVEL], before)
        assert {**table_only.__dict__, "hand": None} == {**folded.__dict__, "hand": None}
        if not any(s.type == "hand_settled" for s in mine):
            continue
        h = folded.hand
        doc = hand_document(tid, before, mine)
        assert doc["hand"]["result"]["decisions"] == {
            str(s): d for s, d in enumerate(h.decisions) if d is not None}
        assert doc["hand"]["result"].get("won_without_play") == h.won_without_play
        assert doc["hand"]["tricks"] == [
            {"trick": i + 1, "leader": tr.leader, "suit": tr.suit,
             "plays": [{"seat": s, "tile": NAMES[x]} for s, x in tr.plays],
             "winner": tr.winner} for i, tr in enumerate(h.tricks)]
    assert p.version == 0


@pytest.mark.parametrize("game", GAMES, ids=["-".join(map(str, g)) for g in GAMES])
@settings(max_examples=2, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32))
def test_the_ndjson_export_is_each_hands_file_built_on_its_own(game, seed):
    """What the history endpoints stream is, line by line, orjson's encoding of the file
    that one hand's events give alone (GET .../hands/{n}/history builds it that way)."""
    from ledger.app.history import hand_events, table_history_ndjson
    from ledger.app.projector import project

    led, tid = play(*game, seed=seed, hands=3)
    stored = led.store.load(tid)
    cps = {cp["version"]: cp for cp in led.checkpoints(tid)}
    want = []
    for number in sorted({s.hand for s in stored if s.hand is not None}):
        first = next(s.version for s in stored if s.hand == number)
        mine = hand_events(stored[first - 1:], number)
        if not any(s.type == "hand_settled" for s in mine):
            continue
        end = [s.version for s in mine if s.type in ("hand_settled", "game_won")][-1]
        doc = hand_document(tid, project(stored[:first - 1]).table, mine, cps.get(end))
        want.append(orjson.dumps(doc, option=orjson.OPT_APPEND_NEWLINE))
    got = list(table_history_ndjson(tid, lambda a, b: led.store.load_raw(tid, a, b),
                                    led.store.version(tid), list(cps.values())))
    assert got == want and got
    assert [orjson.dumps(d, option=orjson.OPT_APPEND_NEWLINE) for d in export(led, tid)] == got


GOLDEN = Path(__file__).parent / "data" / "loo_hh_golden.ndjson"


@pytest.mark.parametrize("case", range(7))
def test_the_export_writes_the_same_bytes_as_before(case):
    """Stored rows of the first hands of seven tables (four variants and deal modes, an
    imported one; SQLite's data text and PostgreSQL's jsonb text) and the SHA-256 of the
    NDJSON the export wrote for them before its shortcuts (0627b71): still the same bytes."""
    from ledger.app.history import table_history_ndjson
    from ledger.store.base import RawEvent

    t = json.loads(GOLDEN.read_text(encoding="utf-8").splitlines()[case])
    rows = [RawEvent(*r) for r in t["rows"]]
    lines = list(table_history_ndjson(t["table_id"], lambda a, b: rows[a:b], len(rows),
                                      t["checkpoints"]))
    assert len(lines) == t["hands"]
    assert hashlib.sha256(b"".join(lines)).hexdigest() == t["sha256"]


# ---- a stream's files of one table follow each other -------------------------------------
def _stream(docs: list[dict[str, Any]]) -> io.BytesIO:
    return io.BytesIO(b"".join(orjson.dumps(d) + b"\n" for d in docs))


def _voided_back(seed: int) -> tuple[Ledger, str]:
    """A results table: hands 1-2, then 2 and 1 voided (back to 1), then hands 3-5, 5
    voided: hand 1's hand_voided lies after hand 2's in the log (its file carries it)."""
    led, tid = play("loo", "pool", 4, "results", seed=seed, hands=2)
    for number in (2, 1):
        led.execute(tid, c.VoidHand(number=number, reason="typo"))
    rng = random.Random(seed)
    for _ in range(3):
        tricks = [0] * 4
        for _k in range(5):
            tricks[rng.randrange(4)] += 1
        led.execute(tid, c.StartHand(result={"decisions": {str(s): "play" for s in range(4)},
                                             "tricks": {str(s): k for s, k in enumerate(tricks)}}))
    led.execute(tid, c.VoidHand(number=5, reason="typo"))
    return led, tid


@pytest.mark.parametrize("game", GAMES[:3], ids=["-".join(map(str, g)) for g in GAMES[:3]])
def test_a_stream_with_a_hand_left_out_repeated_or_moved_is_refused(game):
    """Each file is sound on its own; the stream is not: the files of a table must follow
    each other in its log (helper audit: such streams verified OK before)."""
    led, tid = play(*game, seed=5, hands=4)
    docs = export(led, tid)
    assert len(docs) >= 3
    assert len(list(verify_stream(documents(_stream(docs))))) == len(docs)
    left_out = [docs[0], *docs[2:]]
    with pytest.raises(VerifyError, match=r"line 2: hand 3: versions \d+ to \d+ of table "
                                          r".* are missing between hand 1 and it"):
        list(verify_stream(documents(_stream(left_out))))
    with pytest.raises(VerifyError, match="line 3: hand 2 of table .* comes after hand 2"):
        list(verify_stream(documents(_stream([docs[0], docs[1], docs[1], *docs[2:]]))))
    with pytest.raises(VerifyError, match="line 2: hand 3: versions .* are missing"):
        list(verify_stream(documents(_stream([docs[0], docs[2], docs[1], *docs[3:]]))))
    with pytest.raises(VerifyError, match="line 2: hand 1 of table .* comes after hand 2"):
        list(verify_stream(documents(_stream([docs[1], docs[0], *docs[2:]]))))


def test_a_stream_from_any_hand_to_any_later_one_verifies_voids_included():
    """What a club's export from a date to a date gives: any run of a table's hands, the
    hands voided back to included (their voids are in files the run may not hold)."""
    led, tid = _voided_back(seed=3)
    docs = export(led, tid)
    assert [d["hand"]["number"] for d in docs] == [1, 2, 3, 4, 5]
    assert [d["hand"]["voided"] for d in docs] == [True, True, False, False, True]
    for i in range(len(docs)):
        for j in range(i + 1, len(docs) + 1):
            assert len(list(verify_stream(documents(_stream(docs[i:j]))))) == j - i


def test_a_void_held_back_must_fill_its_place_in_the_chain():
    """Hand 1's late hand_voided joins the chain after hand 2's: edited, the stream fails
    at the hand after it, where the chain reaches it; hands of two tables interleave."""
    led, tid = _voided_back(seed=4)
    docs = export(led, tid)
    other, oid = play("loo", "pool", 3, "recorded", seed=2, hands=2)
    mixed = [docs[0], *export(other, oid)[:1], docs[1], *export(other, oid)[1:], *docs[2:]]
    assert len(list(verify_stream(documents(_stream(mixed))))) == len(mixed)
    # A forger who rewrites the late void onto another chain and recomputes its hash: its
    # own file still verifies; the stream does not, where the void's version falls.
    forged = copy.deepcopy(docs)
    void = forged[0]["events"][-1]
    assert void["type"] == "hand_voided"
    assert void["version"] > forged[0]["events"][-2]["version"] + 1  # after hand 2's
    void["prev_hash"] = "1" * 64
    void["hash"] = event_hash(void["prev_hash"], tid, void["version"], void["type"],
                              void["hand"], void["data"], void["causation"], void["recorded_at"])
    # The void's signed checkpoint names the hash it had: the file alone fails there ...
    with pytest.raises(VerifyError, match="the void_checkpoint .* does not name this hand's "
                                          "hand_voided with its hash"):
        verify_document(json.loads(json.dumps(forged[0])))
    # ... and without it (stripped: a forger cannot sign another) its own file verifies.
    del forged[0]["void_checkpoint"]
    verify_document(json.loads(json.dumps(forged[0])))
    with pytest.raises(VerifyError, match=r"line 3: hash chain: version \d+ \(hand 1's "
                                          r"hand_voided\): prev_hash does not match"):
        list(verify_stream(documents(_stream(forged))))


def test_a_json_array_of_files_is_read_alike_on_one_line_or_several():
    """The array was read as its files only when spread over several lines; on one line it
    was one document, refused as "a JSON object is expected" (history audit)."""
    led, tid = play("loo", "pool", 3, "recorded", seed=11, hands=2)
    docs = export(led, tid)
    one_line = orjson.dumps(docs)
    several = json.dumps(docs, indent=1).encode()
    assert b"\n" not in one_line and b"\n" in several
    for text in (one_line, several):
        got = list(verify_stream(documents(io.BytesIO(text))))
        assert [v.number for v in got] == [d["hand"]["number"] for d in docs]


def test_an_interrupted_loo_export_leaves_no_file_and_keeps_the_one_there(tmp_path,
                                                                          monkeypatch):
    """`loo export -o FILE` wrote as it went: stopped (Ctrl-C, a lost database) it left the
    hands so far, a file that verifies as a shorter history (CLI audit). Now the file is
    written whole or not at all, and one already there is kept as it was."""
    import os
    import stat

    from click.testing import CliRunner

    import ledger.app.history as history
    from ledger.cli.main import main

    led, tid = play("loo", "points", 3, "results", seed=17, hands=3)
    text = "".join(json.dumps(d) + "\n" for d in export(led, tid))
    env = {"DATABASE_URL": f"sqlite:///{tmp_path}/loo.db"}
    r = CliRunner().invoke(main, ["import", "-"], input=text, env=env)
    assert r.exit_code == 0, r.output
    new = json.loads(r.output.strip().splitlines()[-1])["id"]
    out = tmp_path / "hands.ndjson"
    r = CliRunner().invoke(main, ["export", new, "-o", str(out)], env=env)
    assert r.exit_code == 0, r.output
    whole = out.read_bytes()
    assert len(whole.splitlines()) == 3
    assert stat.S_IMODE(out.stat().st_mode) == 0o666 & ~_umask()
    real = history.table_history_ndjson

    def stopped_after_one(*args, **kwargs):
        for i, line in enumerate(real(*args, **kwargs)):
            if i == 1:
                raise KeyboardInterrupt
            yield line

    monkeypatch.setattr(history, "table_history_ndjson", stopped_after_one)
    for target in (out, tmp_path / "new.ndjson"):
        r = CliRunner().invoke(main, ["export", new, "-o", str(target)], env=env)
        assert r.exit_code != 0
        assert target.read_bytes() == whole if target == out else not target.exists()
    r = CliRunner().invoke(main, ["export", new, "--hand", "9", "-o", str(tmp_path / "9")],
                           env=env)
    assert r.exit_code == 1 and "hand 9" in r.output and not (tmp_path / "9").exists()
    assert sorted(os.listdir(tmp_path)) == ["hands.ndjson", "loo.db"] + sorted(
        p for p in os.listdir(tmp_path) if p.startswith("loo.db") and p != "loo.db")


def _umask() -> int:
    import os

    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_corrections_a_voided_hands_file_carries_its_voids_checkpoint_and_verifies_with_a_key():
    """API.md Checkpoints, Corrections, Hand history: a void is signed like a settlement, and
    a voided hand's file carries that checkpoint (`void_checkpoint`, naming its hand_voided,
    also a void held back after later hands) beside its settlement's (`checkpoint`): the
    JSON Schema validates it, loo verify checks it (its signature with the key), the import
    takes the files, and the imported table's voids are signed in turn."""
    from ledger.app.imports import plan

    led, tid = _voided_back(seed=6)
    docs = export(led, tid)
    key = led.signer.private.public_key()
    cps = {cp["version"]: cp for cp in led.checkpoints(tid)}
    assert [d["hand"]["voided"] for d in docs] == [True, True, False, False, True]
    for doc in docs:
        jsonschema.validate(doc, schema())
        voids = [e for e in doc["events"] if e["type"] == "hand_voided"]
        if doc["hand"]["voided"]:
            (void,) = voids
            assert doc["void_checkpoint"] == cps[void["version"]]
            assert doc["void_checkpoint"]["hash"] == void["hash"]
        else:
            assert not voids and "void_checkpoint" not in doc
        done = verify_document(json.loads(json.dumps(doc)), key)
        assert done.void_checkpoint == doc["hand"]["voided"]
    assert len(list(verify_stream(documents(_stream(docs)), key))) == len(docs)

    forged = copy.deepcopy(docs[0])
    forged["void_checkpoint"]["at"] = "2001-01-01T00:00:00+00:00"
    verify_document(forged)  # without a key only the event it names is checked
    with pytest.raises(VerifyError, match="hand 1: void_checkpoint at version .*: the "
                                          "signature does not match"):
        verify_document(forged, key)
    other = copy.deepcopy(docs[0])
    other["void_checkpoint"] = other["checkpoint"]  # names the settlement, not the void
    with pytest.raises(VerifyError, match="void_checkpoint .* does not name this hand's "
                                          "hand_voided"):
        verify_document(other)

    target = Ledger(MemoryStore())
    new_id, _tokens, _p = target.import_table(plan(enumerate(docs, 1)))
    again = export(target, new_id)
    assert [d["hand"]["voided"] for d in again] == [True, True, False, False, True]
    for a, b in zip(docs, again, strict=True):
        _same_hand(a, b)
        assert ("void_checkpoint" in b) == a["hand"]["voided"]
        verify_document(b, target.signer.private.public_key())


def test_loo_verify_with_a_key_says_which_voided_hands_carry_no_void_checkpoint(tmp_path):
    """A void made before voids were signed (or whose checkpoint was stripped) is counted
    and named, as hands without a checkpoint are; the files still verify (exit 0)."""
    from click.testing import CliRunner

    from ledger.cli.main import main

    led, tid = _voided_back(seed=7)
    docs = export(led, tid)
    key = led.signer.public()["public_key"]
    env = {"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}  # never opened
    path = tmp_path / "hands.ndjson"
    path.write_bytes(b"".join(json.dumps(d).encode() + b"\n" for d in docs))
    r = CliRunner().invoke(main, ["verify", str(path), "--key", key], env=env)
    assert r.exit_code == 0 and r.output.strip() == (
        "OK: 5 hand(s) verified (checkpoint signatures checked)"), r.output
    for d in docs[:2]:
        del d["void_checkpoint"]
    path.write_bytes(b"".join(json.dumps(d).encode() + b"\n" for d in docs))
    r = CliRunner().invoke(main, ["verify", str(path), "--key", key], env=env)
    assert r.exit_code == 0, r.output
    assert r.output.strip() == (
        f"OK: 5 hand(s) verified; 6 checkpoint signature(s) checked; 2 voided hand(s) carry "
        f"no void_checkpoint, so nothing signs their void (the first: hand 1 of table {tid})"
    ), r.output


# ---- the table's close: in its last complete hand's file ---------------------------------
def _closed(game: tuple[str, str, int, str], seed: int, abandon: bool) -> tuple[Ledger, str]:
    """A table of two hands, closed after them or (`abandon`) during a third."""
    led, tid = play(*game, seed=seed, hands=2)
    if abandon:
        mode = game[3]
        if mode == "shuffled":
            led.execute(tid, c.StartHand())
            led.execute(tid, c.PlayBot())
        elif mode == "recorded":
            p = led.load(tid)
            d = deal(shuffle(bytes(32)), game[2], p.table.dealer)
            led.execute(tid, c.StartHand(hands=d.hands, turn_up=d.turn_up))
    led.execute(tid, c.CloseTable())
    return led, tid


CLOSED = [(g, abandon) for g in GAMES[:3] for abandon in (False, True)]


@pytest.mark.parametrize(("game", "abandon"), CLOSED,
                         ids=[f"{'-'.join(map(str, g))}-{'abandoned' if a else 'settled'}"
                              for g, a in CLOSED])
def test_closing_the_last_hands_file_carries_the_close_and_verifies(game, abandon):
    """API.md Checkpoints, Hand history: table_closed is signed, and its checkpoint was in no
    file. The last complete hand's file now carries `close`: the events after its own up to
    table_closed (an abandoned hand's too) and the checkpoint naming it; the schema takes
    it, loo verify checks the chain, the rules (chips left over, the hand abandoned) and the
    signature, and the one-hand file says the same as the table's export."""
    from ledger.app.history import close_part, own_run_length

    led, tid = _closed(game, seed=11, abandon=abandon)
    docs = export(led, tid)
    key = led.signer.private.public_key()
    assert len(docs) == 2 and "close" not in docs[0]
    close = docs[-1]["close"]
    closed = close["events"][-1]
    cps = {cp["version"]: cp for cp in led.checkpoints(tid)}
    assert closed["type"] == "table_closed" and close["checkpoint"] == cps[closed["version"]]
    assert close["events"][0]["prev_hash"] == docs[-1]["events"][-1]["hash"]
    assert closed["data"]["abandoned_hand"] == (3 if abandon else None)
    for doc in docs:
        jsonschema.validate(doc, schema())
    done = verify_document(json.loads(json.dumps(docs[-1])), key)
    assert done.closed and done.close_checkpoint
    assert [d.closed for d in verify_stream(documents(_stream(docs)), key)] == [False, True]
    # The one hand's file, as GET .../hands/{n}/history builds it, carries the same close.
    stored = led.store.load(tid, 0, led.store.version(tid))
    first = next(s.version for s in stored if s.type == "hand_started" and s.hand == 2)
    later = stored[first - 1:]
    assert close_part(tid, later[own_run_length(later, 2):], cps) == close


def test_closing_a_deleted_or_edited_close_fails_verification():
    led, tid = _closed(GAMES[0], seed=12, abandon=True)
    doc = export(led, tid)[-1]
    key = led.signer.private.public_key()
    deleted = copy.deepcopy(doc)
    deleted["close"]["events"].pop()  # the table_closed goes, its checkpoint stays
    with pytest.raises(VerifyError, match="hand 2: close.checkpoint names version .*, the "
                                          "table's table_closed, .*: the close was deleted"):
        verify_document(deleted)
    gone = copy.deepcopy(doc)
    del gone["close"]["checkpoint"]
    gone["close"]["events"] = []
    with pytest.raises(VerifyError, match="close.events must end with the table's "
                                          "table_closed"):
        verify_document(gone)
    # The chips left over edited and the chain re-hashed (as an editor could): the rules
    # give another close, and the checkpoint no longer names it.
    edited = copy.deepcopy(doc)
    closed = edited["close"]["events"][-1]
    closed["data"]["leftover"] += 5
    closed["hash"] = event_hash(closed["prev_hash"], tid, closed["version"], closed["type"],
                                closed["hand"], closed["data"], closed["causation"],
                                closed["recorded_at"])
    with pytest.raises(VerifyError, match="hand 2: the table's close .* is not what the rules "
                                          "give for the table it closed"):
        verify_document(edited)
    unhashed = copy.deepcopy(doc)
    unhashed["close"]["events"][-1]["data"]["leftover"] += 5
    with pytest.raises(VerifyError, match="hash chain: close: version .*hash does not match"):
        verify_document(unhashed)
    forged = copy.deepcopy(doc)
    forged["close"]["checkpoint"]["at"] = "2001-01-01T00:00:00+00:00"
    verify_document(forged)  # without a key only the event it names is checked
    with pytest.raises(VerifyError, match="hand 2: close checkpoint at version .*: the "
                                          "signature does not match"):
        verify_document(forged, key)
    # The close moved to an earlier hand's file: it does not continue that file's chain.
    docs = export(led, tid)
    with pytest.raises(VerifyError, match="close: version .* is missing"):
        verify_document(docs[0] | {"close": docs[-1]["close"]})


def test_closing_old_files_without_the_close_still_verify(tmp_path):
    """Files exported before the close was carried (no `close`) verify as before, alone and
    in a stream; with a key, a close without its checkpoint is counted and named."""
    from click.testing import CliRunner

    from ledger.cli.main import main

    led, tid = _closed(GAMES[4], seed=13, abandon=False)
    docs = export(led, tid)
    key = led.signer.public()["public_key"]
    old = [{k: v for k, v in d.items() if k != "close"} for d in docs]
    assert len(list(verify_stream(documents(_stream(old))))) == 2
    env = {"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}  # never opened
    path = tmp_path / "hands.ndjson"
    path.write_bytes(_stream(docs).getvalue())
    r = CliRunner().invoke(main, ["verify", str(path), "--key", key], env=env)
    assert r.exit_code == 0 and r.output.strip() == (
        "OK: 2 hand(s) verified (checkpoint signatures checked)"), r.output
    del docs[-1]["close"]["checkpoint"]
    path.write_bytes(_stream(docs).getvalue())
    r = CliRunner().invoke(main, ["verify", str(path), "--key", key], env=env)
    assert r.exit_code == 0, r.output
    assert r.output.strip() == (
        f"OK: 2 hand(s) verified; 2 checkpoint signature(s) checked; 1 table close(s) carry "
        f"no checkpoint, so nothing signs them (the first: in hand 2 of table {tid})"), r.output


@pytest.mark.parametrize("replay", [False, True], ids=["closed-again", "played-then-closed"])
def test_closing_after_a_void_reopened_the_table_the_last_close_is_carried(replay):
    """A void of a closed table's last hand undoes the close (API.md Corrections): that
    table_closed is in the voided hand's own events, and the close carried is the one that
    stands, in the file of the last complete hand before it."""
    led, tid = _closed(GAMES[4], seed=14, abandon=False)
    led.execute(tid, c.VoidHand(number=2, reason="typo"))
    if replay:
        led.execute(tid, c.StartHand(result={"decisions": {str(s): "play" for s in range(4)},
                                             "tricks": {"0": 2, "1": 1, "2": 1, "3": 1}}))
    led.execute(tid, c.CloseTable())
    docs = export(led, tid)
    key = led.signer.private.public_key()
    closes = [e.version for e in led.store.load(tid, 0, led.store.version(tid))
              if e.type == "table_closed"]
    assert len(closes) == 2 and len(docs) == (3 if replay else 2)
    assert closes[0] in [e["version"] for e in docs[1]["events"]]  # the undone close
    assert [("close" in d) for d in docs] == [False] * (len(docs) - 1) + [True]
    assert docs[-1]["close"]["events"][-1]["version"] == closes[1]
    assert docs[-1]["close"]["checkpoint"]["version"] == closes[1]
    done = list(verify_stream(documents(_stream(docs)), key))
    assert done[-1].closed and done[-1].close_checkpoint


# ---- seat names: in the hash chain with every hand ----------------------------------------
@pytest.mark.parametrize("game", GAMES, ids=["-".join(map(str, g)) for g in GAMES])
def test_seat_names_an_edited_name_in_a_file_fails_verification(game):
    """API.md Hand history: `table.seats[].name` was read from no event of the file, so a
    name edited in a file (a hand credited to someone else) verified. Each hand_started now
    names the seats (in the hash chain, under the hand's checkpoint): the edited name fails,
    naming the seat, in every hand's file, alone or in a stream."""
    led, tid = play(*game, seed=21, hands=2)
    docs = export(led, tid)
    names = [f"P{i}" for i in range(game[2])]
    for doc in docs:
        started = next(e for e in doc["events"] if e["type"] == "hand_started")
        assert started["data"]["seat_names"] == names
        edited = copy.deepcopy(doc)
        edited["table"]["seats"][1]["name"] = "Mallory"
        with pytest.raises(VerifyError, match=(
                rf"table.seats\[1\].name: the file says 'Mallory', but hand "
                rf"{doc['hand']['number']}'s hand_started \(version {started['version']}, in "
                rf"the hash chain\) names 'P1': the name was edited")):
            verify_document(edited)
    edited = copy.deepcopy(docs)
    edited[-1]["table"]["seats"][0]["name"] = "P0 "[:2] + "x"
    with pytest.raises(VerifyError, match=r"line 2: table.seats\[0\].name"):
        list(verify_stream(documents(_stream(edited))))
    # Names changed in the chain too (re-hashed, as an editor could): the rules, fed the
    # file's names, still give them, and the hand's checkpoint no longer holds with the key.
    forged = copy.deepcopy(docs[0])
    forged["table"]["seats"][1]["name"] = "Mallory"
    prev = forged["events"][0]["prev_hash"]
    for e in forged["events"]:
        if e["type"] == "hand_started":
            e["data"]["seat_names"][1] = "Mallory"
        e["prev_hash"] = prev
        e["hash"] = prev = event_hash(prev, tid, e["version"], e["type"], e["hand"],
                                      e["data"], e["causation"], e["recorded_at"])
    with pytest.raises(VerifyError, match="does not name an event of this hand with its hash"):
        verify_document(forged, led.signer.private.public_key())


def _as_before_seat_names(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The files as an earlier release's rows give them: no seat_names in hand_started (the
    chain hashed without it, so no checkpoint of this run holds)."""
    out = copy.deepcopy(docs)
    prev = None
    for doc in out:
        doc.pop("checkpoint", None)
        doc.pop("void_checkpoint", None)
        for e in doc["events"]:
            e["data"].pop("seat_names", None)
            e["prev_hash"] = prev = e["prev_hash"] if prev is None else prev
            e["hash"] = prev = event_hash(prev, e["table_id"], e["version"], e["type"],
                                          e["hand"], e["data"], e["causation"],
                                          e["recorded_at"])
    return out


@pytest.mark.parametrize("game", GAMES, ids=["-".join(map(str, g)) for g in GAMES])
def test_seat_names_files_of_hands_started_before_still_verify(game):
    """Hands started before hand_started named the seats export and verify as before, alone
    and in a stream (their names are checked by nothing): rows an earlier release stored
    (the golden table that verifies), and this run's files as such rows would give them."""
    from ledger.store.base import RawEvent

    t = json.loads(GOLDEN.read_text(encoding="utf-8").splitlines()[0])
    rows = [RawEvent(*r) for r in t["rows"]]
    golden = list(table_history(t["table_id"], lambda a, b: rows[a:b], len(rows),
                                t["checkpoints"]))
    assert len(list(verify_stream(documents(_stream(golden))))) == len(golden) == 3
    led, tid = play(*game, seed=22, hands=2)
    docs = _as_before_seat_names(export(led, tid))
    assert all("seat_names" not in e["data"] for d in docs for e in d["events"])
    assert len(list(verify_stream(documents(_stream(docs))))) == len(docs)
    for doc in docs:
        verify_document(doc)
