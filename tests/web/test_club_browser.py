"""The club pages, the admin view's void and spectator tools, and live updates, in a real
browser (issue 19): headless Debian chromium against `loo serve` on embedded SQLite.

A club is created over the API; its members and a season are made through the pages; a
season table is played to settlement over the API (results entered by the scorer); the
standings page, its chart and its CSV download agree with the API, member names that look
like markup or formulas show as text; a hand voided by the admin view's button moves the
standings, and a refused void shows the API's detail in the dialog; a shared spectator link
opens a view with no live tile and stops working once revoked; table pages follow the SSE
stream (fetch + a stream reader: the feed takes its token only as a header) and fall back
to polling when the stream is refused (503) or unavailable. Screenshots under
tests/artefacts/web/club-*.png; no page may log a console error.
"""

from __future__ import annotations

import csv
import io
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_serve_process import serving
from tests.web.test_browser import ARTEFACTS, browser, settle, wait_for  # noqa: F401

By = pytest.importorskip("selenium.webdriver.common.by").By

RESULT_A = {"decisions": {"0": "play", "1": "play", "2": "drop", "3": "play"},
            "tricks": {"0": 3, "1": 2, "2": 0, "3": 0}}
RESULT_B = {"decisions": {"0": "play", "1": "play", "2": "play", "3": "play"},
            "tricks": {"0": 0, "1": 1, "2": 1, "3": 3}}
NAMES = ["Ann", "<script>", "=cmd()", "Dan"]


def call(base: str, method: str, path: str, token: str | None = None,
         body: Any = None, accept: str = "application/json") -> tuple[int, Any]:
    headers = {"Accept": accept}
    if body is not None:
        headers["Content-Type"] = "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(base + path, method=method, headers=headers,
                                 data=None if body is None else json.dumps(body).encode())
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            raw = r.read()
            status = r.status
    except urllib.error.HTTPError as err:
        raw, status = err.read(), err.code
    if accept == "text/csv" and status == 200:
        return status, raw.decode()
    return status, json.loads(raw) if raw else None


def ok(base: str, method: str, path: str, token: str | None = None, body: Any = None) -> Any:
    status, out = call(base, method, path, token, body)
    assert status in (200, 201), (status, out)
    return out


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    cwd = tmp_path_factory.mktemp("club-serve")
    # Keep-alives every second: a stream whose page went away is noticed (and its slot
    # freed) within a second, as pages come and go quickly here. Streams end after 2 s, so
    # every page here resumes its stream with Last-Event-ID, again and again.
    with serving(cwd=cwd, DATABASE_URL=f"sqlite:///{cwd / 'loo.db'}",
                 LOO_SSE_KEEPALIVE="1", LOO_SSE_MAX_SECONDS="2") as url:
        yield {"url": url, "log": cwd / "serve.log"}


@pytest.fixture(scope="module")
def downloads(browser, tmp_path_factory: pytest.TempPathFactory) -> Path:  # noqa: F811
    folder = tmp_path_factory.mktemp("downloads")
    browser.execute_cdp_cmd("Browser.setDownloadBehavior",
                            {"behavior": "allow", "downloadPath": str(folder)})
    return folder


@pytest.fixture(scope="module")
def club(server, browser) -> dict[str, Any]:  # noqa: F811
    """A club created over the API, opened in the browser with its pasted owner token."""
    base = server["url"]
    made = ok(base, "POST", "/v1/clubs", body={"name": "The Red Lion"})
    browser.get(f"{base}/clubs/{made['id']}")
    field = wait_for("the token form", lambda: (lambda e: e.is_displayed() and e)(
        browser.find_element(By.ID, "club-token")))
    settle(browser, "club-gate")
    field.send_keys(made["token"])
    browser.find_element(By.CSS_SELECTOR, "#club-token-form button").click()
    wait_for("the club's name", lambda: browser.find_element(By.ID, "club-name").text
             == "The Red Lion")
    assert browser.find_element(By.ID, "club-role").text == "owner"
    assert made["token"] not in browser.current_url
    return {"url": base, "id": made["id"], "token": made["token"]}


def text_of(browser: Any, css: str) -> list[str]:  # noqa: F811
    return [e.text for e in browser.find_elements(By.CSS_SELECTOR, css)]


def add_through_the_page(browser: Any, form_id: str, names: list[str],  # noqa: F811
                         listed: str) -> None:
    form = wait_for("the form", lambda: (lambda e: e.is_displayed() and e)(
        browser.find_element(By.ID, form_id)))
    for name in names:
        form.find_element(By.NAME, "name").send_keys(name)
        form.find_element(By.CSS_SELECTOR, "button").click()
        wait_for(f"{name} listed", lambda n=name: any(
            t.startswith(n) for t in text_of(browser, listed)))


@pytest.fixture(scope="module")
def members(club, browser) -> list[str]:  # noqa: F811
    """The four players, added through the members page (each xdist worker makes its own)."""
    base, cid, token = club["url"], club["id"], club["token"]
    browser.get(f"{base}/clubs/{cid}/members")
    add_through_the_page(browser, "add-member", NAMES, "#members td.member-name")
    found = {m["name"]: m["id"] for m in ok(base, "GET", f"/v1/clubs/{cid}/members",
                                            token)["items"]}
    return [found[n] for n in NAMES]


@pytest.fixture(scope="module")
def season(club, browser) -> str:  # noqa: F811
    """A season started through the seasons page."""
    base, cid, token = club["url"], club["id"], club["token"]
    browser.get(f"{base}/clubs/{cid}/seasons")
    add_through_the_page(browser, "start-season", ["Autumn 2026"], "#seasons tbody tr")
    found = {s["name"]: s["id"] for s in ok(base, "GET", f"/v1/clubs/{cid}/seasons",
                                            token)["items"]}
    return found["Autumn 2026"]


def test_members_are_added_searched_renamed_and_archived_through_the_page(
        club, members, browser):  # noqa: F811
    base, cid, token = club["url"], club["id"], club["token"]
    browser.get(f"{base}/clubs/{cid}/members")
    add_through_the_page(browser, "add-member", ["Eve"], "#members td.member-name")
    found = {m["name"]: m["id"] for m in ok(base, "GET", f"/v1/clubs/{cid}/members",
                                            token)["items"]}
    assert set(found) == {*NAMES, "Eve"}
    # A name that looks like markup is text on the page (the browser did not run it).
    cell = browser.find_element(By.CSS_SELECTOR, f"tr[data-member='{found['<script>']}'] td")
    assert cell.text == "<script>" and not cell.find_elements(By.TAG_NAME, "script")
    # Rename Eve, then archive her.
    eve = found["Eve"]
    browser.find_element(By.CSS_SELECTOR, f"tr[data-member='{eve}'] button.rename").click()
    box = wait_for("the rename box", lambda: browser.find_element(By.CSS_SELECTOR,
                                                                  ".rename-input"))
    box.clear()
    box.send_keys("Evelyn")
    browser.find_element(By.CSS_SELECTOR, "form.inline button[type=submit]").click()
    wait_for("Evelyn", lambda: "Evelyn" in text_of(browser, "#members td.member-name"))
    assert ok(base, "GET", f"/v1/clubs/{cid}/members/{eve}", token)["name"] == "Evelyn"
    browser.find_element(By.CSS_SELECTOR, f"tr[data-member='{eve}'] button.archive").click()
    wait_for("Evelyn gone from the active list",
             lambda: "Evelyn" not in text_of(browser, "#members td.member-name"))
    assert ok(base, "GET", f"/v1/clubs/{cid}/members/{eve}", token)["archived"] is True
    browser.find_element(By.ID, "show-archived").click()
    wait_for("Evelyn among the archived",
             lambda: "Evelyn" in text_of(browser, "#members td.member-name"))
    search = browser.find_element(By.ID, "member-q")
    search.send_keys("EVE")
    wait_for("the search", lambda: text_of(browser, "#members td.member-name") == ["Evelyn"])
    search.clear()
    browser.execute_script("document.getElementById('member-q').dispatchEvent(new Event('input'))")
    wait_for("everyone again", lambda: len(text_of(browser, "#members td.member-name")) == 5)
    settle(browser, "club-members")


def test_rounce_standings_chart_counts_down_from_15_as_the_points_do(club, members,
                                                                    browser):  # noqa: F811
    """The standings' points of a Rounce table start at 15 (it counts down); the chart
    summed only the member ledger's deltas, so its last dot said -3 where the row said 12."""
    base, cid, token = club["url"], club["id"], club["token"]
    season = ok(base, "POST", f"/v1/clubs/{cid}/seasons", token,
                {"name": "Rounce nights", "starts_on": "2026-11-02"})["id"]
    made = ok(base, "POST", f"/v1/clubs/{cid}/tables", token, {
        "season": season, "variant": "rounce", "deal": "results", "first_dealer": 0,
        "seats": [{"member": members[0]}, {"member": members[3]}]})
    ok(base, "POST", f"/v1/tables/{made['id']}/hands", token, {"result": {
        "decisions": {"0": "play", "1": "play"}, "tricks": {"0": 3, "1": 2}}})
    open_points_standings(browser, base, cid, season)
    api = check_standings(club, browser, season, "points")
    assert sorted(r["points"] for r in api["rows"] if r["tables"]) == [12, 13]
    # The members with no Rounce table there are listed too, with zeros, after them.
    assert [r["tables"] for r in api["rows"]][-2:] == [0, 0]
    settle(browser, "club-standings-rounce")


def test_a_season_of_loo_and_rounce_points_charts_the_points_as_the_standings_count_them(
        club, members, browser):  # noqa: F811
    """A season of Loo for points and Rounce counts each Rounce table up, as its target
    minus its score (API.md Standings, mixed_points): the chart sums the member ledger's
    `counted` in the same view, so its last dots are the rows' points."""
    base, cid, token = club["url"], club["id"], club["token"]
    season = ok(base, "POST", f"/v1/clubs/{cid}/seasons", token,
                {"name": "Mixed nights", "starts_on": "2026-11-03"})["id"]
    for body, tricks in (({"variant": "rounce"}, {"0": 5, "1": 0}),
                         ({"scoring": "points"}, {"0": 2, "1": 3})):
        made = ok(base, "POST", f"/v1/clubs/{cid}/tables", token, body | {
            "season": season, "deal": "results", "first_dealer": 0,
            "seats": [{"member": members[1]}, {"member": members[2]}]})
        ok(base, "POST", f"/v1/tables/{made['id']}/hands", token, {"result": {
            "decisions": {"0": "play", "1": "play"}, "tricks": tricks}})
    open_points_standings(browser, base, cid, season)
    api = check_standings(club, browser, season, "points")
    assert api["mixed_points"] is True
    # (the two members with no table in the season: zeros, between them by points)
    assert [r["points"] for r in api["rows"]] == [5 + 2, 0, 0, -5 + 3]


def test_a_season_is_started_and_closed_through_the_page(club, season, browser):  # noqa: F811
    base, cid, token = club["url"], club["id"], club["token"]
    browser.get(f"{base}/clubs/{cid}/seasons")
    add_through_the_page(browser, "start-season", ["Trial week"], "#seasons tbody tr")
    found = {s["name"]: s["id"] for s in ok(base, "GET", f"/v1/clubs/{cid}/seasons",
                                            token)["items"]}
    trial = found["Trial week"]
    browser.find_element(By.CSS_SELECTOR, f"tr[data-season='{trial}'] .close-season").click()
    wait_for("the trial closed", lambda: browser.find_element(
        By.CSS_SELECTOR, f"tr[data-season='{trial}']").get_attribute("data-closed") == "true")
    closed = ok(base, "GET", f"/v1/clubs/{cid}/seasons?closed=true", token)["items"]
    assert [s["id"] for s in closed] == [trial]
    assert browser.find_element(By.CSS_SELECTOR, f"tr[data-season='{season}']").get_attribute(
        "data-closed") == "false"
    settle(browser, "club-seasons")


@pytest.fixture(scope="module")
def season_table(club, members, season) -> dict[str, Any]:
    """A season table of the four members played over the API: two hands entered by the
    scorer (results mode), each settled."""
    base, cid, token = club["url"], club["id"], club["token"]
    made = ok(base, "POST", f"/v1/clubs/{cid}/tables", token, {
        "season": season, "deal": "results", "first_dealer": 0,
        "seats": [{"member": m} for m in members]})
    for result in (RESULT_A, RESULT_B):
        ok(base, "POST", f"/v1/tables/{made['id']}/hands", token, {"result": result})
    return made


def open_standings(browser: Any, base: str, cid: str, season: str) -> None:  # noqa: F811
    """A fresh standings page for the season (the same page with another fragment would
    keep its other filters)."""
    browser.get("about:blank")
    browser.get(f"{base}/clubs/{cid}/standings#season={season}")


def open_points_standings(browser: Any, base: str, cid: str, season: str) -> None:  # noqa: F811
    """The season's standings page, which opens on pool scoring, switched to points."""
    open_standings(browser, base, cid, season)
    wait_for("the pool standings first", lambda: browser.find_element(
        By.CSS_SELECTOR, "#standings tbody").get_attribute("data-loaded")
        == f"season={season}&scoring=pool")
    browser.find_element(By.CSS_SELECTOR, "select[name=scoring] option[value=points]").click()
    wait_for("the points standings", lambda: browser.find_element(
        By.CSS_SELECTOR, "#standings tbody").get_attribute("data-loaded")
        == f"season={season}&scoring=points")


def standings_on_page(browser: Any) -> dict[str, dict[str, str]]:  # noqa: F811
    rows = {}
    for tr in browser.find_elements(By.CSS_SELECTOR, "#standings tbody tr"):
        rows[tr.get_attribute("data-member")] = {
            td.get_attribute("data-field"): td.text for td in tr.find_elements(By.TAG_NAME, "td")}
    return rows


def check_standings(club: dict[str, Any], browser: Any, season: str,  # noqa: F811
                    scoring: str = "pool") -> dict[str, Any]:
    """The page's table and chart against GET /standings for the season and scoring."""
    base, cid, token = club["url"], club["id"], club["token"]
    api = ok(base, "GET", f"/v1/clubs/{cid}/standings?season={season}&scoring={scoring}",
             token)
    wait_for("the standings as of now", lambda: browser.find_element(
        By.CSS_SELECTOR, "#standings tbody").get_attribute("data-as-of") == str(api["as_of"]))
    shown = standings_on_page(browser)
    assert list(shown) == [r["member"] for r in api["rows"]]  # the API's order
    for row in api["rows"]:
        for field in ("rank", "name", "tables", "hands", "chips", "points", "games_won",
                      "tricks", "loos", "looed_chips"):
            assert shown[row["member"]][field] == str(row[field]), (row, field)
    finals = wait_for("the chart", lambda: browser.find_elements(
        By.CSS_SELECTOR, "#standings-chart circle[data-final]"))
    assert {d.get_attribute("data-member"): int(d.get_attribute("data-value"))
            for d in finals} == {r["member"]: r["chips" if scoring == "pool" else "points"]
                                 for r in api["rows"]}
    return api


def test_standings_table_chart_and_csv_agree_with_the_api(club, season, season_table,
                                                          browser, downloads):  # noqa: F811
    base, cid, token = club["url"], club["id"], club["token"]
    open_standings(browser, base, cid, season)
    api = check_standings(club, browser, season)
    assert sum(r["chips"] for r in api["rows"]) < 0  # the pool holds the rest
    names = [td.text for td in browser.find_elements(
        By.CSS_SELECTOR, "#standings td[data-field=name]")]
    assert "<script>" in names and "=cmd()" in names  # as text
    # A line per member, a dot after each of the two hands.
    lines = browser.find_elements(By.CSS_SELECTOR, "#standings-chart polyline")
    assert len(lines) == 4
    assert len(browser.find_elements(By.CSS_SELECTOR, "#standings-chart circle")) == 4 * 2
    settle(browser, "club-standings")
    # The CSV download sends the token (a plain link could not) and keeps formulas inert.
    browser.find_element(By.ID, "csv-download").click()
    path = wait_for("the CSV file", lambda: [p for p in downloads.glob("*.csv")])[0]
    wait_for("the whole CSV", lambda: path.read_text().count("\n") == 5)
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    status, want = call(base, "GET", f"/v1/clubs/{cid}/standings?season={season}"
                        "&scoring=pool&format=csv", token, accept="text/csv")
    assert status == 200 and path.read_bytes().decode() == want  # byte for byte
    assert {r["name"] for r in rows} == {"Ann", "<script>", "'=cmd()", "Dan"}
    assert path.name == "standings-Autumn_2026.csv"
    settle(browser, "club-standings-downloaded")


def test_points_standings_chart_the_points(club, members, season, browser):  # noqa: F811
    base, cid, token = club["url"], club["id"], club["token"]
    made = ok(base, "POST", f"/v1/clubs/{cid}/tables", token, {
        "season": season, "deal": "results", "first_dealer": 0, "scoring": "points",
        "options": {"target": 50}, "seats": [{"member": m} for m in members]})
    for result in (RESULT_B, RESULT_A, RESULT_B):
        ok(base, "POST", f"/v1/tables/{made['id']}/hands", token, {"result": result})
    open_points_standings(browser, base, cid, season)
    api = check_standings(club, browser, season, "points")
    assert any(r["points"] for r in api["rows"])
    assert browser.find_element(By.ID, "season-chart-title").text == "Points over the season"
    settle(browser, "club-standings-points")


def test_the_standings_page_follows_the_clubs_event_stream(club, members, browser):  # noqa: F811
    base, cid, token = club["url"], club["id"], club["token"]
    winter = ok(base, "POST", f"/v1/clubs/{cid}/seasons", token,
                {"name": "Winter", "starts_on": "2026-12-01"})["id"]
    made = ok(base, "POST", f"/v1/clubs/{cid}/tables", token, {
        "season": winter, "deal": "results", "first_dealer": 0,
        "seats": [{"member": m} for m in members]})
    open_standings(browser, base, cid, winter)
    wait_for("the winter standings", lambda: browser.find_element(
        By.CSS_SELECTOR, "#standings tbody").get_attribute("data-loaded")
        == f"season={winter}&scoring=pool")
    wait_for("the club's stream", lambda: browser.find_element(By.ID, "live")
             .get_attribute("data-live") == "stream")
    hands = lambda: text_of(browser, "#standings td[data-field=hands]")  # noqa: E731
    assert set(hands()) <= {"0"}  # no hand yet
    ok(base, "POST", f"/v1/tables/{made['id']}/hands", token, {"result": RESULT_A})
    # No reload, no poll while streaming: the club's feed brings the settled hand.
    wait_for("the hand in the standings", lambda: hands() == ["1"] * 4, deadline=5)
    check_standings(club, browser, winter)
    assert browser.find_element(By.ID, "live").get_attribute("data-duplicates") == "0"
    settle(browser, "club-standings-live")


def test_the_tables_page_filters_and_opens_the_admin_view_where_a_hand_is_voided(
        club, season, season_table, browser):  # noqa: F811
    base, cid, token = club["url"], club["id"], club["token"]
    tid = season_table["id"]
    browser.get(f"{base}/clubs/{cid}/tables")
    wait_for("the table listed", lambda: browser.find_elements(
        By.CSS_SELECTOR, f"#tables tr[data-table='{tid}']"))
    browser.find_element(By.CSS_SELECTOR, "#table-filters select[name=status] "
                                          "option[value=finished]").click()
    wait_for("no finished table", lambda: browser.find_element(
        By.CSS_SELECTOR, "#tables tbody").get_attribute("data-loaded") == "status=finished")
    assert not browser.find_elements(By.CSS_SELECTOR, "#tables tbody tr")
    browser.find_element(By.CSS_SELECTOR, "#table-filters select[name=status] "
                                          "option[value=playing]").click()
    row = wait_for("the playing table", lambda: browser.find_element(
        By.CSS_SELECTOR, f"#tables tr[data-table='{tid}']"))
    assert "Autumn 2026" in row.text and "<script>" in row.text
    settle(browser, "club-tables")
    before = ok(base, "GET", f"/v1/clubs/{cid}/standings?season={season}", token)
    row.find_element(By.LINK_TEXT, "Admin view").click()
    button = wait_for("the void button", lambda: (lambda b: b.is_displayed() and b)(
        browser.find_element(By.ID, "void-button")))
    assert button.text == "Void hand 2" and token not in browser.current_url
    settle(browser, "club-table-admin")
    button.click()
    dialog = wait_for("the confirmation", lambda: (lambda d: d.is_displayed() and d)(
        browser.find_element(By.ID, "void-dialog")))
    settle(browser, "club-void-dialog")
    dialog.find_element(By.ID, "void-confirm").click()
    wait_for("the void done", lambda: not browser.find_element(By.ID, "void-dialog")
             .is_displayed())
    wait_for("hand 1 offered next", lambda: browser.find_element(By.ID, "void-button").text
             == "Void hand 1")
    wait_for("hand 2 marked voided", lambda: "voided" in browser.find_element(
        By.CSS_SELECTOR, "#hands li[data-hand='2']").get_attribute("class"))
    assert "(voided" in browser.find_element(By.ID, "last-hand-title").text
    assert browser.find_elements(By.CSS_SELECTOR, "#last-hand tr[data-reason=void]")
    after = ok(base, "GET", f"/v1/clubs/{cid}/standings?season={season}", token)
    assert [r["chips"] for r in after["rows"]] != [r["chips"] for r in before["rows"]]
    record = ok(base, "GET", f"/v1/tables/{tid}/hands/2", token)
    assert record["hand"]["voided"] is True
    # A refused void: the dialog opened for hand 1, hand 1 voided meanwhile elsewhere.
    browser.find_element(By.ID, "void-button").click()
    wait_for("the dialog again", lambda: browser.find_element(By.ID, "void-dialog").is_displayed())
    ok(base, "POST", f"/v1/tables/{tid}/hands/1/void", token, {"reason": "from elsewhere"})
    browser.find_element(By.ID, "void-confirm").click()
    problem = wait_for("the refusal in place", lambda: (lambda p: p.is_displayed() and p)(
        browser.find_element(By.ID, "void-problem")))
    assert problem.text == "Not voided: hand 1 is already voided"
    assert problem.get_attribute("data-code") == "hand_already_voided"
    browser.save_screenshot(str(ARTEFACTS / "club-void-refused.png"))
    browser.get_log("browser")  # the 422 itself is logged by the browser: expected here
    browser.find_element(By.ID, "void-cancel").click()
    # The standings page follows: everything voided, every figure back to zero.
    open_standings(browser, base, cid, season)
    api = check_standings(club, browser, season)
    assert {r["chips"] for r in api["rows"]} == {0}
    settle(browser, "club-standings-after-void")


def test_the_club_home_counts_and_the_token_stays_out_of_addresses_and_logs(
        club, season_table, server, browser):  # noqa: F811
    base, cid, token = club["url"], club["id"], club["token"]
    browser.get(f"{base}/clubs/{cid}")
    counts = ok(base, "GET", f"/v1/clubs/{cid}", token)
    seasons = len(ok(base, "GET", f"/v1/clubs/{cid}/seasons", token)["items"])
    wait_for("the counts", lambda: browser.find_element(By.ID, "count-seasons").text
             == str(seasons))
    assert browser.find_element(By.ID, "count-members").text == str(counts["members"])
    assert browser.find_element(By.ID, "count-tables").text == str(counts["tables"])
    settle(browser, "club-home")
    assert token not in server["log"].read_text()
    # Forgetting the token asks for one again; a wrong one is refused in place.
    browser.find_element(By.ID, "forget-token").click()
    field = wait_for("the token form", lambda: (lambda e: e.is_displayed() and e)(
        browser.find_element(By.ID, "club-token")))
    field.send_keys("not-a-token")
    browser.find_element(By.CSS_SELECTOR, "#club-token-form button").click()
    problem = wait_for("the refusal", lambda: (lambda p: p.is_displayed() and p.text)(
        browser.find_element(By.ID, "gate-problem")))
    assert "does not open this club" in problem
    browser.get_log("browser")  # the 403 itself is logged by the browser: expected here
    field.send_keys(token)
    browser.find_element(By.CSS_SELECTOR, "#club-token-form button").click()
    wait_for("the club again", lambda: browser.find_element(By.ID, "count-tables").text
             == str(counts["tables"]))


@pytest.fixture(scope="module")
def live_table(club, members) -> dict[str, Any]:
    """A shuffled club table of two members: hand 1 is live (dealt, tiles hidden)."""
    base, cid, token = club["url"], club["id"], club["token"]
    return ok(base, "POST", f"/v1/clubs/{cid}/tables", token, {
        "deal": "shuffled", "first_dealer": 0,
        "seats": [{"member": m} for m in members[:2]]})


def move_over_the_api(base: str, table: dict[str, Any]) -> int:
    view = ok(base, "GET", f"/v1/tables/{table['id']}", table["admin_token"])
    move = view["legal_actions"][0] | {"expected_version": view["version"]}
    return ok(base, "POST", f"/v1/tables/{table['id']}/actions", table["admin_token"],
              move)["table"]["version"]


def test_a_spectator_link_is_shared_opens_without_live_tiles_and_is_revoked(
        club, live_table, browser):  # noqa: F811
    base, tid = club["url"], live_table["id"]
    browser.get(f"{base}/tables/{tid}#token={live_table['admin_token']}")
    share = wait_for("the share button", lambda: (lambda b: b.is_displayed() and b)(
        browser.find_element(By.ID, "share-spectator")))
    assert browser.find_elements(By.CSS_SELECTOR, "#seats .tile:not(.back)")  # admin: all
    share.click()
    link = wait_for("the link", lambda: browser.find_element(By.ID, "spectator-link")
                    .get_attribute("value"))
    wait_for("the link listed", lambda: browser.find_element(By.ID, "spectators")
             .get_attribute("data-count") == "1")
    settle(browser, "club-share-spectator")
    secret = link.split("#token=")[1]
    assert link.startswith(f"{base}/tables/{tid}#token=")
    browser.get(link)
    wait_for("the spectator's view", lambda: "viewing as spectator" in browser.find_element(
        By.ID, "summary").text)
    wait_for("the hidden tiles", lambda: browser.find_elements(By.CSS_SELECTOR,
                                                               "#seats .tile.back"))
    assert not browser.find_elements(By.CSS_SELECTOR, "#seats .tile:not(.back)")
    assert not browser.find_element(By.ID, "moves-card").is_displayed()
    assert not browser.find_element(By.ID, "admin-card").is_displayed()
    settle(browser, "club-spectator")
    # Revoked from the admin view: the link opens nothing any more.
    browser.get(f"{base}/tables/{tid}#token={live_table['admin_token']}")
    revoke = wait_for("the revoke button", lambda: browser.find_element(
        By.CSS_SELECTOR, "#spectators button.revoke"))
    revoke.click()
    wait_for("no link left", lambda: browser.find_element(By.ID, "spectators")
             .get_attribute("data-count") == "0")
    assert call(base, "GET", f"/v1/tables/{tid}", secret)[0] == 401


def test_the_seat_page_follows_the_event_stream(club, live_table, browser):  # noqa: F811
    base, tid = club["url"], live_table["id"]
    seat = live_table["seats"][0]["token"]
    browser.get(f"{base}/tables/{tid}#token={seat}")
    live = wait_for("the stream", lambda: (lambda e: e.get_attribute("data-live") == "stream"
                                           and e)(browser.find_element(By.ID, "live")))
    for _ in range(2):
        version = move_over_the_api(base, live_table)
        # The page polls every 15 s while it streams: only the stream brings this in time.
        wait_for(f"version {version} on the page", lambda v=version: browser.find_element(
            By.ID, "summary").get_attribute("data-version") == str(v), deadline=5)
    assert int(live.get_attribute("data-last-id")) > version  # a position, not a version
    # The server ends each stream after 2 s: the page resumes with Last-Event-ID and still
    # gets every event exactly once.
    wait_for("a resumed stream", lambda: int(live.get_attribute("data-connects") or 0) >= 2,
             deadline=8)
    version = move_over_the_api(base, live_table)
    wait_for(f"version {version} after the reconnect", lambda: browser.find_element(
        By.ID, "summary").get_attribute("data-version") == str(version), deadline=5)
    start = int(live.get_attribute("data-start"))
    events = ok(base, "GET", f"/v1/tables/{tid}/events?limit=500",
                live_table["admin_token"])["events"]
    after = [e["position"] for e in events if e["position"] > start]
    wait_for("every event", lambda: live.get_attribute("data-last-id") == str(after[-1]))
    assert int(live.get_attribute("data-events")) == len(after)
    assert live.get_attribute("data-duplicates") == "0"
    settle(browser, "club-seat-live")


def test_the_page_polls_when_the_stream_is_unavailable(club, live_table, browser):  # noqa: F811
    base, tid = club["url"], live_table["id"]
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.setBlockedURLs", {"urls": [f"*/v1/tables/{tid}/events"]})
    try:
        browser.get(f"{base}/tables/{tid}#token={live_table['admin_token']}")
        live = wait_for("polling", lambda: (lambda e: e.get_attribute("data-why") and e)(
            browser.find_element(By.ID, "live")))
        assert live.get_attribute("data-live") == "poll"
        assert live.get_attribute("data-why") == "unavailable"
        version = move_over_the_api(base, live_table)
        wait_for("the move by polling", lambda: browser.find_element(
            By.ID, "summary").get_attribute("data-version") == str(version), deadline=5)
    finally:
        browser.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
        browser.get_log("browser")  # the blocked request is logged: expected here


def test_the_page_polls_when_the_server_refuses_the_stream(tmp_path, browser):  # noqa: F811
    """A server with room for one stream, held by another client: the page is refused (503)
    and polls, and takes the stream once the slot is free again."""
    with serving(cwd=tmp_path, DATABASE_URL=f"sqlite:///{tmp_path / 'loo.db'}",
                 LOO_SSE_MAX_STREAMS="1", LOO_SSE_KEEPALIVE="0.5") as base:
        table = ok(base, "POST", "/v1/tables", body={
            "seats": [{"name": "Ann"}, {"name": "Bob"}], "first_dealer": 0})
        req = urllib.request.Request(f"{base}/v1/tables/{table['id']}/events", headers={
            "Accept": "text/event-stream", "Authorization": f"Bearer {table['admin_token']}"})
        held = urllib.request.urlopen(req, timeout=10)
        release = threading.Event()

        def hold() -> None:  # read the held stream until told to let it go
            while not release.is_set() and held.readline():
                pass
            held.close()

        holder = threading.Thread(target=hold, daemon=True)
        holder.start()
        try:
            browser.get(f"{base}/tables/{table['id']}#token={table['admin_token']}")
            live = wait_for("refused", lambda: (lambda e: e.get_attribute("data-why") == "busy"
                                                and e)(browser.find_element(By.ID, "live")))
            assert live.get_attribute("data-live") == "poll"
            version = move_over_the_api(base, table)
            wait_for("the move by polling", lambda: browser.find_element(
                By.ID, "summary").get_attribute("data-version") == str(version), deadline=5)
            browser.save_screenshot(str(ARTEFACTS / "club-polling.png"))
            browser.get_log("browser")  # the 503 itself is logged: expected here
        finally:
            release.set()
            holder.join(timeout=5)
        # The slot is free again: the page retries after Retry-After (5 s) and streams.
        wait_for("the stream after the retry", lambda: browser.find_element(
            By.ID, "live").get_attribute("data-live") == "stream", deadline=12)
        browser.get("about:blank")


def test_a_viewer_token_reads_the_club_and_is_offered_no_writes(club, members, browser):  # noqa: F811
    base, cid, token = club["url"], club["id"], club["token"]
    viewer = ok(base, "POST", f"/v1/clubs/{cid}/tokens", token,
                {"role": "viewer", "label": "club screen"})["token"]
    browser.get(f"{base}/clubs/{cid}/members")
    browser.find_element(By.ID, "forget-token").click()  # this tab had the owner's token
    field = wait_for("the token form", lambda: (lambda e: e.is_displayed() and e)(
        browser.find_element(By.ID, "club-token")))
    field.send_keys(viewer)
    browser.find_element(By.CSS_SELECTOR, "#club-token-form button").click()
    wait_for("the members", lambda: len(text_of(browser, "#members td.member-name")) >= 4)
    assert browser.find_element(By.ID, "club-role").text == "viewer"
    assert not browser.find_element(By.ID, "add-member-card").is_displayed()
    assert not browser.find_elements(By.CSS_SELECTOR, "#members button")
    settle(browser, "club-viewer")
    browser.find_element(By.ID, "forget-token").click()
    field = wait_for("the token form", lambda: (lambda e: e.is_displayed() and e)(
        browser.find_element(By.ID, "club-token")))
    field.send_keys(token)
    browser.find_element(By.CSS_SELECTOR, "#club-token-form button").click()
    wait_for("the owner again", lambda: browser.find_element(By.ID, "club-role").text
             == "owner")


def test_club_pages_fit_a_phone_width_screen(club, season_table, browser):  # noqa: F811
    base, cid = club["url"], club["id"]
    browser.set_window_size(390, 844)
    try:
        for page, ready in (("", "#count-tables"), ("/members", "#members tbody tr"),
                            ("/tables", "#tables tbody tr"),
                            ("/standings", "#standings-chart")):
            browser.get(f"{base}/clubs/{cid}{page}")
            wait_for(page or "home", lambda r=ready: browser.find_elements(By.CSS_SELECTOR, r))
            overflow = browser.execute_script(
                "return document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 0, f"{page}: {overflow}px wider than the screen"
            settle(browser, "club-phone" + page.replace("/", "-"))
    finally:
        browser.set_window_size(1100, 1300)


@pytest.mark.parametrize("role", ["owner", "viewer"])
def test_the_club_tables_ways_in_are_in_view_on_a_phone(
        club, members, browser, role):  # noqa: F811
    """At 390 px the tables list scrolled sideways inside its box with the Open column (Admin
    view or Spectator view, and Chips) past its right edge, behind the season, game and
    hands: a phone showed a list of tables and no way into any. The season and hands (the
    filters' to say) give way there, the date and the links wrap, and every link is in view."""
    base, cid, token = club["url"], club["id"], club["token"]
    own = ok(base, "POST", f"/v1/clubs/{cid}/members", token, {"name": f"Phone {role}"})["id"]
    made = ok(base, "POST", f"/v1/clubs/{cid}/tables", token, {
        "deal": "results", "first_dealer": 0,
        "seats": [{"member": own}, {"member": members[1]}, {"member": members[3]}]})
    opener = token if role == "owner" else ok(base, "POST", f"/v1/clubs/{cid}/tokens", token, {
        "role": "viewer", "label": "phone"})["token"]
    browser.set_window_size(390, 844)
    try:
        browser.get(f"{base}/docs/rules")
        browser.execute_script("sessionStorage.setItem(arguments[0], arguments[1])",
                               f"loo:club:{cid}", opener)
        browser.get(f"{base}/clubs/{cid}/tables")
        wait_for("the member filter", lambda: browser.find_element(
            By.CSS_SELECTOR, f"#filter-member option[value='{own}']")).click()
        wait_for("only that member's table", lambda: browser.find_element(
            By.CSS_SELECTOR, "#tables tbody").get_attribute("data-loaded") == f"member={own}")
        rows = browser.find_elements(By.CSS_SELECTOR, "#tables tbody tr")
        assert [r.get_attribute("data-table") for r in rows] == [made["id"]]
        box = "document.querySelector('#tables').parentElement"
        assert browser.execute_script(f"return {box}.scrollWidth - {box}.clientWidth") <= 0
        edge = browser.execute_script(f"return {box}.getBoundingClientRect().right")
        links = rows[0].find_elements(By.CSS_SELECTOR, "td.actions a")
        view = "Admin view" if role == "owner" else "Spectator view"
        assert [a.text.replace("\n", " ") for a in links] == [view, "Chips"]
        for a in links:
            assert a.is_displayed()
            assert browser.execute_script(
                "return arguments[0].getBoundingClientRect().right", a) <= edge, a.text
        settle(browser, f"club-phone-tables-{role}")
    finally:
        browser.set_window_size(1100, 1300)


def test_a_club_is_created_and_opened_from_the_home_page(server, browser):  # noqa: F811
    base = server["url"]
    browser.get(base + "/")
    form = wait_for("the new club form", lambda: browser.find_element(By.ID, "new-club"))
    form.find_element(By.NAME, "name").send_keys("The Crown & <Anchor>")
    form.find_element(By.CSS_SELECTOR, "button").click()
    wait_for("the owner token shown once", lambda: browser.find_element(
        By.ID, "new-club-done").is_displayed())
    cid = browser.find_element(By.ID, "new-club-id").text
    token = browser.find_element(By.ID, "new-club-token").text
    assert ok(base, "GET", f"/v1/clubs/{cid}", token)["role"] == "owner"
    settle(browser, "club-created")
    browser.find_element(By.ID, "new-club-link").click()
    wait_for("the new club", lambda: browser.find_element(By.ID, "club-name").text
             == "The Crown & <Anchor>")
    assert token not in browser.current_url
    # Another tab's way in: the club's id and token on the home page.
    browser.find_element(By.ID, "forget-token").click()
    wait_for("the gate", lambda: browser.find_element(By.ID, "club-gate").is_displayed())
    browser.get(base + "/")
    form = wait_for("the open club form", lambda: browser.find_element(By.ID, "open-club"))
    form.find_element(By.NAME, "club").send_keys(cid)
    form.find_element(By.NAME, "token").send_keys(token)
    form.find_element(By.CSS_SELECTOR, "button").click()
    wait_for("the club opened", lambda: browser.find_element(By.ID, "club-name").text
             == "The Crown & <Anchor>")
    assert browser.current_url == f"{base}/clubs/{cid}"
    assert not browser.find_element(By.ID, "club-gate").is_displayed()


def open_club_page(browser: Any, club: dict[str, Any], path: str) -> None:  # noqa: F811
    """A club page opened afresh with the club's owner token in this tab (whatever the tests
    before left in it)."""
    base, cid = club["url"], club["id"]
    browser.get(f"{base}/docs/rules")  # a page of this origin that keeps no token itself
    browser.execute_script("sessionStorage.setItem(arguments[0], arguments[1])",
                           f"loo:club:{cid}", club["token"])
    browser.get(f"{base}/clubs/{cid}{path}")


@pytest.fixture(scope="module")
def ledger_season(club, members) -> dict[str, Any]:
    """A season of its own: a results pool table of the four members with 12 hands (Ann's
    ledger has more entries than a page) and a Rounce points table of Ann and Dan."""
    base, cid, token = club["url"], club["id"], club["token"]
    season = ok(base, "POST", f"/v1/clubs/{cid}/seasons", token,
                {"name": "Ledger nights", "starts_on": "2026-10-01"})["id"]
    pool = ok(base, "POST", f"/v1/clubs/{cid}/tables", token, {
        "season": season, "deal": "results", "first_dealer": 0,
        "seats": [{"member": m} for m in members]})
    for i in range(12):  # nobody looed: every hand antes anew
        ok(base, "POST", f"/v1/tables/{pool['id']}/hands", token, {"result": {
            "decisions": {str(s): "play" for s in range(4)},
            "tricks": {str(s): 2 if s == i % 4 else 1 for s in range(4)}}})
    rounce = ok(base, "POST", f"/v1/clubs/{cid}/tables", token, {
        "season": season, "variant": "rounce", "deal": "results", "first_dealer": 0,
        "seats": [{"member": members[0]}, {"member": members[3]}]})
    for tricks in ({"0": 3, "1": 2}, {"0": 1, "1": 4}):
        ok(base, "POST", f"/v1/tables/{rounce['id']}/hands", token, {"result": {
            "decisions": {"0": "play", "1": "play"}, "tricks": tricks}})
    return {"id": season, "pool": pool["id"], "rounce": rounce["id"]}


def ledger_rows(browser: Any) -> list[dict[str, str]]:  # noqa: F811
    rows = []
    for tr in browser.find_elements(By.CSS_SELECTOR, "#ledger tbody tr"):
        link = tr.find_elements(By.CSS_SELECTOR, "a.replay-link")
        rows.append({"table": tr.get_attribute("data-table"), "hand": tr.get_attribute("data-hand"),
                     "version": tr.get_attribute("data-version"),
                     "delta": int(tr.get_attribute("data-delta")),
                     "href": link[0].get_attribute("href") if link else None})
    return rows


def test_a_members_ledger_opens_from_the_standings_adds_up_to_the_row_and_links_each_entry_to_its_replay(  # noqa: E501
        club, members, ledger_season, browser):  # noqa: F811
    """API.md Standings: the member ledger lists the transfers and scores behind a member's
    row, each with table, hand and version 'so a scorer can click through to it'; no page
    showed it. A member's name in the standings opens it (the season and scoring carried
    over), a page of entries at a time, each linked to its hand's replay at that event,
    the total set against the row."""
    base, cid, token = club["url"], club["id"], club["token"]
    season, ann = ledger_season["id"], members[0]
    open_club_page(browser, club, f"/standings#season={season}")
    wait_for("the season's standings", lambda: browser.find_element(
        By.CSS_SELECTOR, "#standings tbody").get_attribute("data-loaded")
        == f"season={season}&scoring=pool")
    browser.find_element(By.CSS_SELECTOR,
                         f"#standings tr[data-member='{ann}'] a.member-ledger-link").click()
    wait_for("Ann's ledger", lambda: browser.find_element(
        By.CSS_SELECTOR, "#ledger tbody").get_attribute("data-loaded")
        == f"season={season}&scoring=pool")
    assert browser.find_element(By.ID, "member-name").text == "Ann"
    row = next(r for r in ok(base, "GET", f"/v1/clubs/{cid}/standings?season={season}",
                             token)["rows"] if r["member"] == ann)
    book = ok(base, "GET", f"/v1/clubs/{cid}/members/{ann}/ledger?season={season}", token)
    want = [t for t in book["transfers"] if t["table"] == ledger_season["pool"]]
    assert len(want) > 25  # more than a page
    assert browser.find_element(By.ID, "ledger-total").get_attribute("data-total") \
        == browser.find_element(By.ID, "standings-figure").get_attribute("data-figure") \
        == str(row["chips"])
    assert "✔" in browser.find_element(By.ID, "totals-check").text
    # A page at a time: the first 25, then the rest; every entry the API lists, once.
    first = ledger_rows(browser)
    assert len(first) == 25
    assert not browser.find_element(By.ID, "ledger-prev").is_enabled()
    settle(browser, "club-member-ledger")
    browser.find_element(By.ID, "ledger-next").click()
    wait_for("the second page", lambda: browser.find_element(
        By.CSS_SELECTOR, "#ledger tbody").get_attribute("data-page") == "1")
    rest = ledger_rows(browser)
    assert not browser.find_element(By.ID, "ledger-next").is_enabled()
    shown = first + rest
    assert sorted((r["table"], int(r["hand"]), int(r["version"])) for r in shown) == sorted(
        (t["table"], t["hand"], t["version"]) for t in want)
    assert sum(r["delta"] for r in shown) == row["chips"]
    for r in shown:
        assert r["href"] == (f"{base}/tables/{r['table']}/hands/{r['hand']}/replay"
                             f"?club={cid}#version={r['version']}")
    # An entry opens its hand's replay at the step of that event (this tab's club token).
    entry = rest[-1]
    events = ok(base, "GET", f"/v1/tables/{entry['table']}/hands/{entry['hand']}",
                token)["events"]
    step = [e["version"] for e in events].index(int(entry["version"])) + 1
    browser.find_element(By.CSS_SELECTOR, f"#ledger tr[data-version='{entry['version']}'] "
                                          "a.replay-link").click()
    wait_for(f"the replay at step {step}", lambda: browser.find_element(
        By.ID, "step-label").get_attribute("data-step") == str(step))
    settle(browser, "club-member-ledger-replay")


def test_a_members_points_ledger_counts_the_rounce_start_as_the_row_does(
        club, members, ledger_season, browser):  # noqa: F811
    base, cid, token = club["url"], club["id"], club["token"]
    season, ann = ledger_season["id"], members[0]
    open_points_standings(browser, base, cid, season)
    browser.find_element(By.CSS_SELECTOR,
                         f"#standings tr[data-member='{ann}'] a.member-ledger-link").click()
    wait_for("Ann's points ledger", lambda: browser.find_element(
        By.CSS_SELECTOR, "#ledger tbody").get_attribute("data-loaded")
        == f"season={season}&scoring=points")
    row = next(r for r in ok(base, "GET", f"/v1/clubs/{cid}/standings?season={season}"
                             "&scoring=points", token)["rows"] if r["member"] == ann)
    assert browser.find_element(By.ID, "ledger-total").get_attribute("data-total") \
        == str(row["points"])
    assert browser.find_element(By.ID, "standings-figure").get_attribute("data-figure") \
        == str(row["points"])
    rows = ledger_rows(browser)
    assert [r["hand"] for r in rows][0] == ""  # the starting score (15), then each hand
    assert rows[0]["delta"] == 15 and all(r["href"] for r in rows[1:])
    # A Loo table for points joins the season: a mixed view, where Rounce counts up (the
    # ledger's `counted`); the entries still add up to the row.
    loo = ok(base, "POST", f"/v1/clubs/{cid}/tables", token, {
        "season": season, "deal": "results", "first_dealer": 0, "scoring": "points",
        "options": {"target": 50}, "seats": [{"member": m} for m in members]})
    ok(base, "POST", f"/v1/tables/{loo['id']}/hands", token, {"result": RESULT_A})
    browser.refresh()
    mixed = next(r for r in ok(base, "GET", f"/v1/clubs/{cid}/standings?season={season}"
                               "&scoring=points", token)["rows"] if r["member"] == ann)
    wait_for("the mixed view's total", lambda: browser.find_element(
        By.ID, "ledger-total").get_attribute("data-total") == str(mixed["points"]))
    assert browser.find_element(By.ID, "standings-figure").get_attribute("data-figure") \
        == str(mixed["points"])
    assert mixed["points"] != row["points"]
    # Back to the standings with the same filters.
    browser.find_element(By.ID, "back-to-standings").click()
    wait_for("the points standings again", lambda: browser.find_element(
        By.CSS_SELECTOR, "#standings tbody").get_attribute("data-loaded")
        == f"season={season}&scoring=points")


def test_a_members_ledger_opens_from_the_member_list(club, members, ledger_season,
                                                     browser):  # noqa: F811
    # ledger_season: Dan has played (a standings row) whichever tests ran before this one.
    base, cid, token = club["url"], club["id"], club["token"]
    dan = members[3]
    open_club_page(browser, club, "/members")
    link = wait_for("Dan's link", lambda: browser.find_element(
        By.CSS_SELECTOR, f"#members tr[data-member='{dan}'] a.member-ledger-link"))
    assert link.text == "Dan"
    link.click()
    wait_for("Dan's ledger, every table", lambda: browser.find_element(
        By.CSS_SELECTOR, "#ledger tbody").get_attribute("data-loaded") == "scoring=pool")
    row = next(r for r in ok(base, "GET", f"/v1/clubs/{cid}/standings", token)["rows"]
               if r["member"] == dan)
    assert browser.find_element(By.ID, "ledger-total").get_attribute("data-total") \
        == str(row["chips"])


def test_the_standings_are_readable_on_a_phone(club, members, ledger_season,
                                               browser):  # noqa: F811
    """At 390 px the standings table scrolled sideways inside its box, the chips out of view
    behind the tables and hands, and a long name in the chart's legend (never wrapped) made
    the whole page scroll sideways. The telling columns fit; the rest are a button away,
    with the name kept in view while they scroll."""
    base, cid, token = club["url"], club["id"], club["token"]
    long = ok(base, "POST", f"/v1/clubs/{cid}/members", token,
              {"name": "Maximilian-Fitzgerald-Montgomery-Throckmorton"})["id"]
    made = ok(base, "POST", f"/v1/clubs/{cid}/tables", token, {
        "season": ledger_season["id"], "deal": "results", "first_dealer": 0,
        "seats": [{"member": long}, {"member": members[1]}]})
    ok(base, "POST", f"/v1/tables/{made['id']}/hands", token, {"result": {
        "decisions": {"0": "play", "1": "play"}, "tricks": {"0": 3, "1": 2}}})
    browser.set_window_size(390, 844)
    try:
        open_club_page(browser, club, f"/standings#season={ledger_season['id']}")
        wait_for("the chart", lambda: browser.find_elements(By.CSS_SELECTOR,
                                                            "#standings-chart"))
        overflow = browser.execute_script(
            "return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"the page is {overflow}px wider than the screen"
        box = "document.querySelector('#standings').parentElement"
        assert browser.execute_script(f"return {box}.scrollWidth - {box}.clientWidth") <= 0
        width = browser.execute_script("return window.innerWidth")
        for field in ("rank", "name", "hands", "chips"):
            cell = browser.find_element(
                By.CSS_SELECTOR, f"#standings tr[data-member='{long}'] td[data-field={field}]")
            assert cell.is_displayed(), field
            assert browser.execute_script(
                "return arguments[0].getBoundingClientRect().right", cell) <= width, field
        settle(browser, "club-phone-standings")
        # Every column on demand: they scroll inside the box, the name stays in view.
        button = browser.find_element(By.ID, "all-columns")
        button.click()
        assert button.get_attribute("aria-pressed") == "true"
        looed = browser.find_element(
            By.CSS_SELECTOR, f"#standings tr[data-member='{long}'] td[data-field=looed_chips]")
        assert looed.is_displayed()
        browser.execute_script(f"{box}.scrollLeft = 10000")
        name = browser.find_element(By.CSS_SELECTOR,
                                    f"#standings tr[data-member='{long}'] td[data-field=name]")
        left = browser.execute_script("return arguments[0].getBoundingClientRect().left", name)
        edge = browser.execute_script(f"return {box}.getBoundingClientRect().left")
        assert abs(left - edge) <= 1 and browser.execute_script(f"return {box}.scrollLeft") > 0
        assert browser.execute_script(
            "return document.documentElement.scrollWidth - window.innerWidth") <= 0
        settle(browser, "club-phone-standings-every-column")
        open_club_page(browser, club, f"/members/{members[0]}/ledger#season={ledger_season['id']}")
        wait_for("the ledger", lambda: browser.find_element(
            By.CSS_SELECTOR, "#ledger tbody").get_attribute("data-loaded"))
        assert browser.execute_script(
            "return document.documentElement.scrollWidth - window.innerWidth") <= 0
        settle(browser, "club-phone-member-ledger")
    finally:
        browser.set_window_size(1100, 1300)


def test_a_club_scorer_enters_a_results_hand_and_a_viewer_is_offered_no_form(
        club, members, browser):  # noqa: F811
    base, cid, token = club["url"], club["id"], club["token"]
    made = ok(base, "POST", f"/v1/clubs/{cid}/tables", token, {
        "deal": "results", "first_dealer": 0, "seats": [{"member": m} for m in members[:2]]})
    tid = made["id"]
    for role in ("viewer", "scorer"):
        secret = ok(base, "POST", f"/v1/clubs/{cid}/tokens", token,
                    {"role": role, "label": f"the {role}"})["token"]
        browser.get(f"{base}/docs/rules")  # no page script to keep a token of its own
        browser.execute_script("sessionStorage.setItem(arguments[0], arguments[1])",
                               f"loo:club:{cid}", secret)
        browser.get(f"{base}/tables/{tid}?club={cid}")
        wait_for(f"the {role}'s view", lambda: browser.find_element(
            By.ID, "summary").get_attribute("data-version"))
        if role == "viewer":
            assert not browser.find_element(By.ID, "enter-hand-card").is_displayed()
    wait_for("the results form", lambda: browser.find_element(By.ID, "result-form")
             .is_displayed())
    for seat, tricks in ((0, "3"), (1, "2")):
        browser.find_element(By.CSS_SELECTOR,
                             f"#result-decision-{seat} option[value=play]").click()
        browser.find_element(By.ID, f"result-tricks-{seat}").send_keys(tricks)
    browser.find_element(By.ID, "result-submit").click()
    wait_for("hand 1 settled", lambda: "hand 1: complete" in browser.find_element(
        By.ID, "summary").text)
    assert ok(base, "GET", f"/v1/tables/{tid}/hands/1", token)["hand"]["tricks_won"] == {
        "0": 3, "1": 2}
    settle(browser, "club-scorer-results-form")
    open_club_page(browser, club, "")  # the owner's token in this tab again
