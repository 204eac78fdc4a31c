"""The web app in a real browser (issue 19): headless Debian chromium driven by selenium
against `loo serve` on embedded SQLite. One server and one browser for the module.

A person plays a whole hand against three bots by clicking only, and the ledger over the
API matches what the page showed; the replay steps through every event with the page's
tiles equal to the API's replay; a tampered event makes the in-browser check fail; the
chip-flow chart's numbers are the API's. Every page is screenshotted under
tests/artefacts/ (git-ignored) and must log no console error.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_serve_process import serving

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
ARTEFACTS = Path(__file__).resolve().parents[1] / "artefacts" / "web"
DEADLINE = 15.0

if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
    if os.environ.get("CI"):
        pytest.fail("chromium and chromedriver are missing (.ci/run installs them)",
                    pytrace=False)
    pytest.skip("chromium/chromedriver not installed (apt-get install chromium "
                "chromium-driver)", allow_module_level=True)

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

FLAGS = ("--headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run "
         "--disable-background-networking --disable-component-update --disable-sync").split()


def wait_for(what: str, check: Callable[[], Any], deadline: float = DEADLINE) -> Any:
    """Poll CHECK until it returns something truthy, or fail naming WHAT."""
    end = time.monotonic() + deadline
    while True:
        try:
            value = check()
        except Exception:  # an element replaced while we read it: read again
            value = None
        if value:
            return value
        if time.monotonic() > end:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


def get(url: str, token: str) -> Any:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    cwd = tmp_path_factory.mktemp("web-serve")
    db = cwd / "loo.db"
    # Keep-alives every second: a stream whose page went away (each page closes its stream
    # when left) is noticed, and its slot freed, within a second or two, as pages come and go
    # quickly here (the server holds 32 streams at most; it learns of a closed one by writing).
    with serving(cwd=cwd, DATABASE_URL=f"sqlite:///{db}", LOO_SSE_KEEPALIVE="1") as url:
        yield url, db


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    profile = tempfile.mkdtemp(prefix="loo-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_window_size(1100, 1300)
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def retype(driver: Any, box_id: str, text: str) -> None:
    """Clear the input `box_id` and type `text` into it."""
    box = driver.find_element(By.ID, box_id)
    box.clear()
    box.send_keys(text)


def settle(driver: Any, name: str) -> None:
    """Screenshot the page and assert the browser logged no error on it."""
    driver.save_screenshot(str(ARTEFACTS / f"{name}.png"))
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors


@pytest.fixture(scope="module")
def played(server, browser) -> dict[str, Any]:
    """Start a game from the home page and play hand 1 to settlement by clicking only."""
    url, _ = server
    browser.get(url + "/")
    wait_for("the home page's form", lambda: browser.find_element(By.ID, "new-game"))
    settle(browser, "home")
    browser.find_element(By.CSS_SELECTOR, "#new-game button[type=submit]").click()
    wait_for("the table page", lambda: "/tables/" in browser.current_url)
    table_id = browser.current_url.rsplit("/", 1)[-1].split("#")[0]
    token = wait_for("the seat token", lambda: browser.execute_script(
        "return sessionStorage.getItem(arguments[0])", f"loo:token:{table_id}"))
    admin = browser.execute_script("return sessionStorage.getItem(arguments[0])",
                                   f"loo:admin:{table_id}")
    shot = False
    clicks = 0
    while True:
        summary = wait_for("the summary", lambda: browser.find_element(By.ID, "summary")
                           .get_attribute("data-version"))
        assert summary
        text = browser.find_element(By.ID, "summary").text
        if "hand 1:" not in text or "complete" in text:
            break
        moves = browser.find_elements(By.CSS_SELECTOR, "#moves button.move:not([disabled])")
        plain = [b for b in moves if "toggle" not in b.get_attribute("class")]
        if plain:
            if not shot and len(browser.find_elements(By.CSS_SELECTOR, "#moves button")) > 2:
                settle(browser, "table-seat")
                shot = True
            version = summary
            plain[0].click()
            clicks += 1
            wait_for("the page to take the move", lambda v=version: browser.find_element(
                By.ID, "summary").get_attribute("data-version") != v)
        elif moves:  # a discard after a miss: choose tiles (one click a look: each
            # click redraws the buttons) until the discard button is enabled
            unpressed = [b for b in moves if b.get_attribute("aria-pressed") == "false"]
            unpressed[0].click()
        else:
            time.sleep(0.05)
        assert clicks < 40, "the hand did not end"
    settle(browser, "table-after-hand")
    return {"url": url, "id": table_id, "token": token, "admin": admin, "clicks": clicks}


def page_balances(driver: Any) -> tuple[dict[str, int], int, int]:
    seats = {}
    for seat in driver.find_elements(By.CSS_SELECTOR, "#seats .seat"):
        balance = seat.find_element(By.CSS_SELECTOR, ".balance").get_attribute("data-balance")
        seats[f"seat:{seat.get_attribute('data-seat')}"] = int(balance)
    pool = int(driver.find_element(By.CSS_SELECTOR, "#turn-up .pool").get_attribute("data-pool"))
    version = int(driver.find_element(By.ID, "summary").get_attribute("data-version"))
    return seats, pool, version


def test_a_hand_played_by_clicking_settles_and_the_ledger_matches_the_page(played, browser):
    base, tid, token = played["url"], played["id"], played["token"]
    assert played["clicks"] >= 1
    seats, pool, version = page_balances(browser)
    table = get(f"{base}/v1/tables/{tid}", token)
    assert table["version"] == version  # the page shows the table as it is now
    ledger = get(f"{base}/v1/tables/{tid}/ledger", token)
    assert ledger["balances"] == {**seats, "pool": pool}
    assert any(t["hand"] == 1 and t["reason"] in ("trick", "loo", "pool_award")
               for t in ledger["transfers"])  # hand 1 was settled
    assert get(f"{base}/v1/tables/{tid}/hands/1", token)["complete"] is True
    # The page says where hand 1's chips went, as the ledger does (stakes aside).
    wait_for("the last hand's chips", lambda: browser.find_element(By.ID, "last-hand-card")
             .is_displayed())
    shown = sorted(int(td.text) for td in browser.find_elements(
        By.CSS_SELECTOR, "#last-hand tr td:nth-child(3)"))
    assert shown == sorted(t["amount"] for t in ledger["transfers"] if t["hand"] == 1
                           and t["reason"] not in ("ante", "dealer_ante"))


def test_admin_view_shows_every_tile(played, browser):
    browser.get(f"{played['url']}/tables/{played['id']}#token={played['admin']}")
    wait_for("the admin's seats", lambda: browser.find_elements(By.CSS_SELECTOR, "#seats .seat"))
    wait_for("tiles face up", lambda: browser.find_elements(By.CSS_SELECTOR, "#seats .tile"))
    assert not browser.find_elements(By.CSS_SELECTOR, "#seats .tile.back")
    assert "#token" not in browser.current_url  # the token leaves the address bar
    settle(browser, "table-admin")


def tiles_on_page(driver: Any) -> dict[str, list[str]]:
    out = {}
    for seat in driver.find_elements(By.CSS_SELECTOR, "#seats .seat"):
        out[seat.get_attribute("data-seat")] = sorted(
            t.get_attribute("title") for t in seat.find_elements(By.CSS_SELECTOR, ".tile"))
    return out


def test_replay_steps_through_every_event_and_verifies(played, browser):
    base, tid, token = played["url"], played["id"], played["token"]
    browser.get(f"{base}/tables/{tid}/hands/1/replay#step=0")
    label = lambda: browser.find_element(By.ID, "step-label").get_attribute("data-step")  # noqa: E731
    wait_for("step 0", lambda: label() == "0")
    verdict = wait_for("the verdict", lambda: browser.find_element(By.ID, "verdict")
                       .get_attribute("data-ok"))
    assert verdict == "true", browser.find_element(By.ID, "checks").text
    assert browser.find_element(By.ID, "download").is_displayed()  # the loo-hh file
    steps = get(f"{base}/v1/tables/{tid}/hands/1/replay?step=0", token)["steps"]
    body = browser.find_element(By.TAG_NAME, "body")
    for k in range(steps + 1):
        if k:
            body.send_keys(Keys.ARROW_RIGHT)
            wait_for(f"step {k}", lambda k=k: label() == str(k))
        state = get(f"{base}/v1/tables/{tid}/hands/1/replay?step={k}", token)["state"]
        hands = (state["hand"] or {}).get("hands") or {}
        want = {seat: sorted(hands.get(seat, [])) for seat in tiles_on_page(browser)}
        assert tiles_on_page(browser) == want, f"step {k}"
        if k == 20:
            settle(browser, "replay")
    assert browser.find_elements(By.CSS_SELECTOR, "#settlement table")  # the settlement
    body.send_keys(Keys.ARROW_LEFT)
    wait_for("a step back", lambda: label() == str(steps - 1))
    browser.get(f"{base}/tables/{tid}/hands/1/replay#step=7")  # a deep link
    wait_for("step 7 by its link", lambda: label() == "7")
    settle(browser, "replay-step-7")


def test_chip_chart_shows_the_ledger(played, browser):
    base, tid, token = played["url"], played["id"], played["token"]
    browser.get(f"{base}/tables/{tid}/chips")
    wait_for("the chart", lambda: browser.find_elements(By.CSS_SELECTOR,
                                                       "#balance-chart circle"))

    def chart_matches_ledger() -> Any:
        """The dots read in one script (the page redraws them as hands are settled) and
        the ledger read after: equal, or read again (a hand settled in between)."""
        dots = browser.execute_script(
            "return Array.from(document.querySelectorAll('#balance-chart circle'))"
            ".map(d => [Number(d.dataset.hand), d.dataset.account, Number(d.dataset.value)])")
        ledger = get(f"{base}/v1/tables/{tid}/ledger", token)
        totals: dict[str, int] = {}
        after: dict[int, dict[str, int]] = {}
        for t in ledger["transfers"]:
            totals[t["from"]] = totals.get(t["from"], 0) - t["amount"]
            totals[t["to"]] = totals.get(t["to"], 0) + t["amount"]
            after[t["hand"]] = dict(totals)
        shown = {(hand, acct): value for hand, acct, value in dots}
        expected = {(hand, acct): values.get(acct, 0) for hand, values in after.items()
                    for acct in {a for _, a in shown}}
        return ledger if shown and shown == expected else None

    ledger = wait_for("the chart to show the ledger", chart_matches_ledger)
    flows = browser.execute_script(
        "return Array.from(document.querySelectorAll('#flows tr[data-amount]'))"
        ".map(f => Number(f.dataset.amount))")
    assert sum(flows) == sum(t["amount"] for t in ledger["transfers"] if t["hand"] == 1)
    settle(browser, "chips")


def test_a_tampered_event_fails_the_browser_check(played, server, browser):
    base, tid = played["url"], played["id"]
    _, db = server
    with sqlite3.connect(db) as conn:  # what an intruder with the database file could do
        conn.execute("DROP TRIGGER IF EXISTS events_no_update")
        (version,) = conn.execute("SELECT min(version) FROM events WHERE table_id = ? "
                                  "AND hand = 1 AND type = 'player_decided'", (tid,)).fetchone()
        conn.execute("UPDATE events SET recorded_at = '2001-01-01T00:00:00+00:00' "
                     "WHERE table_id = ? AND version = ?", (tid, version))
    browser.get(f"{base}/tables/{tid}/hands/1/replay")
    verdict = wait_for("the verdict", lambda: browser.find_element(By.ID, "verdict")
                       .get_attribute("data-ok"))
    assert verdict == "false"
    chain = browser.find_element(By.CSS_SELECTOR, "#checks [data-check=chain]")
    assert chain.get_attribute("class") == "bad" and f"event {version}" in chain.text
    deal = browser.find_element(By.CSS_SELECTOR, "#checks [data-check=deal]")
    assert deal.get_attribute("class") == "ok"  # only what was changed fails
    settle(browser, "replay-tampered")
    with sqlite3.connect(db) as conn:  # now a different seed: neither commitment nor deal hold
        (data,) = conn.execute("SELECT data FROM events WHERE table_id = ? AND hand = 1 "
                               "AND type = 'seed_revealed'", (tid,)).fetchone()
        forged = json.loads(data)
        forged["seed"] = "ab" * 32
        conn.execute("UPDATE events SET data = ? WHERE table_id = ? AND hand = 1 "
                     "AND type = 'seed_revealed'", (json.dumps(forged), tid))
    browser.get(f"{base}/tables/{tid}/hands/1/replay?again=1#step=1")  # a new document
    wait_for("the second verdict", lambda: browser.find_element(By.ID, "verdict")
             .get_attribute("data-ok") == "false")
    for check in ("commitment", "deal"):
        row = browser.find_element(By.CSS_SELECTOR, f"#checks [data-check={check}]")
        assert row.get_attribute("class") == "bad", check


def post(url: str, body: Any, token: str | None = None) -> Any:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def fall_behind(browser: Any, url: str, tid: str, token: str) -> None:
    """Open the table's page and leave it behind: no event stream (blocked while it loads),
    and its polling stopped, so it learns of nothing done elsewhere until it asks."""
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.setBlockedURLs", {"urls": [f"*/v1/tables/{tid}/events"]})
    try:
        browser.get(f"{url}/tables/{tid}#token={token}")
        wait_for("the table", lambda: browser.find_element(By.ID, "summary")
                 .get_attribute("data-version"))
        wait_for("polling", lambda: browser.find_element(By.ID, "live").get_attribute(
            "data-why") == "unavailable")
    finally:
        browser.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
    browser.execute_script("for (let i = 0; i < 10000; i++) { clearInterval(i); clearTimeout(i); }")


def test_a_move_someone_else_beat_says_so_in_plain_words_and_refreshes_the_table(
        server, browser):
    """API.md Conventions, 409 version_conflict: a move sent from a page that had fallen
    behind was shown as the API words it ('Move refused: the table is at version 7, not 6:
    read it again and retry with its current version'), which tells a player nothing. The
    page says someone else moved first, and shows the table as it now is."""
    url, _ = server
    seats = [{"name": "Ann"}, {"name": "Bot", "bot": "random"}]
    created = post(f"{url}/v1/tables", {"seats": seats, "first_dealer": 0})
    tid, token = created["id"], created["seats"][0]["token"]
    fall_behind(browser, url, tid, token)
    buttons = browser.find_elements(By.CSS_SELECTOR, "#moves button.move:not([disabled])")
    move = get(f"{url}/v1/tables/{tid}", token)["legal_actions"][0]
    post(f"{url}/v1/tables/{tid}/actions", move, token)  # the same seat, from elsewhere
    buttons[0].click()  # the page's move is now stale
    problem = wait_for("the refusal", lambda: (lambda p: p.is_displayed() and p)(
        browser.find_element(By.ID, "problem")))
    assert problem.text == ("Someone else moved first; the table has been refreshed. "
                            "Look at it again before you move."), problem.text
    assert problem.get_attribute("data-code") == "version_conflict"
    now = get(f"{url}/v1/tables/{tid}", token)["version"]
    assert browser.find_element(By.ID, "summary").get_attribute("data-version") == str(now)
    browser.save_screenshot(str(ARTEFACTS / "table-moved-first.png"))
    browser.get_log("browser")  # the 409 itself is logged by the browser: expected here


def test_a_hand_another_scorer_entered_first_says_so_and_the_form_moves_on(server, browser):
    """The same 409 on the results form: another scorer entered hand 1 first. The form says
    so in words and now offers hand 2, instead of the API's talk of versions."""
    url, _ = server
    created = post(f"{url}/v1/tables", {"deal": "results", "first_dealer": 0, "seats": [
        {"name": "Ann"}, {"name": "Bob"}]})
    tid, admin = created["id"], created["admin_token"]
    fall_behind(browser, url, tid, admin)
    result = {"decisions": {"0": "play", "1": "play"}, "tricks": {"0": 3, "1": 2}}
    post(f"{url}/v1/tables/{tid}/hands", {"result": result}, admin)  # from elsewhere
    for seat, tricks in ((0, "3"), (1, "2")):
        browser.find_element(By.CSS_SELECTOR,
                             f"#result-decision-{seat} option[value=play]").click()
        browser.find_element(By.ID, f"result-tricks-{seat}").send_keys(tricks)
    browser.find_element(By.ID, "result-submit").click()
    problem = wait_for("the refusal", lambda: (lambda p: p.is_displayed() and p)(
        browser.find_element(By.ID, "result-problem")))
    assert problem.text == ("Someone else changed this table first; the table has been "
                            "refreshed. Check the hand before you enter it again.")
    assert browser.find_element(By.ID, "enter-hand-number").text == "2"
    assert get(f"{url}/v1/tables/{tid}", admin)["hand"]["number"] == 1  # entered once
    browser.save_screenshot(str(ARTEFACTS / "table-entered-first.png"))
    browser.get_log("browser")  # the 409 itself is logged by the browser: expected here


def test_a_wrong_token_is_a_friendly_page_not_a_blank_one(server, browser):
    url, _ = server
    created = post(f"{url}/v1/tables", {"seats": [{"name": "Ann"}, {"name": "Bob"}]})
    browser.get(f"{url}/tables/{created['id']}/chips#token=not-a-token")
    page = wait_for("the error page", lambda: browser.find_element(By.ID, "fatal"))
    assert page.get_attribute("data-status") == "401"
    assert "does not open this table" in page.text
    browser.save_screenshot(str(ARTEFACTS / "bad-token.png"))
    browser.get(f"{url}/no/such/page")
    assert "Page not found" in browser.find_element(By.TAG_NAME, "h1").text
    browser.get_log("browser")  # the 401 and 404 responses are logged: expected here


def test_keyboard_alone_plays_a_move_and_keeps_the_focus_on_the_moves(server, browser):
    url, _ = server
    seats = [{"name": "Ann"}, {"name": "Bot", "bot": "heuristic"}]
    created = post(f"{url}/v1/tables", {"seats": seats, "first_dealer": 0})
    tid, token = created["id"], created["seats"][0]["token"]
    browser.get(f"{url}/tables/{tid}#token={token}")
    wait_for("Ann's moves", lambda: browser.find_elements(By.CSS_SELECTOR, "#moves button.move"))
    version = browser.find_element(By.ID, "summary").get_attribute("data-version")
    for _ in range(30):  # Tab from the top of the page to the first move
        browser.switch_to.active_element.send_keys(Keys.TAB)
        if browser.execute_script(
                "return !!document.activeElement.closest('#moves button.move')"):
            break
    else:
        pytest.fail("Tab never reached a move")
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    wait_for("the move by Enter", lambda: browser.find_element(By.ID, "summary")
             .get_attribute("data-version") != version)
    if get(f"{url}/v1/tables/{tid}", token)["legal_actions"]:  # Ann moves again: focus kept
        wait_for("the focus on the next move", lambda: browser.execute_script(
            "return !!document.activeElement.closest('#moves button')"))
    settle(browser, "table-keyboard")


def test_pages_fit_a_phone_width_screen(played, browser):
    base, tid = played["url"], played["id"]
    browser.set_window_size(390, 844)
    try:
        for name, path, ready in (("phone-table", f"/tables/{tid}", "#seats .seat"),
                                  ("phone-replay", f"/tables/{tid}/hands/1/replay#step=12",
                                   "#seats .seat"),
                                  ("phone-chips", f"/tables/{tid}/chips", "#balance-chart")):
            browser.get(base + path)
            wait_for(name, lambda r=ready: browser.find_elements(By.CSS_SELECTOR, r))
            overflow = browser.execute_script(
                "return document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 0, f"{name}: {overflow}px wider than the screen"
            settle(browser, name)
    finally:
        browser.set_window_size(1100, 1300)


def test_a_seat_asks_for_a_hint_and_plays_it(server, browser):
    """issue 18: on a table with options.hints the seat's page has a Hint button; the hint
    is the API's, names one of the seat's legal moves, and that move is marked."""
    url, _ = server
    seats = [{"name": "Ann"}, {"name": "Bot", "bot": "expert"}, {"name": "Cat", "bot": "expert"}]
    created = post(f"{url}/v1/tables", {"seats": seats, "first_dealer": 0,
                                        "options": {"hints": True}})
    tid, token = created["id"], created["seats"][0]["token"]
    browser.get(f"{url}/tables/{tid}#token={token}")
    wait_for("the hint button", lambda: browser.find_element(By.ID, "hint-button")).click()
    shown = wait_for("the hint", lambda: browser.find_element(By.ID, "hint-text"))
    action = json.loads(shown.get_attribute("data-action"))
    assert action == get(f"{url}/v1/tables/{tid}/hint", token)["action"]
    assert action in get(f"{url}/v1/tables/{tid}", token)["legal_actions"]
    assert shown.text.startswith("Expert: ")
    marked = browser.find_elements(By.CSS_SELECTOR, "#moves button.move.suggested")
    assert len(marked) == 1 and json.loads(marked[0].get_attribute("data-action")) == action
    settle(browser, "table-hint")
    version = browser.find_element(By.ID, "summary").get_attribute("data-version")
    marked[0].click()
    wait_for("the hinted move", lambda: browser.find_element(By.ID, "summary")
             .get_attribute("data-version") != version)


def timed_table(url: str) -> tuple[dict[str, Any], str, str]:
    """Ann with two heuristic bots, 5 s a turn, Ann deciding first: the answer, id, her token."""
    seats = [{"name": "Ann"}, {"name": "Bob", "bot": "heuristic"},
             {"name": "Cat", "bot": "heuristic"}]
    created = post(f"{url}/v1/tables", {"seats": seats, "first_dealer": 2,
                                        "options": {"turn_seconds": 5}})
    return created, created["id"], created["seats"][0]["token"]


def test_turn_timers_the_page_counts_the_seconds_down_and_says_the_table_moved_for_the_seat(
        server, browser):
    """README "Turn timers": at a table with options.turn_seconds the seat's page says it is
    on the clock and how many seconds are left, and once the time has run out it says what
    the table did for the seat. Before, nothing on the page told of a timer: the hand simply
    vanished under a player who looked away, and the next one was dealt."""
    url, _ = server
    created, tid, token = timed_table(url)
    browser.get(f"{url}/tables/{tid}#token={token}")
    clock = wait_for("the turn clock", lambda: (lambda c: c.is_displayed() and c)(
        browser.find_element(By.ID, "turn-clock")))
    assert clock.get_attribute("data-seat") == "0"
    assert clock.text.startswith("Your turn: "), clock.text
    first = int(clock.get_attribute("data-left"))
    assert 1 <= first <= 5
    wait_for("the seconds counted down", lambda: int(browser.find_element(
        By.ID, "turn-clock").get_attribute("data-left")) < first)
    settle(browser, "table-turn-clock")
    notice = wait_for("the notice that the table moved for Ann", lambda: (
        lambda n: n.is_displayed() and n)(browser.find_element(By.ID, "timed-out")))
    assert notice.get_attribute("data-seat") == "0" and notice.get_attribute("data-hand") == "1"
    assert "time ran out for you (5 s a turn), so the table dropped for you" in notice.text
    events = get(f"{url}/v1/tables/{tid}/events?after=0&limit=500", token)["events"]
    at = next(i for i, e in enumerate(events) if e["type"] == "turn_timed_out")
    assert events[at]["data"] == {"seat": 0, "seconds": 5}
    assert events[at + 1]["type"] == "player_decided"
    assert events[at + 1]["data"]["seat"] == 0 and events[at + 1]["data"]["choice"] == "drop"
    settle(browser, "table-turn-timed-out")
    post(f"{url}/v1/tables/{tid}/close", {}, created["admin_token"])  # no timer left running


def test_turn_timers_the_page_says_the_table_waits_once_the_timers_rest(server, browser):
    """README "Turn timers": once a whole hand went by that the timers played alone, they
    rest (the table view's timers_idle) and the table waits for its people. The page showed
    no countdown then, but an earlier one ended "Time is up ... the table moves for you now"
    and stayed so, while nothing moved. It says the table waits and why; the person's move
    starts the clock again."""
    url, _ = server
    created, tid, token = timed_table(url)
    browser.get(f"{url}/tables/{tid}#token={token}")
    # Hand 1: Ann's one turn times out (she drops), the bots finish it, hand 2 is dealt.
    view = wait_for("the timers resting with Ann to act", lambda: (lambda v: v if v[
        "timers_idle"] and v["legal_actions"] else None)(get(f"{url}/v1/tables/{tid}", token)),
        deadline=60)
    clock = wait_for("the page saying the table waits", lambda: (lambda c: c.is_displayed(
        ) and c.get_attribute("data-idle") is not None and c)(
        browser.find_element(By.ID, "turn-clock")))
    assert clock.get_attribute("data-seat") == "0" and clock.get_attribute("data-left") is None
    assert clock.text.startswith("Your turn: the turn timer rests"), clock.text
    settle(browser, "table-timers-resting")
    # Ann moves: the timers wake, and the page counts down again when her turn comes.
    post(f"{url}/v1/tables/{tid}/actions",
         view["legal_actions"][0] | {"expected_version": view["version"]}, token)
    wait_for("the table awake", lambda: not get(f"{url}/v1/tables/{tid}", token)["timers_idle"])
    wait_for("the clock without the resting note", lambda: browser.find_element(
        By.ID, "turn-clock").get_attribute("data-idle") is None)
    post(f"{url}/v1/tables/{tid}/close", {}, created["admin_token"])  # no timer left running


def test_pages_left_behind_keep_no_stream_open_so_the_next_page_loads_at_once(server, browser):
    """A page left for another (any navigation) stays in the browser's back/forward cache,
    and its SSE stream stayed open there. A browser keeps six connections to a host, so the
    seventh table page opened within a minute waited 59 s before it even loaded: a scorer
    clicking between a table, its chips, its replays and the club's pages met it, and so did
    this suite (a test took a minute now and then). A page now closes its stream when it is
    hidden and follows the table again, from its last event, when it is shown again."""
    url, _ = server
    tables = [post(f"{url}/v1/tables", {"first_dealer": 0, "seats": [
        {"name": "Ann"}, {"name": "Bob"}]}) for _ in range(8)]
    for i, t in enumerate(tables, 1):
        start = time.monotonic()
        browser.get(f"{url}/tables/{t['id']}#token={t['admin_token']}")
        wait_for(f"page {i} following its table", lambda: browser.find_element(
            By.ID, "live").get_attribute("data-live") == "stream")
        took = time.monotonic() - start
        assert took < 10, f"page {i} took {took:.1f} s to load and follow its table"
    # Back to the page before (from the cache): it follows its table again, live.
    browser.back()
    t = tables[-2]
    wait_for("the page before", lambda: t["id"] in browser.current_url and browser.find_element(
        By.ID, "live").get_attribute("data-live") == "stream")
    version = browser.find_element(By.ID, "summary").get_attribute("data-version")
    view = get(f"{url}/v1/tables/{t['id']}", t["admin_token"])
    post(f"{url}/v1/tables/{t['id']}/actions",
         view["legal_actions"][0] | {"expected_version": view["version"]}, t["admin_token"])
    start = time.monotonic()
    wait_for("the move shown", lambda: browser.find_element(By.ID, "summary").get_attribute(
        "data-version") != version)
    assert time.monotonic() - start < 5  # by the stream, not the 15 s poll
    settle(browser, "table-after-back")


def test_the_api_docs_are_swagger_ui_served_from_here(server, browser) -> None:
    """/docs is Swagger UI (the pinned flask-swagger-ui package's files, through
    flask-smorest): every operation of the spec is listed, the guides are a click away, and
    the page fetched nothing but this server (no CDN, no online validator)."""
    url, _ = server
    spec = json.loads(urllib.request.urlopen(url + "/openapi.json", timeout=10).read())
    ops = sum(1 for item in spec["paths"].values() for m in item
              if m in ("get", "post", "put", "patch", "delete"))
    browser.get(url + "/docs")
    wait_for("every operation listed", lambda: len(
        browser.find_elements(By.CSS_SELECTOR, ".opblock")) == ops)
    assert "Domino Loo ledger" in browser.find_element(By.CSS_SELECTOR, ".info .title").text
    # An operation opens with its security, parameters and problem answers.
    browser.find_element(By.CSS_SELECTOR, "#operations-tables-createTable .opblock-summary"
                         ).click()
    wait_for("createTable's answers", lambda: "admin_token" in browser.find_element(
        By.ID, "operations-tables-createTable").text)
    settle(browser, "docs")
    resources = browser.execute_script(
        "return performance.getEntriesByType('resource').map(e => e.name)")
    assert resources and all(r.startswith(url + "/") for r in resources), resources
    for guide in ("/docs/rules", "/docs/http", "/docs/hash-chain"):
        with urllib.request.urlopen(url + guide, timeout=10) as r:
            assert r.status == 200 and "text/html" in r.headers["Content-Type"]


def play_first_hand_by_api(url: str, tid: str, token: str) -> dict[str, Any]:
    """Play hand 1 for the seat, always its first legal move; the table once it is over."""
    for _ in range(40):
        table = get(f"{url}/v1/tables/{tid}", token)
        if table["hand"]["number"] > 1 or table["hand"]["phase"] == "complete":
            return table
        if table["legal_actions"]:
            post(f"{url}/v1/tables/{tid}/actions",
                 {**table["legal_actions"][0], "expected_version": table["version"]}, token)
        else:
            time.sleep(0.05)
    pytest.fail("hand 1 did not end")


def test_a_rounce_points_game_shows_points_from_15_not_chips_on_every_page(server, browser):
    """A points game's ledger has an empty `transfers` beside its `scores`: the pages took it
    for a chips game (a Pool line at 0 and running totals from 0, not from Rounce's 15, on
    the chip-flow page; "where the chips went" on the table; balances, a pool and no
    settlement in the replay). Every figure shown must be the API's points."""
    url, _ = server
    seats = [{"name": "Ann"}, {"name": "Bot", "bot": "heuristic"},
             {"name": "Cat", "bot": "heuristic"}]
    created = post(f"{url}/v1/tables", {"variant": "rounce", "scoring": "points",
                                        "seats": seats, "first_dealer": 0})
    tid, token = created["id"], created["seats"][0]["token"]
    play_first_hand_by_api(url, tid, token)
    ledger = get(f"{url}/v1/tables/{tid}/ledger", token)
    assert ledger["start"] == {f"seat:{s}": 15 for s in range(3)}
    after_1 = {k: v + sum(x["delta"] for x in ledger["scores"]
                          if x["hand"] == 1 and f"seat:{x['seat']}" == k)
               for k, v in ledger["start"].items()}

    browser.get(f"{url}/tables/{tid}#token={token}")
    title = wait_for("the last hand", lambda: (lambda e: e.is_displayed() and e.text)(
        browser.find_element(By.ID, "last-hand-title")))
    assert title.startswith("Hand 1: points"), title
    assert browser.find_element(By.CSS_SELECTOR, "#table-links a").text == "Points by hand"

    browser.get(f"{url}/tables/{tid}/chips")
    dots = wait_for("the chart", lambda: browser.find_elements(By.CSS_SELECTOR,
                                                                "#balance-chart circle"))
    shown = {d.get_attribute("data-account"): int(d.get_attribute("data-value"))
             for d in dots if d.get_attribute("data-hand") == "1"}
    assert shown == after_1  # no pool, and Rounce counts down from 15
    assert browser.find_element(By.ID, "chart-title").text == "Points after every hand"
    assert browser.find_element(By.CSS_SELECTOR, "#chips-app h1").text == "How the points went"
    settle(browser, "chips-rounce")

    steps = get(f"{url}/v1/tables/{tid}/hands/1/replay?step=0", token)["steps"]
    final = get(f"{url}/v1/tables/{tid}/hands/1/replay?step={steps}", token)["state"]
    browser.get(f"{url}/tables/{tid}/hands/1/replay#step={steps}")
    wait_for("the last step", lambda: browser.find_element(By.ID, "step-label")
             .get_attribute("data-step") == str(steps))
    assert not browser.find_elements(By.CSS_SELECTOR, "#turn-up .pool")
    metas = {m.find_element(By.XPATH, "..").get_attribute("data-seat"):
             m.get_attribute("data-score")
             for m in browser.find_elements(By.CSS_SELECTOR, "#seats .seat-meta")}
    assert metas == {k: str(v) for k, v in final["scores"].items()}
    rows = wait_for("the settlement", lambda: browser.find_elements(
        By.CSS_SELECTOR, "#settlement-scores tr[data-delta]"))
    assert sorted((int(r.get_attribute("data-seat")), int(r.get_attribute("data-delta")))
                  for r in rows) == sorted((x["seat"], x["delta"]) for x in ledger["scores"]
                                           if x["hand"] == 1)
    settle(browser, "replay-rounce")


def test_a_scorer_records_a_miss_with_the_tiles_drawn_from_the_admin_page(server, browser):
    """On a recorded table a miss must name the tiles really drawn, so the API offers it in
    `to_complete`, not `legal_actions`; the page offered only Play and Drop, and a scorer
    entering a hand where somebody missed could not record it. It is a box for the tiles."""
    url, _ = server
    created = post(f"{url}/v1/tables", {"deal": "recorded", "first_dealer": 0, "seats": [
        {"name": "Ann"}, {"name": "Bob"}, {"name": "Cat"}]})
    tid, admin = created["id"], created["admin_token"]
    post(f"{url}/v1/tables/{tid}/hands", {"turn_up": "1-1", "hands": {
        "0": ["6-6", "5-5", "4-4", "3-3", "2-2"], "1": ["6-5", "6-4", "6-3", "6-2", "6-1"],
        "2": ["5-4", "5-3", "5-2", "5-1", "5-0"]}}, admin)
    assert get(f"{url}/v1/tables/{tid}", admin)["to_complete"][0]["seat"] == 1
    browser.get(f"{url}/tables/{tid}#token={admin}")
    box = wait_for("the miss's box", lambda: browser.find_element(By.ID, "miss-drawn"))
    settle(browser, "table-recorded-deciding")
    box.send_keys("0-0 1-0 2-1, 3-1 4-1 0-6" + Keys.ENTER)
    wait_for("the miss", lambda: get(f"{url}/v1/tables/{tid}", admin)["hand"]
             ["decisions"].get("1") == "miss")
    assert sorted(get(f"{url}/v1/tables/{tid}", admin)["hand"]["hands"]["1"]) == sorted(
        ["0-0", "1-0", "2-1", "3-1", "4-1", "6-0"])
    wait_for("Bob's discard", lambda: len(browser.find_elements(
        By.CSS_SELECTOR, "#moves button.toggle")) == 6)
    assert not browser.find_element(By.ID, "problem").is_displayed()
    settle(browser, "table-recorded-miss")
    # By keyboard: a tile chosen keeps the focus (the buttons are drawn anew on each choice;
    # the focus fell to the page's top before, so each choice began with Tabbing back).
    first = browser.find_element(By.CSS_SELECTOR, "#moves button.toggle")
    tile = first.get_attribute("data-tile")
    browser.execute_script("arguments[0].focus()", first)
    browser.switch_to.active_element.send_keys(Keys.SPACE)
    wait_for("the tile chosen", lambda: browser.find_element(
        By.CSS_SELECTOR, f"#moves button.toggle[data-tile='{tile}']")
        .get_attribute("aria-pressed") == "true")
    focused = browser.switch_to.active_element
    assert focused.get_attribute("data-tile") == tile, focused.tag_name
    assert browser.find_element(By.ID, "discard-button").is_enabled()  # one tile, 3 seats


def test_a_closed_tables_page_says_it_is_closed_not_waiting_for_a_move(server, browser):
    """A table closed in the middle of a hand keeps that hand's turn in its record; the page
    said "Waiting for Ann." to Ann herself, "Ann to act" and tagged her "to play", for ever."""
    url, _ = server
    created = post(f"{url}/v1/tables", {"first_dealer": 0, "seats": [
        {"name": "Ann"}, {"name": "Bot", "bot": "heuristic"}, {"name": "Cat", "bot": "heuristic"}]})
    tid, token = created["id"], created["seats"][0]["token"]
    post(f"{url}/v1/tables/{tid}/close", {}, created["admin_token"])
    table = get(f"{url}/v1/tables/{tid}", token)
    assert table["status"] == "closed" and table["hand"]["turn"] == 0  # the premise
    browser.get(f"{url}/tables/{tid}#token={token}")
    over = wait_for("the closed table", lambda: browser.find_element(By.ID, "table-over"))
    assert over.text == f"This table is closed; {table['pool']} chips were left in the pool."
    assert "to act" not in browser.find_element(By.ID, "summary").text
    assert not browser.find_elements(By.CSS_SELECTOR, "#seats .tag.turn, #seats .seat.active")
    settle(browser, "table-closed")


def results_table_with_one_hand(url: str) -> tuple[str, str]:
    """A four-seat results table, dealer seat 0, whose hand 1 is entered: (id, admin token)."""
    created = post(f"{url}/v1/tables", {"deal": "results", "first_dealer": 0, "seats": [
        {"name": n} for n in ("Ann", "Bob", "Cat", "Dan")]})
    tid, admin = created["id"], created["admin_token"]
    post(f"{url}/v1/tables/{tid}/hands", {"result": {
        "decisions": {"0": "play", "1": "play", "2": "drop", "3": "play"},
        "tricks": {"0": 3, "1": 2, "2": 0, "3": 0}}}, admin)
    return tid, admin


def test_the_dealer_tagged_is_the_one_who_dealt_the_hand_shown(server, browser):
    """Once a hand is complete the table's `dealer` is the next hand's; the page tagged that
    seat "dealer" beside the complete hand's decisions, as if it had dealt it."""
    url, _ = server
    tid, admin = results_table_with_one_hand(url)
    table = get(f"{url}/v1/tables/{tid}", admin)
    assert (table["hand"]["phase"], table["hand"]["dealer"], table["dealer"]) == ("complete", 0, 1)
    browser.get(f"{url}/tables/{tid}#token={admin}")
    wait_for("the complete hand", lambda: "hand 1: complete" in browser.find_element(
        By.ID, "summary").text)
    tagged = [s.get_attribute("data-seat") for s in browser.find_elements(
        By.CSS_SELECTOR, "#seats .seat") if "dealer" in [
            t.text for t in s.find_elements(By.CSS_SELECTOR, ".tag")]]
    assert tagged == ["0"]


def test_the_chip_table_does_not_call_a_hand_in_play_over(server, browser):
    """The stakes of a hand being played are in the ledger, so the chip-flow page had a row
    "After hand 1" while hand 1 was still being decided."""
    url, _ = server
    created = post(f"{url}/v1/tables", {"first_dealer": 0, "seats": [
        {"name": "Ann"}, {"name": "Bot", "bot": "heuristic"}, {"name": "Cat", "bot": "heuristic"}]})
    tid, token = created["id"], created["seats"][0]["token"]
    assert get(f"{url}/v1/tables/{tid}", token)["hand"]["phase"] == "deciding"
    browser.get(f"{url}/tables/{tid}/chips#token={token}")
    row = wait_for("the stakes row", lambda: browser.find_element(
        By.CSS_SELECTOR, "#after-each-hand tr[data-hand='1'] td"))
    assert row.text == "1 (in play: its stakes so far)"
    settle(browser, "chips-hand-in-play")


def test_a_results_hand_replays_as_verified_and_a_voided_one_says_so(server, browser):
    """A results (or recorded) table deals no tiles from a seed; its replay said "✘ 2 checks
    failed: this record does not verify" for a sound record, and a voided hand was not
    marked. The seed checks are not applicable there; the hash chain is still checked."""
    url, _ = server
    tid, admin = results_table_with_one_hand(url)
    post(f"{url}/v1/tables/{tid}/hands/1/void", {"reason": "tricks for the wrong seat"}, admin)
    assert get(f"{url}/v1/tables/{tid}/audit", admin)["ok"] is True  # the record is sound
    browser.get(f"{url}/tables/{tid}/hands/1/replay#token={admin}")
    verdict = wait_for("the verdict", lambda: browser.find_element(By.ID, "verdict")
                       .get_attribute("data-ok"))
    assert verdict == "true", browser.find_element(By.ID, "checks").text
    checks = {li.get_attribute("data-check"): li.get_attribute("class")
              for li in browser.find_elements(By.CSS_SELECTOR, "#checks li")}
    assert checks == {"selftest": "ok", "commitment": "na", "deal": "na", "chain": "ok"}
    assert browser.find_element(By.ID, "voided-tag").text == "voided"
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys(Keys.END)
    wait_for("the void", lambda: "voided (tricks for the wrong seat)" in browser.find_element(
        By.ID, "event").text)
    settle(browser, "replay-results-voided")


@pytest.mark.parametrize("scoring", ["pool", "points"])
def test_a_hand_won_without_play_is_told_in_words_not_codes(server, browser, scoring):
    """RULES §8 (a dealer whom everyone else leaves wins without play): the replay's
    settlement said "dealer_ante" and "pool_award" (and "pool" where every other page says
    "Pool"), a points game's "won_without_play" showed raw on the table, replay and chips
    pages (the table page read "won without_play" for chips reasons with two underscores),
    and a results hand's replay began "Hand 1 starts; Ann deals. Commitment …", a
    commitment of nothing: such a hand is dealt by hand and has none."""
    url, _ = server
    created = post(f"{url}/v1/tables", {"deal": "results", "scoring": scoring, "first_dealer": 0,
                                        "seats": [{"name": n} for n in ("Ann", "Bob", "Cat")]})
    tid, admin = created["id"], created["admin_token"]
    post(f"{url}/v1/tables/{tid}/hands", {"result": {
        "decisions": {"0": "play", "1": "drop", "2": "drop"}}}, admin)
    book = get(f"{url}/v1/tables/{tid}/ledger", admin)
    codes = {t["reason"] for t in book.get("transfers", []) + book.get("scores", [])}
    assert codes == ({"ante", "dealer_ante", "pool_award"} if scoring == "pool"
                     else {"won_without_play"})  # the premise: reasons with underscores
    words = {c.replace("_", " ") for c in codes}

    def shown(css: str) -> set[str]:
        return {td.text for td in browser.find_elements(By.CSS_SELECTOR, css)}

    browser.get(f"{url}/tables/{tid}/hands/1/replay#token={admin}&step=1")
    wait_for("step 1", lambda: browser.find_element(By.ID, "step-label").get_attribute(
        "data-step") == "1")
    assert browser.find_element(By.ID, "event").text == "Hand 1 starts; Ann deals."
    browser.find_element(By.TAG_NAME, "body").send_keys(Keys.END)
    wait_for("the settlement", lambda: browser.find_elements(By.CSS_SELECTOR, "#settlement tr td"))
    reasons = shown("#settlement tr td:last-child")
    assert reasons == words, reasons
    if scoring == "pool":
        assert "Pool" in shown("#settlement tr td") and "pool" not in shown("#settlement tr td")
    assert "_" not in browser.find_element(By.ID, "settlement").text
    settle(browser, f"replay-won-without-play-{scoring}")
    browser.get(f"{url}/tables/{tid}#token={admin}")
    wait_for("the last hand", lambda: browser.find_element(By.ID, "last-hand-card").is_displayed())
    assert shown("#last-hand tr td:last-child") == words - {"ante", "dealer ante"}
    browser.get(f"{url}/tables/{tid}/chips#token={admin}")
    wait_for("who paid whom", lambda: browser.find_elements(By.CSS_SELECTOR, "#flows tr td"))
    assert shown("#flows tr td:last-child") == words
    settle(browser, f"chips-won-without-play-{scoring}")


def test_the_admin_replaying_a_hand_in_play_is_told_not_yet_not_failed(server, browser):
    """The admin may replay a hand in play, whose seed is revealed only at its end: the page
    said the record does not verify (no seed revealed, and the deal's hash not recomputable
    without it), as if it had been tampered with."""
    url, _ = server
    created = post(f"{url}/v1/tables", {"first_dealer": 0, "seats": [
        {"name": "Ann"}, {"name": "Bot", "bot": "heuristic"}]})
    tid, admin = created["id"], created["admin_token"]
    assert get(f"{url}/v1/tables/{tid}/hands/1", admin)["complete"] is False
    browser.get(f"{url}/tables/{tid}/hands/1/replay#token={admin}")
    verdict = wait_for("the verdict", lambda: browser.find_element(By.ID, "verdict")
                       .get_attribute("data-ok"))
    assert verdict == "true", browser.find_element(By.ID, "checks").text
    assert browser.find_element(By.ID, "verdict").text.startswith("✔ Verified so far")
    checks = {li.get_attribute("data-check"): li.get_attribute("class")
              for li in browser.find_elements(By.CSS_SELECTOR, "#checks li")}
    assert checks == {"selftest": "ok", "commitment": "na", "deal": "na", "chain": "ok"}
    note = browser.find_element(By.CSS_SELECTOR, "#checks [data-check=chain] .note").text
    assert "before the deal" in note  # its seed, hence its hash, is secret until the end
    settle(browser, "replay-hand-in-play")


def test_chart_labels_are_readable_on_a_phone(server, browser):
    """The charts are SVGs scaled to the screen: on a phone their 11-unit labels (the
    balances and hand numbers along the axes) were drawn about 6 px high, too small to read."""
    url, _ = server
    created = post(f"{url}/v1/tables", {"first_dealer": 0, "seats": [
        {"name": "Ann"}, {"name": "Bot", "bot": "heuristic"}, {"name": "Cat", "bot": "heuristic"}]})
    tid, token = created["id"], created["seats"][0]["token"]
    browser.set_window_size(390, 844)
    try:
        browser.get(f"{url}/tables/{tid}/chips#token={token}")
        wait_for("the chart", lambda: browser.find_elements(By.CSS_SELECTOR,
                                                            "#balance-chart text"))
        heights = browser.execute_script(
            "return [...document.querySelectorAll('#balance-chart text')]"
            ".map((t) => t.getBoundingClientRect().height)")
        assert heights and min(heights) >= 11, heights
        overflow = browser.execute_script(
            "return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0
        settle(browser, "phone-chips-labels")
    finally:
        browser.set_window_size(1100, 1300)


@pytest.mark.parametrize("guide", ["rules", "http", "hash-chain"])
def test_the_guides_fit_a_phone_width_screen(server, browser, guide):
    """The guides' code blocks and long digests (a 64-digit commitment) ran off a phone's
    screen: the page scrolled sideways and lines were cut off (hash-chain: 340 px)."""
    url, _ = server
    browser.set_window_size(390, 844)
    try:
        browser.get(f"{url}/docs/{guide}")
        wait_for("the guide", lambda: browser.find_elements(By.CSS_SELECTOR, "article.guide h1"))
        overflow = browser.execute_script(
            "return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{guide}: {overflow}px wider than the screen"
        settle(browser, f"phone-guide-{guide}")
    finally:
        browser.set_window_size(1100, 1300)


def test_no_void_is_offered_while_a_hand_is_being_played(server, browser):
    """An auto-dealt table starts the next hand at once, and the API voids only the latest
    settled hand of a table that has not started another: the admin view offered "Void hand
    1" during hand 2 anyway, a button that could only be refused."""
    url, _ = server
    created = post(f"{url}/v1/tables", {"first_dealer": 0, "seats": [
        {"name": "Ann"}, {"name": "Bot", "bot": "heuristic"}]})
    tid, token, admin = created["id"], created["seats"][0]["token"], created["admin_token"]
    table = play_first_hand_by_api(url, tid, token)
    assert table["hand"]["number"] == 2 and table["hand"]["phase"] != "complete"
    browser.get(f"{url}/tables/{tid}#token={admin}")
    none = wait_for("the admin tools", lambda: (lambda e: e.is_displayed() and e)(
        browser.find_element(By.ID, "void-none")))
    assert none.text.startswith("Hand 2 is being played")
    assert not browser.find_element(By.ID, "void-button").is_displayed()


def test_the_home_form_offers_no_pool_scoring_for_rounce(server, browser):
    """Rounce is always scored in points (RULES.md §9): with Rounce chosen the form showed
    Pool (chips) as chosen and started a points game anyway (web audit). Now Pool cannot be
    chosen for Rounce, the form says why, and Loo offers both again."""
    from selenium.webdriver.support.ui import Select

    url, _ = server
    browser.get(url + "/")
    wait_for("the home page's form", lambda: browser.find_element(By.ID, "new-game"))
    variant = Select(browser.find_element(By.NAME, "variant"))
    scoring = browser.find_element(By.ID, "scoring-select")
    pool = scoring.find_element(By.CSS_SELECTOR, "option[value=pool]")
    assert Select(scoring).first_selected_option.get_attribute("value") == "pool"
    variant.select_by_value("rounce")
    assert Select(scoring).first_selected_option.get_attribute("value") == "points"
    assert not pool.is_enabled()
    note = browser.find_element(By.ID, "scoring-note")
    assert note.is_displayed() and "always scored in points" in note.text
    settle(browser, "home-rounce")
    variant.select_by_value("loo")
    assert pool.is_enabled() and not note.is_displayed()
    Select(scoring).select_by_value("pool")
    variant.select_by_value("rounce")
    browser.find_element(By.CSS_SELECTOR, "#new-game button[type=submit]").click()
    wait_for("the table page", lambda: "/tables/" in browser.current_url)
    table_id = browser.current_url.rsplit("/", 1)[-1].split("#")[0]
    admin = browser.execute_script("return sessionStorage.getItem(arguments[0])",
                                   f"loo:admin:{table_id}")
    table = get(f"{url}/v1/tables/{table_id}", admin)
    assert (table["variant"], table["scoring"]) == ("rounce", "points")


def test_the_admin_enters_a_recorded_deal_through_the_form_and_the_hand_begins(
        server, browser):
    """A recorded table's deal (API.md Hands: each seat's five tiles and the turn-up) could
    only be sent over the API: the admin's page said "Waiting for the next hand." for ever.
    It is a form, shown to the admin only; a refused deal names its field in place."""
    url, _ = server
    created = post(f"{url}/v1/tables", {"deal": "recorded", "first_dealer": 0, "seats": [
        {"name": "Ann"}, {"name": "Bob"}, {"name": "Cat"}]})
    tid, admin = created["id"], created["admin_token"]
    browser.get(f"{url}/tables/{tid}#token={created['seats'][1]['token']}")
    wait_for("Bob's view", lambda: "you are Bob" in browser.find_element(By.ID, "summary").text)
    assert not browser.find_element(By.ID, "enter-hand-card").is_displayed()
    browser.get("about:blank")
    browser.get(f"{url}/tables/{tid}#token={admin}")
    wait_for("the deal form", lambda: (lambda f: f.is_displayed() and f)(
        browser.find_element(By.ID, "deal-form")))
    assert not browser.find_element(By.ID, "result-form").is_displayed()
    assert browser.find_element(By.ID, "enter-hand-number").text == "1"
    deal = {"0": "6-6 5-5 4-4 3-3 2-2", "1": "6-5 6-4 6-3 6-2 7-1", "2": "5-4 5-3 5-2 5-1 5-0"}
    for seat, tiles in deal.items():
        box = browser.find_element(By.ID, f"deal-hand-{seat}")
        label = browser.execute_script("return arguments[0].closest('label').textContent", box)
        assert ["Ann", "Bob", "Cat"][int(seat)] in label  # each box has its player's label
        box.send_keys(tiles)
    browser.find_element(By.ID, "deal-turn-up").send_keys("1-1" + Keys.ENTER)
    # "7-1" is no tile: the API's problem names the field (hands, seat 1); Bob's box is marked.
    problem = wait_for("the refusal", lambda: (lambda p: p.is_displayed() and p)(
        browser.find_element(By.ID, "deal-problem")))
    assert problem.get_attribute("data-field") == "hands"
    assert problem.text.startswith("Not recorded: Hands (Bob): ") and "'7-1'" in problem.text
    assert browser.find_element(By.ID, "deal-hand-1").get_attribute("aria-invalid") == "true"
    assert browser.find_element(By.ID, "deal-hand-0").get_attribute("aria-invalid") is None
    assert browser.switch_to.active_element.get_attribute("id") == "deal-hand-1"
    settle_after_refusal(browser, "table-recorded-deal-refused")
    retype(browser, "deal-hand-1", "6-5 6-4 6-3 6-2 6-1")
    retype(browser, "deal-turn-up", "6-6" + Keys.ENTER)  # dealt already: a problem, no field
    wait_for("the second refusal", lambda: "appears twice" in browser.find_element(
        By.ID, "deal-problem").text)
    assert browser.find_element(By.ID, "deal-hand-1").get_attribute("aria-invalid") is None
    browser.get_log("browser")
    turn_up = browser.find_element(By.ID, "deal-turn-up")
    turn_up.clear()
    turn_up.send_keys("1-1" + Keys.ENTER)
    wait_for("hand 1 dealt", lambda: "hand 1: deciding" in browser.find_element(
        By.ID, "summary").text)
    assert not browser.find_element(By.ID, "enter-hand-card").is_displayed()
    table = get(f"{url}/v1/tables/{tid}", admin)
    assert table["hand"]["turn_up"] == "1-1"
    assert sorted(table["hand"]["hands"]["1"]) == sorted(["6-5", "6-4", "6-3", "6-2", "6-1"])
    wait_for("the first decision offered", lambda: browser.find_elements(
        By.CSS_SELECTOR, "#moves button.move"))
    settle(browser, "table-recorded-dealt")


def test_s3_a_deal_refused_for_a_tile_entered_twice_marks_both_places(server, browser):
    """RULES §3 (each of the 28 tiles is dealt once): the refusal names the tile and where it
    was entered ("6-6 appears twice in the deal (in seat 0's hand and in seat 1's hand)")
    but has no `field`, and the deal form marked no box at all (the turn-up, named in the
    detail with a seat, was looked for as a seat's box). Both places are marked now."""
    url, _ = server
    created = post(f"{url}/v1/tables", {"deal": "recorded", "first_dealer": 0, "seats": [
        {"name": "Ann"}, {"name": "Bob"}, {"name": "Cat"}]})
    browser.get(f"{url}/tables/{created['id']}#token={created['admin_token']}")
    wait_for("the deal form", lambda: browser.find_element(By.ID, "deal-form").is_displayed())
    deal = {"0": "6-6 6-5 6-4 6-3 6-2", "1": "6-6 6-0 5-5 5-4 5-3", "2": "5-2 5-1 5-0 4-4 4-3"}
    for seat, tiles in deal.items():
        browser.find_element(By.ID, f"deal-hand-{seat}").send_keys(tiles)
    browser.find_element(By.ID, "deal-turn-up").send_keys("3-1" + Keys.ENTER)

    def marked() -> set[str]:
        return {box.get_attribute("id") for box in browser.find_elements(
            By.CSS_SELECTOR, "#deal-form [aria-invalid=true]")}

    wait_for("the refusal", lambda: "appears twice" in browser.find_element(
        By.ID, "deal-problem").text)
    assert marked() == {"deal-hand-0", "deal-hand-1"}
    problem = browser.find_element(By.ID, "deal-problem")
    assert problem.text.startswith("Not recorded: Hands: 6-6 appears twice in the deal (in "
                                   "seat 0's hand and in seat 1's hand)"), problem.text
    settle_after_refusal(browser, "table-recorded-deal-twice")
    retype(browser, "deal-hand-1", "6-1 6-0 5-5 5-4 5-3")
    retype(browser, "deal-turn-up", "6-6" + Keys.ENTER)
    wait_for("the turn-up refused", lambda: "as the turn-up" in browser.find_element(
        By.ID, "deal-problem").text)
    assert marked() == {"deal-hand-0", "deal-turn-up"}
    browser.get_log("browser")  # the 422s themselves: expected here


def settle_after_refusal(driver: Any, name: str) -> None:
    """A screenshot of a refusal shown in place: the refused request (a 422) is the one
    thing the browser may log."""
    driver.save_screenshot(str(ARTEFACTS / f"{name}.png"))
    errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"
              and " 422 " not in e["message"]]
    assert not errors, errors


def test_the_admin_enters_results_hands_through_the_form_and_the_table_settles_them(
        server, browser):
    """A results table's hands (API.md Hands: decisions, tricks, for the pool) had no form
    either. The admin enters each hand by keyboard; a refusal marks the field it names."""
    url, _ = server
    created = post(f"{url}/v1/tables", {"deal": "results", "first_dealer": 0, "seats": [
        {"name": n} for n in ("Ann", "Bob", "Cat", "Dan")]})
    tid, admin = created["id"], created["admin_token"]
    browser.get(f"{url}/tables/{tid}#token={admin}")
    wait_for("the results form", lambda: browser.find_element(By.ID, "result-form")
             .is_displayed())
    assert not browser.find_element(By.ID, "deal-form").is_displayed()
    assert browser.find_element(By.ID, "result-name-0").text == "Ann (dealer)"
    settle(browser, "table-results-form")

    def enter(decisions: dict[int, str], tricks: dict[int, int]) -> None:
        for seat in range(4):
            choice = decisions.get(seat, "")
            browser.find_element(By.CSS_SELECTOR,
                                 f"#result-decision-{seat} option[value='{choice}']").click()
            box = browser.find_element(By.ID, f"result-tricks-{seat}")
            box.clear()
            if seat in tricks:
                box.send_keys(str(tricks[seat]))
        browser.find_element(By.ID, "result-submit").click()

    enter({0: "play", 1: "play", 2: "drop", 3: "play"}, {0: 3, 1: 2, 2: 0, 3: 1})
    problem = wait_for("the refusal", lambda: (lambda p: p.is_displayed() and p)(
        browser.find_element(By.ID, "result-problem")))
    assert problem.text == "Not recorded: Tricks: tricks must add up to 5 (got 6) (rule 6)"
    assert problem.get_attribute("data-field") == "tricks"
    marked = browser.find_elements(By.CSS_SELECTOR, "#result-form [aria-invalid=true]")
    assert sorted(m.get_attribute("id") for m in marked) == [
        f"result-tricks-{s}" for s in range(4)]
    settle_after_refusal(browser, "table-results-refused")
    enter({0: "play", 1: "play", 2: "drop", 3: "play"}, {0: 3, 1: 2, 2: 0, 3: 0})
    wait_for("hand 1 settled", lambda: "hand 1: complete" in browser.find_element(
        By.ID, "summary").text)
    wait_for("hand 2 asked for", lambda: browser.find_element(
        By.ID, "enter-hand-number").text == "2")
    assert not browser.find_elements(By.CSS_SELECTOR, "#result-form [aria-invalid=true]")
    assert browser.find_element(By.ID, "result-name-1").text == "Bob (dealer)"
    record = get(f"{url}/v1/tables/{tid}/hands/1", admin)["hand"]
    assert record["decisions"] == {"0": "play", "1": "play", "2": "drop", "3": "play"}
    assert record["tricks_won"] == {"0": 3, "1": 2, "2": 0, "3": 0}
    # Hand 2 by keyboard alone: the focus waits at the form's first field; everybody but
    # the dealer drops, so no tricks and no dealer's decision are needed.
    assert browser.switch_to.active_element.get_attribute("id") == "result-decision-0"
    for seat in (0, 2, 3):
        field = browser.find_element(By.ID, f"result-decision-{seat}")
        browser.execute_script("arguments[0].focus()", field)
        browser.switch_to.active_element.send_keys("d")  # "Drop"
        assert field.get_attribute("value") == "drop"
    for _ in range(3):  # Dan's tricks, the pool's box, the button
        browser.switch_to.active_element.send_keys(Keys.TAB)
    assert browser.switch_to.active_element.get_attribute("id") == "result-submit"
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    wait_for("hand 2 settled", lambda: "hand 2: complete" in browser.find_element(
        By.ID, "summary").text)
    record = get(f"{url}/v1/tables/{tid}/hands/2", admin)["hand"]
    assert record["tricks_won"]["1"] == 5
    assert browser.find_element(By.ID, "enter-hand-number").text == "3"
    settle(browser, "table-results-entered")
