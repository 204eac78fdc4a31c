"""HTTP fixtures: the real app on each backend (embedded SQLite, real PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ledger.api.app import create_app
from ledger.bootstrap import Settings, bootstrap
from tests.e2e.club import Club


@pytest.fixture(params=["sqlite", "postgres"])
def backend_url(request: pytest.FixtureRequest, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/loo.db"
    return request.getfixturevalue("pg_url")


@pytest.fixture
def app(backend_url: str) -> Iterator:
    container = bootstrap(Settings(database_url=backend_url))
    application = create_app(container)
    application.config["TESTING"] = True
    yield application
    container.close()


@pytest.fixture
def club(app) -> Club:
    return Club(app.test_client())
