"""The request path's cost guards: what a POST /actions does once per request."""

from __future__ import annotations

import sys
from collections import Counter

import pytest
from werkzeug.local import _ProxyLookup

from ledger.api.app import create_app
from ledger.bootstrap import Settings, bootstrap

FOUR = {"variant": "loo", "seats": [{"name": n} for n in ("Ann", "Bob", "Cat", "Dan")],
        "first_dealer": 0, "deal": "shuffled"}


def test_an_action_reads_flasks_proxies_from_ledger_code_a_few_times_only(
        tmp_path, monkeypatch: pytest.MonkeyPatch):
    """Each attribute read through werkzeug's LocalProxy (request.x, g.x, current_app.x)
    costs about a hundred times the read on the object (ledger/api/context.py): our hooks
    and views take the object once. A POST /actions made 41 such reads before."""
    container = bootstrap(Settings(database_url=f"sqlite:///{tmp_path}/loo.db"))
    client = create_app(container).test_client()
    try:
        created = client.post("/v1/tables", json=FOUR).get_json()
        auth = {"Authorization": f"Bearer {created['admin_token']}"}
        table = client.get(f"/v1/tables/{created['id']}", headers=auth).get_json()
        reads: Counter[str] = Counter()
        lookup = _ProxyLookup.__get__

        def counted(self, instance, owner=None):  # type: ignore[no-untyped-def]
            caller = sys._getframe(1)
            if instance is not None and "/ledger/" in caller.f_code.co_filename:
                reads[f"{caller.f_code.co_name}:{self.name}"] += 1
            return lookup(self, instance, owner)

        monkeypatch.setattr(_ProxyLookup, "__get__", counted)
        body = dict(table["legal_actions"][0], expected_version=table["version"])
        answer = client.post(f"/v1/tables/{created['id']}/actions", json=body, headers=auth)
        monkeypatch.undo()
        assert answer.status_code == 200, answer.get_json()
        assert sum(reads.values()) <= 2, reads
    finally:
        container.close()
