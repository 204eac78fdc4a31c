"""The web pages without a browser (issue 19): templates render, assets are served, errors
are friendly pages for browsers while the API keeps problem+json, and no token reaches the
server's HTML."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ledger.api.app import create_app
from ledger.bootstrap import Settings, bootstrap

HTML = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator:
    db = tmp_path_factory.mktemp("web") / "loo.db"
    container = bootstrap(Settings(database_url=f"sqlite:///{db}"))
    app = create_app(container)
    app.config["TESTING"] = True
    yield app.test_client()
    container.close()


def test_home_offers_a_game_against_bots_a_table_by_token_and_the_docs(client) -> None:
    r = client.get("/", headers=HTML)
    assert r.status_code == 200 and r.mimetype == "text/html"
    page = r.get_data(as_text=True)
    for needle in ('id="new-game"', 'name="variant"', 'name="scoring"', 'name="seats"',
                   'id="bot-select"', 'id="open-table"', 'href="/docs"', 'href="/openapi.json"',
                   "/assets/js/home.js"):
        assert needle in page, needle


@pytest.mark.parametrize("path, script", [
    ("/tables/abc123", "js/table.js"),
    ("/tables/abc123/hands/2/replay", "js/replay.js"),
    ("/tables/abc123/chips", "js/chips.js"),
])
def test_each_page_renders_its_shell_and_module(client, path: str, script: str) -> None:
    r = client.get(path, headers=HTML)
    assert r.status_code == 200, r.data
    page = r.get_data(as_text=True)
    assert 'data-table="abc123"' in page and f"/assets/{script}" in page
    assert client.get(f"/assets/{script}").status_code == 200


def test_assets_are_served_from_the_package_and_need_no_network(client) -> None:
    css = client.get("/assets/style.css")
    assert css.status_code == 200 and css.mimetype == "text/css"
    for name in ("api.js", "home.js", "table.js", "replay.js", "verify.js", "chips.js"):
        js = client.get(f"/assets/js/{name}")
        assert js.status_code == 200, name
        text = js.get_data(as_text=True).replace("http://www.w3.org/2000/svg", "")
        assert "http://" not in text and "https://" not in text  # nothing from elsewhere


def test_unknown_page_is_a_friendly_404_for_browsers(client) -> None:
    r = client.get("/no/such/page", headers=HTML)
    assert r.status_code == 404 and r.mimetype == "text/html"
    assert "Page not found" in r.get_data(as_text=True)


def test_api_errors_stay_problem_json_even_for_browsers(client) -> None:
    r = client.get("/v1/tables/nope", headers=HTML)
    assert r.status_code in (401, 404) and r.mimetype == "application/problem+json"
    r = client.get("/no/such/page")  # no Accept: the API's answer
    assert r.status_code == 404 and r.mimetype == "application/problem+json"


def test_pages_never_carry_a_token(client) -> None:
    created = client.post("/v1/tables", json={"seats": [{"name": "Ann"}, {"name": "Bob"}]})
    assert created.status_code == 201
    body = created.get_json()
    page = client.get(f"/tables/{body['id']}", headers=HTML).get_data(as_text=True)
    for token in [body["admin_token"], *(s["token"] for s in body["seats"])]:
        assert token not in page
