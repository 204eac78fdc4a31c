"""Ids that must be unique, not secret: a request's id, a command's causation."""

from __future__ import annotations

import os
import random

# A generator of its own, seeded from os.urandom, and again in every forked process (gunicorn
# forks its workers from a master that has imported this). Not uuid4: os.urandom lets go of
# the GIL, and another thread then keeps it up to its switch interval (0.4 ms a request was
# measured with the store's notify thread running). Not the random module's own generator:
# its state belongs to whoever seeds it (Hypothesis does, for every example).
_IDS = random.Random()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_IDS.seed)


def unique_hex() -> str:
    """32 hex digits, as uuid4().hex."""
    return f"{_IDS.getrandbits(128):032x}"
