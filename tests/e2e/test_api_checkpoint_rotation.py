"""API.md "Checkpoints", README "Rotating the checkpoint key": the service's checkpoint key
can be rotated without making the past look tampered. Before, after an operator changed
LOO_CHECKPOINT_KEY (a leaked key, a routine rotation, a restore onto a new host) every older
table's audit failed ("signed with another key") and GET /v1/checkpoints/key gave only the new
key, so archived loo-hh files could no longer be checked against what the service publishes.

Now each checkpoint is checked with the key its key_id names: the current key or one retired
by LOO_CHECKPOINT_RETIRED_KEYS, a key outside both still failing, named."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import jsonschema
from click.testing import CliRunner

from ledger.api.app import create_app
from ledger.app.checkpoints import Signer, key_id
from ledger.bootstrap import Settings, bootstrap
from ledger.cli.main import main
from tests.e2e.club import Club, Table
from tests.e2e.test_api_checkpoints import ROUND, Database, _three_hands


@contextmanager
def _service(url: str, seed: bytes, retired: tuple[Signer, ...] = ()) -> Iterator[Club]:
    """The API on `url`, signing with `seed`, the keys `retired` retired (base64 public keys,
    as GET /v1/checkpoints/key gave them before the rotation)."""
    more = {"checkpoint_retired_keys": tuple(s.public()["public_key"] for s in retired)}
    container = bootstrap(Settings(database_url=url, checkpoint_key=seed.hex(),
                                   **(more if retired else {})))
    app = create_app(container)
    app.config["TESTING"] = True
    try:
        yield Club(app.test_client())
    finally:
        container.close()


def _keys() -> tuple[bytes, Signer, bytes, Signer]:
    old, new = os.urandom(32), os.urandom(32)
    return old, Signer.from_seed(old), new, Signer.from_seed(new)


def _id(signer: Signer) -> str:
    return key_id(signer.public_bytes)


def _audit(club: Club, t: Table) -> dict[str, Any]:
    r = club.get(t, path="/audit")
    assert r.status_code == 200, r.get_json()
    return r.get_json()


def _loo(args: list[str], **env: str) -> Any:
    return CliRunner().invoke(main, args, env=env)


def test_checkpoints_after_a_rotation_old_tables_audit_green_and_new_checkpoints_use_the_new_key(
        backend_url: str, tmp_path: Path):
    old_seed, old, new_seed, new = _keys()
    with _service(backend_url, old_seed) as club:
        t = _three_hands(club)
        before = club.c.get("/v1/checkpoints/key").get_json()
        assert before["key_id"] == _id(old)
        assert before["keys"] == [{"alg": "ed25519", "public_key": before["public_key"],
                                   "key_id": _id(old), "current": True}]
    with _service(backend_url, new_seed, retired=(old,)) as club:
        # The published keys: the current one as before, and every trusted key in `keys`.
        key = club.c.get("/v1/checkpoints/key").get_json()
        assert (key["alg"], key["key_id"]) == ("ed25519", _id(new))
        assert key["public_key"] == new.public()["public_key"]
        assert key["keys"] == [
            {"alg": "ed25519", "public_key": key["public_key"], "key_id": _id(new),
             "current": True},
            {"alg": "ed25519", "public_key": before["public_key"], "key_id": _id(old),
             "current": False}]
        assert key_id(base64.b64decode(key["keys"][1]["public_key"])) == _id(old)
        schemas = club.c.get("/openapi.json").get_json()["components"]["schemas"]
        jsonschema.validate(key, {**schemas["CheckpointKeyOut"], "components": {
            "schemas": schemas}})  # the spec says what the answer is
        out = _audit(club, t)
        assert out["ok"] is True and out["checks"]["checkpoints"] is True, out
        # The table goes on: its next hand is signed with the new key.
        assert club.start(t, ROUND).status_code == 200
        cps = club.get(t, path="/checkpoints").get_json()["items"]
        assert [cp["key_id"] for cp in cps] == [_id(old)] * 3 + [_id(new)]
        out = _audit(club, t)
        assert out["ok"] is True and out["checks"]["checkpoints"] is True, out
        (tmp_path / "keys.json").write_bytes(club.c.get("/v1/checkpoints/key").data)
        (tmp_path / "hands.ndjson").write_bytes(club.get(t, path="/history").data)
    env = {"DATABASE_URL": backend_url, "LOO_CHECKPOINT_KEY": new_seed.hex(),
           "LOO_CHECKPOINT_RETIRED_KEYS": before["public_key"]}
    r = _loo(["audit", t.id], **env)
    assert r.exit_code == 0 and r.output.splitlines()[-1].endswith(": OK"), r.output
    # An archive spanning the rotation verifies with both keys, or with the published list.
    hands = str(tmp_path / "hands.ndjson")
    for args in (["--key", before["public_key"], "--key", key["public_key"]],
                 ["--key", key["public_key"], "--key", old.public_bytes.hex()],
                 ["--keys", str(tmp_path / "keys.json")]):
        r = _loo(["verify", hands, *args])
        assert r.exit_code == 0, r.output
        assert r.output.strip() == "OK: 4 hand(s) verified (checkpoint signatures checked)"


def test_checkpoints_a_checkpoint_forged_with_an_unknown_key_still_fails_naming_it(
        backend_url: str):
    old_seed, old, new_seed, new = _keys()
    forger = Signer.generate()
    with _service(backend_url, old_seed) as club:
        t = _three_hands(club)
    with _service(backend_url, new_seed, retired=(old,)) as club:
        assert _audit(club, t)["ok"] is True
        events = club.get(t, path="/events?limit=1000").get_json()["events"]
        signed = {cp["version"] for cp in club.get(t, path="/checkpoints").get_json()["items"]}
        head = [e for e in events if e["version"] not in signed][-1]  # the hash is right
        forged = forger.sign(t.id, head["version"], head["hash"], at=head["recorded_at"])
        Database(backend_url).run("INSERT INTO checkpoints (table_id, version, data) "
                                  "VALUES (%s, %s, %s)", t.id, forged["version"],
                                  json.dumps(forged))
        out = _audit(club, t)
        assert out["ok"] is False
        why = out["checks"]["checkpoints"]
        assert f"checkpoint at version {forged['version']}" in why
        assert f"signed with key {_id(forger)}" in why
        assert f"neither the current key ({_id(new)}) nor a retired one ({_id(old)})" in why
    r = _loo(["audit", t.id], DATABASE_URL=backend_url, LOO_CHECKPOINT_KEY=new_seed.hex(),
             LOO_CHECKPOINT_RETIRED_KEYS=old.public_bytes.hex())
    assert r.exit_code == 1 and f"signed with key {_id(forger)}" in r.output, r.output


def test_checkpoints_a_new_key_without_the_old_one_retired_says_to_set_the_retired_keys(
        backend_url: str):
    old_seed, old, new_seed, new = _keys()
    with _service(backend_url, old_seed) as club:
        t = _three_hands(club)
    with _service(backend_url, new_seed) as club:
        out = _audit(club, t)
        assert out["ok"] is False and out["checks"]["hash_chain"] is True
        why = out["checks"]["checkpoints"]
        assert f"signed with key {_id(old)}" in why, why
        assert "LOO_CHECKPOINT_RETIRED_KEYS" in why, why
        key = club.c.get("/v1/checkpoints/key").get_json()
        assert [k["key_id"] for k in key["keys"]] == [_id(new)]
    r = _loo(["audit", t.id], DATABASE_URL=backend_url, LOO_CHECKPOINT_KEY=new_seed.hex())
    assert r.exit_code == 1 and "LOO_CHECKPOINT_RETIRED_KEYS" in r.output, r.output
