"""Request ids and causations: unique in every process, whoever seeds the random module."""

from __future__ import annotations

import os
import random
import re

from ledger.core.ids import unique_hex


def test_ids_are_32_hex_digits_and_do_not_repeat():
    ids = [unique_hex() for _ in range(1000)]
    assert all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids)
    assert len(set(ids)) == len(ids)


def test_ids_do_not_follow_the_random_modules_seed():
    random.seed(7)
    first = unique_hex()
    random.seed(7)  # as a test framework reseeds it for every example
    assert unique_hex() != first


def test_a_forked_process_makes_other_ids_than_its_parent():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next id, to the parent
        os.write(write, unique_hex().encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 64).decode()
    os.waitpid(pid, 0)
    os.close(read)
    assert re.fullmatch(r"[0-9a-f]{32}", child) and child != unique_hex()
