"""Pages that follow a table live, and the app served on a LAN address, in a real browser
(headless Debian chromium against `loo serve` on embedded SQLite).

The chip-flow page and a hand's replay followed nothing: while a hand was being played they
showed what there was when they were loaded. They now follow the table's SSE feed (sse.js's
followTable, the table page's code); the replay gains steps without moving the viewer.

A club serving the app on http://192.168.x.y is not a secure context: navigator.clipboard
and crypto.randomUUID do not exist there. The Copy buttons did nothing, and every write (a
move, a club, a void: each sends an Idempotency-Key made by crypto.randomUUID) threw before
it was sent. Screenshots under tests/artefacts/web/live-*.png and lan-*.png.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.test_serve_process import serving
from tests.web.test_browser import browser, settle, wait_for  # noqa: F401
from tests.web.test_club_browser import ok

By = pytest.importorskip("selenium.webdriver.common.by").By
Keys = pytest.importorskip("selenium.webdriver.common.keys").Keys

NO_CLIPBOARD = ("Object.defineProperty(Navigator.prototype, 'clipboard', "
                "{ get: () => undefined, configurable: true });")
# What a copy put on the clipboard, as the page's own `copy` event sees it.
WATCH_COPIES = """
window.copies = [];
document.addEventListener('copy', () => {
  const a = document.activeElement;
  const text = a && 'selectionStart' in a && a.selectionStart !== null
    ? a.value.slice(a.selectionStart, a.selectionEnd) : String(window.getSelection());
  window.copies.push(text);
});
"""


def lan_address() -> str | None:
    """This machine's address on its network (no packet is sent), or None."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("10.255.255.255", 9))
            address = s.getsockname()[0]
        except OSError:
            return None
    return None if address.startswith("127.") or address == "0.0.0.0" else address


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Served on every address: 127.0.0.1 (a secure context) and the LAN one (not). Streams
    end after 2 s, so the pages resume theirs with Last-Event-ID again and again."""
    cwd = tmp_path_factory.mktemp("live-serve")
    with serving("--host", "0.0.0.0", cwd=cwd, DATABASE_URL=f"sqlite:///{cwd / 'loo.db'}",
                 LOO_SSE_KEEPALIVE="1", LOO_SSE_MAX_SECONDS="2") as url:
        lan = lan_address()
        yield {"url": url, "lan": url.replace("127.0.0.1", lan) if lan else ""}


def two_humans(base: str) -> dict[str, Any]:
    return ok(base, "POST", "/v1/tables", body={"first_dealer": 0, "seats": [
        {"name": "Ann"}, {"name": "Bob"}]})


def move(base: str, table: dict[str, Any]) -> dict[str, Any]:
    """The first legal move, made over the API with the admin token; the table after it."""
    view = ok(base, "GET", f"/v1/tables/{table['id']}", table["admin_token"])
    body = view["legal_actions"][0] | {"expected_version": view["version"]}
    return ok(base, "POST", f"/v1/tables/{table['id']}/actions", table["admin_token"],
                body)["table"]


def finish_hand_1(base: str, table: dict[str, Any]) -> dict[str, Any]:
    for _ in range(40):
        view = move(base, table)
        if view["hand"]["number"] > 1 or view["hand"]["phase"] == "complete":
            return view
    pytest.fail("hand 1 did not end")


def live_badge(browser: Any) -> Any:  # noqa: F811
    return wait_for("the stream", lambda: (lambda e: e.get_attribute("data-live") == "stream"
                                           and e)(browser.find_element(By.ID, "live")))


def chips_rows(browser: Any) -> dict[str, dict[str, str]]:  # noqa: F811
    return {tr.get_attribute("data-hand"): {
        "label": tr.find_element(By.CSS_SELECTOR, "td").text,
        **{td.get_attribute("data-account"): td.text
           for td in tr.find_elements(By.CSS_SELECTOR, "td[data-account]")}}
        for tr in browser.find_elements(By.CSS_SELECTOR, "#after-each-hand tr[data-hand]")}


def balances_after_hand_1(base: str, table: dict[str, Any]) -> dict[str, str]:
    totals = {"seat:0": 0, "seat:1": 0, "pool": 0}
    ledger = ok(base, "GET", f"/v1/tables/{table['id']}/ledger", table["admin_token"])
    for t in ledger["transfers"]:
        if t["hand"] == 1:
            totals[t["from"]] -= t["amount"]
            totals[t["to"]] += t["amount"]
    return {k: str(v) for k, v in totals.items()}


def test_the_chips_page_follows_a_hand_being_played(server, browser):  # noqa: F811
    base = server["url"]
    table = two_humans(base)
    browser.get(f"{base}/tables/{table['id']}/chips#token={table['admin_token']}")
    row = wait_for("hand 1's stakes", lambda: chips_rows(browser).get("1"))
    assert row["label"] == "1 (in play: its stakes so far)"
    browser.execute_script("window.notReloaded = true")
    after = finish_hand_1(base, table)
    expected = balances_after_hand_1(base, table)
    # The page polls every 15 s while it streams: only the stream brings this in time.
    wait_for("hand 1 settled on the page", lambda: chips_rows(browser).get("1") == {
        "label": "1", **expected}, deadline=6)
    assert browser.execute_script("return window.notReloaded") is True
    live = live_badge(browser)
    assert browser.find_element(By.ID, "chips-app").get_attribute("data-version") \
        == str(after["version"]) or after["hand"]["number"] == 2  # auto-dealt: more may land
    flows = browser.find_elements(By.CSS_SELECTOR, "#flows tr[data-from]")
    assert flows, "the settled hand's flows are listed"
    # The stream ends every 2 s: the page resumes it with Last-Event-ID and still follows.
    wait_for("a resumed stream", lambda: int(live.get_attribute("data-connects") or 0) >= 2,
             deadline=8)
    if after["hand"]["number"] == 2:
        move(base, table)
        wait_for("hand 2's stakes", lambda: chips_rows(browser).get("2"), deadline=6)
    assert live.get_attribute("data-duplicates") == "0"
    browser.set_window_size(1280, 1000)
    settle(browser, "live-chips-1280")
    browser.set_window_size(390, 844)
    try:
        settle(browser, "live-chips-390")
        overflow = browser.execute_script(
            "return document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0
    finally:
        browser.set_window_size(1100, 1300)


def test_the_replay_of_a_hand_in_play_gains_steps_and_keeps_the_viewers_step(
        server, browser):  # noqa: F811
    base = server["url"]
    table = two_humans(base)
    browser.get(f"{base}/tables/{table['id']}/hands/1/replay#token={table['admin_token']}")
    label = wait_for("the step label", lambda: (lambda e: " of " in e.text and e)(
        browser.find_element(By.ID, "step-label")))
    steps = int(label.text.split(" of ")[1])
    browser.find_element(By.ID, "first").click()
    browser.find_element(By.ID, "next").click()
    wait_for("step 1", lambda: label.get_attribute("data-step") == "1")
    assert not any(b.is_displayed() for b in browser.find_elements(By.ID, "new-steps"))
    move(base, table)
    move(base, table)
    grown = wait_for("new steps", lambda: int(label.text.split(" of ")[1]) >= steps + 2
                     and int(label.text.split(" of ")[1]), deadline=6)
    assert label.get_attribute("data-step") == "1"  # the viewer was not moved
    assert label.text == f"Step 1 of {grown}"
    more = wait_for("the new steps button", lambda: (lambda b: b.is_displayed() and b)(
        browser.find_element(By.ID, "new-steps")))
    assert more.get_attribute("data-count") == str(grown - steps)
    assert more.text.startswith(f"{grown - steps} new steps")
    live_badge(browser)
    settle(browser, "live-replay-new-steps")
    # The keyboard reaches it; Enter shows the latest step and the offer goes away.
    more.send_keys(Keys.ENTER)
    wait_for("the latest step", lambda: label.get_attribute("data-step") == str(grown))
    wait_for("no offer", lambda: not browser.find_element(By.ID, "new-steps").is_displayed())
    assert browser.find_element(By.ID, "next").get_attribute("disabled")
    # Played to its end: the steps keep coming and the checks are run again, now in full.
    browser.find_element(By.ID, "first").click()
    wait_for("step 0", lambda: label.get_attribute("data-step") == "0")
    finish_hand_1(base, table)
    final = len(ok(base, "GET", f"/v1/tables/{table['id']}/hands/1",
                     table["admin_token"])["events"])
    wait_for("every step", lambda: label.get_attribute("data-steps") == str(final), deadline=6)
    assert label.get_attribute("data-step") == "0"
    wait_for("the full verdict", lambda: browser.find_element(By.ID, "verdict").text
             == "✔ Verified: fair deal and an unbroken record", deadline=10)
    browser.find_element(By.ID, "last").click()
    wait_for("the settlement", lambda: browser.find_elements(By.CSS_SELECTOR, "#settlement table"))
    browser.set_window_size(1280, 1000)
    settle(browser, "live-replay-1280")
    browser.set_window_size(390, 844)
    try:
        settle(browser, "live-replay-390")
    finally:
        browser.set_window_size(1100, 1300)


def share_and_copy(browser: Any, base: str, table: dict[str, Any]) -> tuple[str, Any]:  # noqa: F811
    browser.get(f"{base}/tables/{table['id']}#token={table['admin_token']}")
    share = wait_for("the share button", lambda: (lambda b: b.is_displayed() and b)(
        browser.find_element(By.ID, "share-spectator")))
    share.click()
    link = wait_for("the link", lambda: browser.find_element(By.ID, "spectator-link")
                    .get_attribute("value"))
    browser.execute_script(WATCH_COPIES)
    browser.find_element(By.ID, "copy-spectator").click()
    status = wait_for("the copy's status", lambda: (lambda s: s.is_displayed() and s)(
        browser.find_element(By.ID, "copy-spectator-status")))
    return link, status


def test_copy_buttons_work_without_the_clipboard_api(server, browser):  # noqa: F811
    """navigator.clipboard made undefined on every new document, as on a LAN address."""
    base = server["url"]
    script = browser.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument",
                                     {"source": NO_CLIPBOARD})
    try:
        table = two_humans(base)
        link, status = share_and_copy(browser, base, table)
        assert browser.execute_script("return navigator.clipboard") is None
        assert status.text == "Copied."
        assert status.get_attribute("data-copied") == "command"
        assert browser.execute_script("return window.copies") == [link]
        settle(browser, "lan-copied")
        # Even execCommand refused: the link is left selected and the page says what to do.
        browser.execute_script("document.execCommand = () => false")
        browser.find_element(By.ID, "copy-spectator").click()
        wait_for("the manual copy", lambda: status.get_attribute("data-copied") == "selected")
        assert status.text in ("Selected: press Ctrl+C to copy it.",
                               "Selected: press ⌘C to copy it.")
        selected = browser.execute_script(
            "const a = document.activeElement;"
            "return [a.id, a.value.slice(a.selectionStart, a.selectionEnd)]")
        assert selected == ["spectator-link", link]
        settle(browser, "lan-press-ctrl-c")
        # The owner token of a new club, shown once, has its Copy button too.
        browser.get(base + "/")
        form = wait_for("the new club form", lambda: browser.find_element(By.ID, "new-club"))
        form.find_element(By.NAME, "name").send_keys("The Bell")
        form.find_element(By.CSS_SELECTOR, "button").click()
        copy = wait_for("the token's copy button", lambda: (lambda b: b.is_displayed() and b)(
            browser.find_element(By.ID, "copy-club-token")))
        browser.execute_script(WATCH_COPIES)
        copy.click()
        wait_for("copied", lambda: browser.find_element(By.ID, "copy-club-token-status").text
                 == "Copied.")
        token = browser.find_element(By.ID, "new-club-token").text
        assert browser.execute_script("return window.copies") == [token]
        settle(browser, "lan-club-token-copied")
    finally:
        browser.execute_cdp_cmd("Page.removeScriptToEvaluateOnNewDocument",
                                {"identifier": script["identifier"]})


def test_a_lan_address_plays_moves_creates_a_club_and_copies(server, browser):  # noqa: F811
    """The app opened on this machine's network address: http, not localhost, so no secure
    context (no navigator.clipboard, no crypto.randomUUID, as for a club's LAN)."""
    lan = server["lan"]
    if not lan:
        pytest.skip("this machine has no network address besides loopback")
    table = two_humans(server["url"])
    turn = ok(server["url"], "GET", f"/v1/tables/{table['id']}", table["admin_token"])
    seat = table["seats"][turn["hand"]["turn"]]["token"]
    browser.get(f"{lan}/tables/{table['id']}#token={seat}")
    summary = wait_for("the table", lambda: (lambda e: e.get_attribute("data-version") and e)(
        browser.find_element(By.ID, "summary")))
    assert browser.execute_script("return window.isSecureContext") is False
    version = summary.get_attribute("data-version")
    button = wait_for("a move", lambda: browser.find_element(
        By.CSS_SELECTOR, "#moves button.move:not([disabled])"))
    button.click()
    wait_for("the move taken", lambda: browser.find_element(By.ID, "summary")
             .get_attribute("data-version") != version)
    assert browser.find_element(By.ID, "problem").is_displayed() is False
    settle(browser, "lan-move")
    # A club from the home page (its request carries an Idempotency-Key too).
    browser.get(lan + "/")
    form = wait_for("the new club form", lambda: browser.find_element(By.ID, "new-club"))
    form.find_element(By.NAME, "name").send_keys("The Swan")
    form.find_element(By.CSS_SELECTOR, "button").click()
    wait_for("the club made", lambda: browser.find_element(By.ID, "new-club-done").is_displayed())
    # The Copy button, with no Clipboard API here.
    link, status = share_and_copy(browser, lan, table)
    assert status.get_attribute("data-copied") in ("command", "selected")
    if status.get_attribute("data-copied") == "command":
        assert browser.execute_script("return window.copies") == [link]
    settle(browser, "lan-share-copied")
    # No WebCrypto here: the replay says it cannot check, not that the record is bad.
    browser.get(f"{lan}/tables/{table['id']}/hands/1/replay#token={table['admin_token']}")
    verdict = wait_for("the verdict", lambda: browser.find_element(By.ID, "verdict")
                       .get_attribute("data-ok"))
    assert verdict == "unchecked", browser.find_element(By.ID, "verdict").text
    assert not browser.find_elements(By.CSS_SELECTOR, "#checks li.bad")
    settle(browser, "lan-replay-unchecked")
