"""`loo verify` (offline: no server, no database) and `loo export`: loo-hh 1.0 hand histories."""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from typing import IO, Any

import click
import orjson

from ledger.cli.output import require_stdout, show_once


def _progress(total: int | None, label: str) -> Any:
    """A rich progress bar on stderr (only when it is a terminal and the run is long)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    console = Console(stderr=True)
    return Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), console=console,
                    disable=not console.is_terminal or (total is not None and total < 50),
                    transient=True)


# What `loo verify` says of a checkpoint signed with none of the keys it was given.
OFFLINE_HINT = ("give that key's public key with another --key, or --keys with the service's "
                "GET /v1/checkpoints/key answer, which lists every key it trusts; otherwise the "
                "checkpoint is forged")


def _keys_file(path: str) -> list[tuple[str, str, bool]]:
    """(where, key text, revoked) of each key in a keys file: a GET /v1/checkpoints/key answer
    (its `keys`, else its `public_key`, and its `revoked`), a JSON list of keys (an object
    with `"revoked": true` is a revoked one), or one key a line (# comments; `revoked KEY`
    for a revoked one)."""
    try:
        with open(path, "rb") as f:
            text = f.read(1_000_000).decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise click.BadParameter(f"cannot read {path!r} ({err})", param_hint="--keys") from None
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError:
        out = []
        for n, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            word, _, rest = line.partition(" ")
            revoked = word.lower() == "revoked" and bool(rest.strip())
            out.append((f"{path} line {n}", rest.strip() if revoked else line, revoked))
        return out
    gone: list[Any] = []
    if isinstance(doc, dict):
        found = doc.get("revoked")
        gone = found if isinstance(found, list) else []
        doc = doc.get("keys") or ([doc] if "public_key" in doc or not gone else [])
    if not isinstance(doc, list):
        doc = [doc]
    out = []
    for n, item in enumerate(doc, 1):
        value = item.get("public_key") if isinstance(item, dict) else item
        revoked = isinstance(item, dict) and item.get("revoked") is True
        out.append((f"{path} key {n}", value if isinstance(value, str) else "", revoked))
    for n, item in enumerate(gone, 1):
        value = item.get("public_key") if isinstance(item, dict) else item
        out.append((f"{path} revoked key {n}", value if isinstance(value, str) else "", True))
    return out


def keyring_of(key_texts: tuple[str, ...], keys_files: tuple[str, ...],
               revoked_texts: tuple[str, ...] = ()) -> Any:
    """The keys `loo verify` checks signatures with (None: none given), and those it refuses
    (--revoked-key, a keys file's revoked ones)."""
    from ledger.app.checkpoints import Keyring, parse_key

    given = [("--key", text, False) for text in key_texts]
    given += [("--revoked-key", text, True) for text in revoked_texts]
    for path in keys_files:
        found = _keys_file(path)
        if not found:
            raise click.BadParameter(f"{path!r} holds no key", param_hint="--keys")
        given += found
    if not given:
        return None
    raws, gone = [], []
    for where, text, revoked in given:
        try:
            (gone if revoked else raws).append(parse_key(text))
        except ValueError as err:
            hint = where if where.startswith("--") else "--keys"
            what = "" if where.startswith("--") else f"{where}: "
            raise click.BadParameter(f"{what}{err}", param_hint=hint) from None
    try:
        return Keyring.from_raw(raws, hint=OFFLINE_HINT, revoked=gone,
                                revoked_by="given as revoked to loo verify")
    except ValueError as err:
        raise click.BadParameter(str(err), param_hint="--key") from None


class _Input(click.File):
    """A file to read, "-" being standard input, which may be closed (`loo verify - <&-`):
    then a usage error saying so, where click stopped on a RuntimeError."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        try:
            f = super().convert(value, param, ctx)
        except RuntimeError:  # click found no binary stream for "-"
            self.fail("standard input is closed: name a file, or give - some input",
                      param, ctx)
        return _Reading(f, "standard input" if value == "-" else os.fsdecode(value))


class _Reading:
    """The input, read by lines or blocks: a read that fails (a device error, EIO from a
    file such as /proc/self/mem) names the input, where the `loo` group took it for its
    output ("cannot write to standard output"). Status 1, one line, as output errors."""

    def __init__(self, f: IO[bytes], name: str) -> None:
        self.f, self.name = f, name

    def _failed(self, err: OSError) -> OSError:
        return OSError(err.errno, f"cannot read it: {err.strerror or err}", self.name)

    def readline(self, size: int = -1) -> bytes:
        try:
            return self.f.readline(size)
        except OSError as err:
            raise self._failed(err) from None

    def read(self, size: int = -1) -> bytes:
        try:
            return self.f.read(size)
        except OSError as err:
            raise self._failed(err) from None


@click.command("verify", short_help="Verify loo-hh files offline; exit 1 on the first failure.")
@click.argument("file", type=_Input("rb"))
@click.option("--key", "key_texts", multiple=True, metavar="PUBLIC_KEY",
              help="a checkpoint public key of the service (base64 or hex, from "
                   "GET /v1/checkpoints/key): checkpoint signatures are checked too, each with "
                   "the key its key_id names; repeat for the keys of before a rotation")
@click.option("--keys", "keys_files", multiple=True, metavar="FILE",
              type=click.Path(dir_okay=False, allow_dash=False),
              help="a file of such keys: the service's GET /v1/checkpoints/key answer (every "
                   "key it trusts, and those it revoked), or one key a line ('revoked KEY' "
                   "for a revoked one)")
@click.option("--revoked-key", "revoked_texts", multiple=True, metavar="PUBLIC_KEY",
              help="a public key that leaked: a checkpoint signed with it fails, named as "
                   "signed by a revoked key (repeatable)")
def verify_cmd(file: IO[bytes], key_texts: tuple[str, ...], keys_files: tuple[str, ...],
               revoked_texts: tuple[str, ...]) -> None:
    """Verify FILE (a loo-hh file, or NDJSON with one per line; - for stdin) with no server
    and no database: schema, commitment, deal, every action, tricks, settlement, the hash
    chain, and checkpoint signatures when --key or --keys is given. Names the first
    failure."""
    from ledger.app.verify import VerifyError, documents, verify_stream

    key = keyring_of(key_texts, keys_files, revoked_texts)
    count, signatures, unsigned, unsigned_voids, unsigned_closes = 0, 0, [], [], []
    with _progress(None, "verifying") as bar:
        task = bar.add_task("verify", total=None)
        try:
            for done in verify_stream(documents(file), key):
                count += 1
                bar.advance(task)
                signatures += done.checkpoint + done.void_checkpoint + done.close_checkpoint
                if not done.checkpoint:
                    unsigned.append(done)
                if done.voided and not done.void_checkpoint:
                    unsigned_voids.append(done)
                if done.closed and not done.close_checkpoint:
                    unsigned_closes.append(done)
        except VerifyError as err:
            click.echo(f"FAILED: {err}", err=True)
            click.echo(f"{count} hand(s) verified before the failure", err=True)
            sys.exit(1)
    if key is None:
        click.echo(f"OK: {count} hand(s) verified")
    elif not unsigned and not unsigned_voids and not unsigned_closes:
        click.echo(f"OK: {count} hand(s) verified (checkpoint signatures checked)")
    else:  # say so: a file without a checkpoint has no signature for the key to check
        line = f"OK: {count} hand(s) verified; {signatures} checkpoint signature(s) checked"
        if unsigned:
            first = unsigned[0]
            line += (f", {len(unsigned)} hand(s) carry no checkpoint, so nothing signs them "
                     f"(the first: hand {first.number} of table {first.table})")
        if unsigned_voids:  # voided before voids were signed (or the void's was stripped)
            first = unsigned_voids[0]
            line += (f"; {len(unsigned_voids)} voided hand(s) carry no void_checkpoint, so "
                     f"nothing signs their void (the first: hand {first.number} of table "
                     f"{first.table})")
        if unsigned_closes:  # closed before closes were signed (or the checkpoint stripped)
            first = unsigned_closes[0]
            line += (f"; {len(unsigned_closes)} table close(s) carry no checkpoint, so nothing "
                     f"signs them (the first: in hand {first.number} of table {first.table})")
        click.echo(line)


@contextlib.contextmanager
def _whole_file(path: str) -> Iterator[IO[bytes]]:
    """Standard output for "-"; otherwise a file written whole or not at all: the lines go
    to a temporary file beside it, which takes its name only when the export is complete.
    Interrupted (Ctrl-C, a lost database), the temporary file is removed: a partial export
    would still verify, hand by hand, as a shorter history. What is not a regular file (a
    device such as /dev/stdout or /dev/null, a named pipe) is written to as it is: renaming
    a file onto it would replace the device or pipe itself. A symbolic link to a file has
    the file it names replaced, and stays a link."""
    if path == "-":
        with click.open_file("-", "wb") as stdout:
            yield stdout
            stdout.flush()  # a full disk is the export's error, before it says it is done
        return
    def unwritable(err: OSError, where: str) -> click.BadParameter:
        return click.BadParameter(f"cannot write {path!r} ({where}: {err.strerror})",
                                  param_hint="'-o' / '--output'")

    try:
        is_file = stat.S_ISREG(os.stat(path).st_mode)
    except FileNotFoundError:
        is_file = True  # a new file (or one a dangling link names)
    except OSError as err:
        raise unwritable(err, path) from None
    if not is_file:
        try:
            device = open(path, "wb")  # noqa: SIM115 - closed below
        except OSError as err:
            raise unwritable(err, path) from None
        with device, _named(path):
            yield device
        return
    target = os.path.realpath(path)
    try:
        fd, part = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".part",
                                    dir=os.path.dirname(target))
    except OSError as err:  # no such directory, or not one this user may write in
        raise unwritable(err, os.path.dirname(target)) from None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # as open() would have made it, not mkstemp's 0600
        with os.fdopen(fd, "wb") as f, _named(path):
            yield f
        os.replace(part, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(part)
        raise


@contextlib.contextmanager
def _named(path: str) -> Iterator[None]:
    """A write error (a full disk) names the file it could not write, not standard output."""
    try:
        yield
    except OSError as err:
        if err.filename is not None:
            raise
        raise OSError(err.errno, err.strerror, path) from None


def _output_path(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    """-o: "-" or a path naming a file (an empty one names the working directory)."""
    if not value:
        raise click.BadParameter("an empty path names no file (use - for standard output)")
    return value


@click.command("export", short_help="Write a table's complete hands as loo-hh NDJSON.")
@click.argument("table_id")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True, allow_dash=True),
              default="-", show_default=True, callback=_output_path,
              help="the file to write (whole or not at all: an interrupted export leaves "
                   "no file, nor changes one that was there; a device or a named pipe, "
                   "such as /dev/stdout, is written to as it is)")
@click.option("--hand", "number", type=click.IntRange(min=1), default=None,
              help="only this hand, as one file")
def export_cmd(table_id: str, output: str, number: int | None) -> None:
    """Export TABLE_ID's complete hands from DATABASE_URL as loo-hh 1.0 (NDJSON)."""
    from ledger.app.history import table_history_ndjson
    from ledger.bootstrap import Settings, open_database

    try:
        table_id.encode()
    except UnicodeEncodeError:  # bytes that are not UTF-8 name no table (no driver takes them)
        raise click.ClickException(f"no table {table_id!r}") from None
    store = open_database(Settings.from_env(), create=False)
    try:
        up_to = store.version(table_id)
        first = store.load(table_id, 0, 1) if up_to else []
        if not up_to or (first and first[0].type != "table_created"):  # a club's stream
            raise click.ClickException(f"no table {table_id!r}")
        checkpoints = store.checkpoints(table_id)
        # One per settled hand, and one per void and for the close: the bar's total is an
        # upper bound, set to the count when the export is done.
        hands = len(checkpoints)
        count = 0
        with _progress(hands, "exporting") as bar, _whole_file(output) as out:
            task = bar.add_task("export", total=hands or None)
            for line in table_history_ndjson(table_id,
                                             lambda a, b: store.load_raw(table_id, a, b),
                                             up_to, checkpoints, (lambda n: n == number)
                                             if number else (lambda n: True)):
                out.write(line)
                count += 1
                bar.advance(task)
            bar.update(task, total=count or None)
            if number and not count:  # (no file is left for it)
                raise click.ClickException(f"hand {number} of table {table_id} is not complete")
    finally:
        store.close()
    click.echo(f"exported {count} hand(s) of table {table_id}", err=True)


@click.command("import", short_help="Create a recorded (or results) table from loo-hh files.")
@click.argument("file", type=_Input("rb"))
def import_cmd(file: IO[bytes]) -> None:
    """Import FILE (loo-hh, or NDJSON of a table's hands from hand 1; - for stdin) into
    DATABASE_URL as a new recorded (or results) table, every hand checked by the rules; an
    illegal file is refused whole, naming the hand and action. Prints the new table's id and
    tokens (shown once)."""
    from ledger.app.imports import ImportRefused, plan
    from ledger.app.verify import VerifyError, documents
    from ledger.bootstrap import Settings, bootstrap

    require_stdout("the new table's tokens")
    with _progress(None, "checking") as bar:
        task = bar.add_task("check", total=None)

        def counted() -> Any:
            for item in documents(file):
                bar.advance(task)
                yield item

        try:
            the_plan = plan(counted())
        except (ImportRefused, VerifyError) as err:
            click.echo(f"REFUSED: {getattr(err, 'detail', err)} (nothing created)", err=True)
            sys.exit(1)
    container = bootstrap(Settings.from_env())
    try:
        try:
            table_id, tokens, p = container.ledger.import_table(the_plan)
        except ImportRefused as err:
            click.echo(f"REFUSED: {err.detail} (nothing created)", err=True)
            sys.exit(1)
    finally:
        container.close()
    out = orjson.dumps({"id": table_id, "admin_token": tokens["admin"],
                        "seat_tokens": tokens["seats"], "version": p.version,
                        "hands": len(the_plan.hands)}).decode()
    show_once([out], f"table {table_id} was created")
