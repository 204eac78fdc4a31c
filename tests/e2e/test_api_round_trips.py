"""What one action costs PostgreSQL: one statement, one transaction, settlement included."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from ledger.api.app import create_app
from ledger.bootstrap import Settings, bootstrap
from tests.e2e.club import Club


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every statement this process sends to PostgreSQL while the test runs."""
    sent: list[str] = []
    real = psycopg.Cursor.execute  # conn.execute() goes through it, as the store's kept cursor

    def execute(self: psycopg.Cursor[Any], query: Any, *args: Any, **kwargs: Any) -> Any:
        text = query.decode() if isinstance(query, bytes) else str(query)
        # Not the feeds' NOTIFY thread's: after the commit, off the request.
        if threading.current_thread().name != "loo-store-notify":
            sent.append(text)
        return real(self, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", execute)
    return sent


@pytest.fixture
def pg_app(pg_url: str) -> Iterator[Any]:
    container = bootstrap(Settings(database_url=pg_url))  # no REDIS_URL: in-process jobs
    application = create_app(container)
    application.config["TESTING"] = True
    yield application
    container.close()


def test_every_action_is_one_append_even_the_one_that_settles_and_deals(pg_app, statements):
    # The embedded default settles and deals the next hand in the last play's own append:
    # one round trip and one commit per action, no read-back for the answer.
    club = Club(pg_app.test_client())
    t = club.create()
    view = club.view(t)
    per_action: list[list[str]] = []
    hands_seen = set()
    while view["hand"]["number"] <= 2:
        hands_seen.add(view["hand"]["number"])
        body = dict(view["legal_actions"][0], expected_version=view["version"])
        statements.clear()
        answer = club.ok(t, body)
        per_action.append(list(statements))
        view = answer["table"]
    assert hands_seen == {1, 2} and view["hand"]["number"] == 3
    # A move of the person's: its event or a few as parameters; the one that lets the bots
    # play the rest of the hand, settle it and deal: dozens, as one array per column.
    kinds = {"unnest" if "unnest(" in sent[0] else "row" if "INSERT INTO events" in sent[0]
             else sent[0][:40] for sent in per_action}
    assert kinds == {"unnest", "row"}, kinds  # both checked INSERTs were taken
    assert view["legal_actions"], "hand 3 was dealt and waits for a person"
    # The store's one-statement append, the checked INSERT (loo_append with a key);
    # an action that settles a hand keeps its signed checkpoint (API.md "Checkpoints") in
    # that same statement: no second statement, no second commit.
    assert all(len(sent) == 1 and ("loo_append" in sent[0] or "INSERT INTO events" in sent[0])
               for sent in per_action), [sent for sent in per_action if len(sent) != 1]
    settling = [sent for sent in per_action if "INSERT INTO checkpoints" in sent[0]]
    assert len(settling) == 2
    types = [e["type"] for e in answer["events"]]
    assert "hand_settled" in types and types[-1] != "hand_settled"  # and the next deal
    assert club.get(t, path="/audit").get_json()["ok"]
