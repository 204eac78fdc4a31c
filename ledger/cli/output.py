"""Standard output for `loo` commands: a reader that leaves (`| head -1`), a full disk or
a closed descriptor, said in one line; what is shown only once (tokens) never lost."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

import click

# The shell's status for a process whose reader left (128 + SIGPIPE), as `yes | head` ends.
PIPE_CLOSED = 141


def silence_stdout() -> None:
    """Send what is left to print to /dev/null: the pipe or file it went to fails, and the
    interpreter's last flush would fail again (after the status was decided)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # None, or a test runner's buffer
        fd = -1
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        if fd >= 0:
            os.dup2(devnull, fd)
        else:
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - lives until exit
    finally:
        os.close(devnull)


def flush_stdout() -> None:
    """Flush standard output now, so that a write error held in its buffer is this command's
    error (said in one line) rather than an exit status 0 after output was lost."""
    if sys.stdout is not None:
        sys.stdout.flush()


def why(err: OSError) -> str:
    """An output error in words."""
    if isinstance(err, BrokenPipeError):
        return "the reader closed it"
    return err.strerror or str(err)


def require_stdout(what: str, undone: str = "nothing was created") -> None:
    """Before writing anything to the store: standard output must be open when `what` (a
    token) is shown there only once, or it would be made and lost."""
    if sys.stdout is None:
        click.echo(f"error: standard output is closed, where {what} would be shown, once: "
                   f"{undone} (run the command with its output open)", err=True)
        raise SystemExit(2)


def show_once(lines: Sequence[str], done: str,
              again: str = "running the command again would create another") -> None:
    """Print lines holding secrets shown only this once, after what is `done` ("club X was
    created"). If standard output fails then (a full disk, a reader gone), the lines go to
    standard error with the reason and the status is 1: the store keeps only hashes of the
    tokens, so lost here they were lost for good, and running the command again would not
    give them back but make another."""
    try:
        for line in lines:
            click.echo(line)
        flush_stdout()
    except OSError as err:
        silence_stdout()
        click.echo(f"error: {done}, but standard output failed ({why(err)}); its output is "
                   f"here instead ({again}):", err=True)
        for line in lines:
            click.echo(line, err=True)
        raise SystemExit(1) from None
