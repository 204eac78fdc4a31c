"""API.md "Checkpoints" and "Hand history", README "Rotating the checkpoint key": each
checkpoint names the key that signed it (key_id, not a signed field), and a checkpoint is
checked with that key among those trusted: the service's current and retired keys for the
audit, the keys given to `loo verify` (--key, repeatable, or --keys FILE) offline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from ledger.app.audit import audit
from ledger.app.checkpoints import Keyring, Signer, verify
from ledger.app.service import Ledger
from ledger.cli.main import main
from ledger.core import commands as c
from ledger.store.memory import MemoryStore
from tests.unit.test_history import export

RESULT = {"decisions": {str(s): "play" for s in range(3)}, "tricks": {"0": 3, "1": 1, "2": 1}}
OFFLINE = {"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}  # never opened


def _rotated(before: int = 2, after: int = 2) -> tuple[Ledger, str, Signer, Signer]:
    """A results table whose first `before` hands were signed by one key, the next `after`
    by another (the service's key rotated in between, its ledger restarted)."""
    old, new = Signer.generate(), Signer.generate()
    led = Ledger(MemoryStore(), signer=old)
    tid, _, _ = led.create_table(c.CreateTable("loo", "pool", (("A", None), ("B", None),
                                                                ("C", None)), 0, "results",
                                               {"auto_deal": False}))
    for _ in range(before):
        led.execute(tid, c.StartHand(result=RESULT))
    led.signer = new.retiring([old.public_bytes])
    for _ in range(after):
        led.execute(tid, c.StartHand(result=RESULT))
    return led, tid, old, new


def test_checkpoints_the_audit_checks_each_checkpoint_with_the_key_it_names():
    led, tid, old, new = _rotated()
    cps = led.checkpoints(tid)
    assert [cp["key_id"] for cp in cps] == [old.key_id] * 2 + [new.key_id] * 2
    stored = led.store.load(tid)
    result = audit(stored, led.load(tid), cps, led.signer.keyring())
    assert result["ok"] is True, result
    # The new key alone (before: the only key the audit had): the old hands fail, and the
    # failure says which key signed them and what to set.
    alone = audit(stored, led.load(tid), cps, Signer(new.private).keyring())
    why = alone["checks"]["checkpoints"]
    assert f"checkpoint at version {cps[1]['version']}" in why
    assert f"signed with key {old.key_id}, which is neither the current key ({new.key_id}) " \
           "nor a retired one (LOO_CHECKPOINT_RETIRED_KEYS is empty)" in why
    assert "add that key's public key to LOO_CHECKPOINT_RETIRED_KEYS" in why


def test_checkpoints_a_checkpoint_without_key_id_is_checked_against_every_trusted_key():
    led, tid, old, new = _rotated()
    ring = led.signer.keyring()
    for cp in led.checkpoints(tid):
        bare = {k: v for k, v in cp.items() if k != "key_id"}
        assert verify(bare, ring) is None
    bare = {k: v for k, v in led.checkpoints(tid)[0].items() if k != "key_id"}
    why = verify(bare, Signer(new.private).keyring())
    assert why is not None and why.startswith("the signature does not match (the checkpoint "
                                              "names no key_id")
    assert "LOO_CHECKPOINT_RETIRED_KEYS" in why


def test_checkpoints_a_forgery_naming_a_retired_key_fails_and_one_naming_an_unknown_key_too():
    led, tid, old, new = _rotated()
    forger = Signer.generate()
    cp = led.checkpoints(tid)[0]
    forged = forger.sign(cp["table"], cp["version"], cp["hash"], at=cp["at"])
    ring = led.signer.keyring()
    why = verify(forged, ring)
    assert why is not None and f"signed with key {forger.key_id}" in why
    claimed = forged | {"key_id": old.key_id}  # the forger names a trusted key
    assert verify(claimed, ring) == (f"the signature does not match key {old.key_id} (forged, "
                                     "or its key_id edited)")
    assert verify({"key_id": old.key_id}, ring).startswith("the checkpoint is malformed")


def test_checkpoints_the_key_answer_lists_every_trusted_key_the_current_first():
    old, new = Signer.generate(), Signer.generate()
    signer = new.retiring([old.public_bytes, new.public_bytes, old.public_bytes])
    answer = signer.public()
    assert (answer["key_id"], answer["public_key"]) == (new.key_id,
                                                         new.public()["public_key"])
    assert [(k["key_id"], k["current"]) for k in answer["keys"]] == [(new.key_id, True),
                                                                     (old.key_id, False)]
    assert Keyring.of(old.private.public_key()).ids() == [old.key_id]


def _archive(tmp_path: Path) -> tuple[Path, Signer, Signer]:
    led, tid, old, new = _rotated()
    path = tmp_path / "hands.ndjson"
    path.write_text("".join(json.dumps(d) + "\n" for d in export(led, tid)))
    return path, old, new


def _verify(*args: str) -> Any:
    return CliRunner().invoke(main, ["verify", *args], env=OFFLINE)


def test_loo_verify_takes_several_keys_for_an_archive_spanning_a_rotation(tmp_path: Path):
    path, old, new = _archive(tmp_path)
    both = ["--key", old.public()["public_key"], "--key", new.public_bytes.hex()]
    r = _verify(str(path), *both)
    assert r.exit_code == 0, r.output
    assert r.output.strip() == "OK: 4 hand(s) verified (checkpoint signatures checked)"
    # One key (all loo verify took before): the first hand signed with the other fails,
    # naming that key and how to give it.
    r = _verify(str(path), "--key", new.public()["public_key"])
    assert r.exit_code == 1
    first = json.loads(path.read_text().splitlines()[0])["checkpoint"]["version"]
    assert (f"FAILED: line 1: hand 1: checkpoint at version {first}: it is signed with key "
            f"{old.key_id}, which is none of the keys given ({new.key_id}): give that key's "
            "public key with another --key") in r.output, r.output


def test_loo_verify_reads_the_keys_from_the_services_answer_or_a_file_of_lines(
        tmp_path: Path):
    path, old, new = _archive(tmp_path)
    answer = tmp_path / "keys.json"
    answer.write_text(json.dumps(new.retiring([old.public_bytes]).public()))
    lines = tmp_path / "keys.txt"
    lines.write_text(f"# the service's keys\n{new.public()['public_key']}\n\n"
                     f"{old.public_bytes.hex()}\n")
    for keys in (answer, lines):
        r = _verify(str(path), "--keys", str(keys))
        assert r.exit_code == 0 and "checkpoint signatures checked" in r.output, r.output
    r = _verify(str(path), "--keys", str(lines), "--key", new.public()["public_key"])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize(("args", "says"), [
    (["--key", "not-a-key"], "--key"),
    (["--keys", "{bad_line}"], "keys.txt line 3: must be 32 bytes"),
    (["--keys", "{empty}"], "holds no key"),
    (["--keys", "{missing}"], "cannot read"),
])
def test_loo_verify_refuses_a_bad_key_naming_where_it_is(tmp_path: Path, args: list[str],
                                                         says: str):
    path, _, new = _archive(tmp_path)
    (tmp_path / "keys.txt").write_text(f"{new.public()['public_key']}\n# x\nnope\n")
    (tmp_path / "empty.txt").write_text("# nothing\n")
    files = {"bad_line": tmp_path / "keys.txt", "empty": tmp_path / "empty.txt",
             "missing": tmp_path / "none.json"}
    r = _verify(str(path), *[a.format(**files) for a in args])
    assert r.exit_code == 2 and says in r.output, r.output


# ---- revoking a key that leaked -----------------------------------------------------------
def test_checkpoints_a_revoked_key_s_checkpoints_fail_the_audit_named_as_revoked():
    """README "Rotating the checkpoint key": a retired key that leaked still vouched for what
    carried its id, so whoever held it could sign a head the audit took. Revoked
    (LOO_CHECKPOINT_REVOKED_KEYS: Signer.revoking), what it signed fails, named so, with or
    without a key_id; revoking wins over retiring; the key answer lists it under `revoked`,
    not among the trusted `keys`."""
    led, tid, old, new = _rotated()
    cps = led.checkpoints(tid)
    signer = new.retiring([old.public_bytes]).revoking([old.public_bytes])
    assert signer.retired == () and signer.revoked == (old.public_bytes,)
    assert new.revoking([old.public_bytes]).retiring([old.public_bytes]).retired == ()
    answer = signer.public()
    assert [k["key_id"] for k in answer["keys"]] == [new.key_id]
    assert answer["revoked"] == [{"alg": "ed25519", "public_key": old.public()["public_key"],
                                  "key_id": old.key_id}]
    ring = signer.keyring()
    why = verify(cps[0], ring)
    assert why is not None and why.startswith(
        f"it is signed with key {old.key_id}, which is revoked (LOO_CHECKPOINT_REVOKED_KEYS): "
        "whoever held that key could sign any head"), why
    bare = {k: v for k, v in cps[0].items() if k != "key_id"}
    assert verify(bare, ring) == why
    assert verify(cps[-1], ring) is None  # the new key's still hold
    result = audit(led.store.load(tid), led.load(tid), cps, ring)
    assert result["ok"] is False and "which is revoked" in result["checks"]["checkpoints"]
    with pytest.raises(ValueError, match="it is the current key's public key: rotate first"):
        new.revoking([new.public_bytes])


def test_loo_verify_refuses_checkpoints_of_a_revoked_key_from_the_answer_a_line_or_an_option(
        tmp_path: Path):
    path, old, new = _archive(tmp_path)
    answer = tmp_path / "keys.json"
    answer.write_text(json.dumps(new.retiring([old.public_bytes])
                                 .revoking([old.public_bytes]).public()))
    lines = tmp_path / "keys.txt"
    lines.write_text(f"{new.public()['public_key']}\n{old.public_bytes.hex()}\n"
                     f"revoked {old.public()['public_key']}\n")
    first = json.loads(path.read_text().splitlines()[0])["checkpoint"]["version"]
    both = ["--key", old.public()["public_key"], "--key", new.public_bytes.hex()]
    for args in (["--keys", str(answer)], ["--keys", str(lines)],
                 [*both, "--revoked-key", old.public_bytes.hex()]):
        r = _verify(str(path), *args)
        assert r.exit_code == 1, (args, r.output)
        assert (f"FAILED: line 1: hand 1: checkpoint at version {first}: it is signed with key "
                f"{old.key_id}, which is revoked (given as revoked to loo verify)"
                ) in r.output, r.output
    r = _verify(str(path), *both)  # without the revocation: as before
    assert r.exit_code == 0, r.output
    r = _verify(str(path), *both, "--revoked-key", "nope")
    assert r.exit_code == 2 and "--revoked-key" in r.output, r.output
