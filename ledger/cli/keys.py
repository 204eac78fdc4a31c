"""`loo checkpoint-key show | rotate`: the checkpoint signing key, and its rotation (README
"Rotating the checkpoint key"). A rotation signs from then on with a new key and keeps the old
one's public key trusted (LOO_CHECKPOINT_RETIRED_KEYS), so the checkpoints it signed still
audit and the archives still verify."""

from __future__ import annotations

import contextlib
import os
import tempfile

import click

from ledger.cli.output import require_stdout, show_once

RETIRED = "LOO_CHECKPOINT_RETIRED_KEYS"


@click.group("checkpoint-key", short_help="Show or rotate the checkpoint signing key.")
def checkpoint_key_cmd() -> None:
    """The key that signs checkpoints (LOO_CHECKPOINT_KEY or LOO_CHECKPOINT_KEY_FILE) and the
    retired keys still trusted (LOO_CHECKPOINT_RETIRED_KEYS), read from the environment as
    the service reads them. Neither command opens the database."""


@checkpoint_key_cmd.command("show")
def show_cmd() -> None:
    """One line a key: current, retired or revoked, its key_id, its public key (base64, as
    GET /v1/checkpoints/key gives it). Keep a copy with your backups: a checkpoint's key
    cannot be recovered from its signature."""
    from ledger.bootstrap import ConfigError, Settings, checkpoint_key_path, checkpoint_signer

    settings = Settings.from_env()
    if not settings.checkpoint_key and checkpoint_key_path(settings) is None:
        # (memory://, the tests' store) A key made up now would be shown as the current one.
        raise ConfigError("LOO_CHECKPOINT_KEY_FILE: this DATABASE_URL keeps its checkpoint "
                          "key in memory only, in each process: there is no key to show")
    signer = checkpoint_signer(settings, create=False)
    public = signer.public()
    for key in public["keys"]:
        state = "current" if key["current"] else "retired"
        click.echo(f"{state:<8} {key['key_id']}  {key['public_key']}")
    for key in public["revoked"]:  # LOO_CHECKPOINT_REVOKED_KEYS: what they signed is refused
        click.echo(f"{'revoked':<8} {key['key_id']}  {key['public_key']}")


@checkpoint_key_cmd.command("rotate")
def rotate_cmd() -> None:
    """Make a new checkpoint key and retire the current one.

    With LOO_CHECKPOINT_KEY_FILE (or the default key file) the new key replaces the file's,
    written whole (mode 0600); with LOO_CHECKPOINT_KEY nothing is written and the new key is
    printed for you to set. Either way it prints the LOO_CHECKPOINT_RETIRED_KEYS line (the
    keys retired before, and the current one's public key): set it in every process's
    environment, then restart them all. Processes still running sign with the old key until
    then, which stays trusted."""
    from ledger.app.checkpoints import Signer
    from ledger.bootstrap import ConfigError, Settings, checkpoint_key_path, checkpoint_signer

    settings = Settings.from_env()
    old = checkpoint_signer(settings, create=False)
    # What it prints is the one copy of the old key's public key once the file is replaced
    # (and of the new key with LOO_CHECKPOINT_KEY): never rotate into a closed output.
    require_stdout("the retired key's public key", "the key was not rotated")
    seed = os.urandom(32)
    new = Signer.from_seed(seed)
    retired = ",".join(raw.hex() for raw in (*old.retired, old.public_bytes))
    if settings.checkpoint_key:
        lines = [f"new checkpoint key {new.key_id}; the current key {old.key_id} is to be "
                 "retired. Nothing was written (the key is in LOO_CHECKPOINT_KEY).",
                 "Set these in every process's environment (replacing the old values), "
                 "then restart them all:",
                 f"LOO_CHECKPOINT_KEY={seed.hex()}"]
    else:
        path = checkpoint_key_path(settings)
        if path is None:  # an in-memory database: a key of the process alone
            raise ConfigError("LOO_CHECKPOINT_KEY_FILE: this DATABASE_URL keeps its checkpoint "
                              "key in memory only: there is no key to rotate")
        try:
            _replace(path, seed.hex() + "\n")
        except OSError as err:
            raise ConfigError(f"LOO_CHECKPOINT_KEY_FILE: cannot write the new key to {path!r} "
                              f"({err})") from err
        lines = [f"rotated the checkpoint key in {path}: new key {new.key_id}, the old key "
                 f"{old.key_id} retired.",
                 "Set this in every process's environment (replacing any earlier value), "
                 "then restart them all:"]
    # If the output fails now, the lines go to standard error: a retry would rotate again.
    show_once([*lines, f"{RETIRED}={retired}"], f"the checkpoint key was rotated (new key "
              f"{new.key_id})", "running the command again would rotate it again")


def _replace(path: str, text: str) -> None:
    """Write `text` to `path` whole (a temporary file beside it, mode 0600, renamed over it):
    a crash leaves the old key or the new one, never half of one."""
    target = os.path.abspath(path)
    fd, part = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".new",
                                dir=os.path.dirname(target))
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(part, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(part)
        raise
