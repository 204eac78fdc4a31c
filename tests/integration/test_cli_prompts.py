"""Ctrl-C at a question a `loo` command asks (click.prompt, click.confirm) ends it as Ctrl-C
ends any command, status 130 and one line `interrupted`: click turns it into Abort, which
printed "Aborted!" with status 1. The input ending at the question is a failure said so.

The commands run in a real process, a real SIGINT sent while the question waits: a command
asking is registered on `loo`'s own group (no command asks one today; the next that does
gets this behaviour from the group)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

SCRIPT = """
import click
from ledger.cli.main import main

@main.command("ask")
@click.option("--confirm", is_flag=True)
def ask(confirm):
    if confirm:
        click.echo("yes" if click.confirm("Remove the table?") else "no")
    else:
        click.echo("hello " + click.prompt("Your name"))

main(prog_name="loo")
"""


def _start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SCRIPT, "ask", *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=os.environ | {"PYTHONUNBUFFERED": "1"})


def _wait_for(proc: subprocess.Popen, text: bytes, deadline: float = 30) -> bytes:
    """Stdout until `text` shows (the question is asked and waits), polled to a deadline."""
    assert proc.stdout is not None
    os.set_blocking(proc.stdout.fileno(), False)
    seen, end = b"", time.monotonic() + deadline
    while text not in seen:
        assert time.monotonic() < end, f"no {text!r} within {deadline}s: {seen!r}"
        assert proc.poll() is None, (seen, proc.stderr.read() if proc.stderr else b"")
        seen += proc.stdout.read() or b""
        time.sleep(0.01)
    return seen


@pytest.mark.parametrize(("args", "question"), [((), b"Your name:"),
                                                 (("--confirm",), b"Remove the table? [y/N]:")])
def test_ctrl_c_at_a_prompt_exits_130_like_any_other_ctrl_c(args, question):
    proc = _start(*args)
    try:
        _wait_for(proc, question)
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 130, err
    assert err.decode().strip() == "interrupted", err
    assert b"Aborted" not in err and b"Traceback" not in err


@pytest.mark.parametrize(("args", "question"), [((), b"Your name:"),
                                                 (("--confirm",), b"Remove the table? [y/N]:")])
def test_the_input_ending_at_a_prompt_is_a_failure_said_so(args, question):
    proc = _start(*args)
    try:
        _wait_for(proc, question)
        assert proc.stdin is not None
        proc.stdin.close()  # Ctrl-D: the end of the input
        proc.wait(timeout=30)
        err = proc.stderr.read() if proc.stderr else b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, err
    assert err.decode().strip() == "error: the input ended at a prompt, before an answer", err
    assert b"Aborted" not in err and b"Traceback" not in err


def test_an_answer_at_a_prompt_still_goes_through():
    proc = _start()
    out, err = proc.communicate(b"Ann\n", timeout=30)
    assert proc.returncode == 0, err
    assert out.decode().endswith("hello Ann\n")
