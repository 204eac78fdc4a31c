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



def test_home_links_each_guide_by_its_name(client) -> None:
    """The home's developer links printed each guide as a Python tuple, in its text and its
    href: "('/docs/rules', 'Rules')", a link to a page that does not exist."""
    page = client.get("/", headers=HTML).get_data(as_text=True)
    for href, label in (("/docs/rules", "Rules"), ("/docs/http", "HTTP API"),
                        ("/docs/hash-chain", "Checking a record")):
        assert f'<li><a href="{href}">{label}</a></li>' in page, href
    assert "(&#39;" not in page and "('/docs" not in page
    assert client.get("/docs/rules", headers=HTML).status_code == 200

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
    for name in ("api.js", "home.js", "table.js", "replay.js", "verify.js", "chips.js",
                 "club.js", "club-home.js", "club-members.js", "club-seasons.js",
                 "club-tables.js", "club-standings.js", "club-member-ledger.js", "sse.js",
                 "copy.js"):
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


CLUB_PAGES = [
    ("/clubs/club_x", "js/club-home.js", ('id="count-members"', 'id="count-tables"')),
    ("/clubs/club_x/members", "js/club-members.js",
     ('id="add-member"', 'id="member-q"', 'id="show-archived"', 'id="members"')),
    ("/clubs/club_x/seasons", "js/club-seasons.js", ('id="start-season"', 'id="seasons"')),
    ("/clubs/club_x/tables", "js/club-tables.js",
     ('id="table-filters"', 'name="status"', 'name="season"', 'name="member"',
      'name="variant"', 'name="scoring"', 'id="tables"')),
    ("/clubs/club_x/tables/new", "js/club-table-new.js",
     ('id="new-table"', 'id="nt-variant"', 'id="nt-scoring"', 'id="nt-deal"', 'id="nt-season"',
      'id="nt-players"', 'id="nt-first-dealer"', 'id="nt-seats"', 'id="nt-done"')),
    ("/clubs/club_x/feed", "js/club-feed.js", ('id="feed"', 'id="live"', 'id="every-move"',
                                               'id="feed-earlier"')),
    ("/clubs/club_x/tokens", "js/club-tokens.js",
     ('id="issue-token"', 'id="token-role"', 'id="tokens"', 'id="issued"', 'id="revoke-dialog"',
      'id="spectator-form"', 'id="spectators"', 'class="current owner-only"')),
    ("/clubs/club_x/standings", "js/club-standings.js",
     ('id="standings-filters"', 'id="csv-download"', 'id="standings"', 'id="season-chart"')),
    ("/clubs/club_x/members/mem_1/ledger", "js/club-member-ledger.js",
     ('data-member="mem_1"', 'id="ledger-filters"', 'id="ledger"', 'id="ledger-total"',
      'id="standings-figure"', 'id="ledger-pager"')),
]


@pytest.mark.parametrize("path, script, needles", CLUB_PAGES)
def test_each_club_page_renders_its_shell_the_token_gate_and_its_module(
        client, path: str, script: str, needles: tuple[str, ...]) -> None:
    r = client.get(path, headers=HTML)
    assert r.status_code == 200 and r.mimetype == "text/html", r.data
    page = r.get_data(as_text=True)
    assert 'data-club="club_x"' in page and f"/assets/{script}" in page
    # One pasted token, as a password field of a form that posts nowhere (no action, no GET
    # of the token into an address: the module reads it and keeps it in session storage).
    assert 'id="club-token-form"' in page and 'type="password"' in page
    assert "action=" not in page.split('id="club-token-form"')[1].split(">")[0]
    for needle in needles:
        assert needle in page, needle
    for other in ("members", "seasons", "tables", "standings"):  # the club's tabs
        assert f'href="/clubs/club_x/{other}"' in page
    assert client.get(f"/assets/{script}").status_code == 200
    assert client.get("/assets/js/club.js").status_code == 200


def test_club_pages_escape_the_club_id_they_are_given(client) -> None:
    page = client.get('/clubs/"><script>alert(1)<script>/members',
                      headers=HTML).get_data(as_text=True)
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page


def test_club_scripts_build_pages_from_text_never_from_markup(client) -> None:
    """Member and table names come from users: every module writes them as text nodes (el()
    and textContent), never as markup, so a member named <script> shows as text."""
    for name in ("api.js", "club.js", "club-home.js", "club-members.js", "club-seasons.js",
                 "club-tables.js", "club-standings.js", "club-member-ledger.js", "table.js",
                 "sse.js", "club-table-new.js", "club-tokens.js",
                 "club-feed.js"):
        text = client.get(f"/assets/js/{name}").get_data(as_text=True)
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write"):
            assert sink not in text, (name, sink)


def test_home_offers_to_open_or_create_a_club(client) -> None:
    page = client.get("/", headers=HTML).get_data(as_text=True)
    for needle in ('id="open-club"', 'id="new-club"', 'id="new-club-done"'):
        assert needle in page, needle


def test_the_admin_view_carries_the_void_dialog_and_the_spectator_share(client) -> None:
    page = client.get("/tables/abc123", headers=HTML).get_data(as_text=True)
    for needle in ('id="admin-card" hidden', 'id="void-button"', '<dialog id="void-dialog"',
                   'id="void-reason"', 'id="void-problem"', 'id="share-spectator"',
                   'id="spectator-link"', 'id="spectators"', 'id="live"'):
        assert needle in page, needle
