"""A club organiser's tools in a real browser, without writing software: a club table made
from the page (API.md Club tables: members on the seats, the game, the options, each seat's
link shown once), the club's tokens issued and revoked (API.md Clubs, tokens, members), and
the club's feed followed live in words (API.md Feeds). Headless Debian chromium against
`loo serve` on embedded SQLite; screenshots at desktop and phone widths under
tests/artefacts/web/club-tools-*.png; no page may log a console error.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.web.test_browser import browser, settle, wait_for  # noqa: F401
from tests.web.test_club_browser import call, club, members, ok, open_club_page, season, server  # noqa: F401

By = pytest.importorskip("selenium.webdriver.common.by").By
PHONE, DESKTOP = (390, 844), (1100, 1300)


def shown(browser: Any, element_id: str) -> Any:  # noqa: F811
    return wait_for(element_id, lambda: (lambda e: e.is_displayed() and e)(
        browser.find_element(By.ID, element_id)))


def fits(browser: Any) -> None:  # noqa: F811
    overflow = browser.execute_script(
        "return document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the page is {overflow}px wider than the screen"


def choose(browser: Any, select_id: str, value: str) -> None:  # noqa: F811
    browser.find_element(By.CSS_SELECTOR, f"#{select_id} option[value='{value}']").click()


def test_a_club_table_is_made_from_the_page_with_members_seated_and_each_link_shown_once(
        club, members, season, browser):  # noqa: F811
    """From the club's tables: New table; three seats (two members and a guest), Loo for
    chips with a capped loo penalty and a turn timer, in the season. The API has the table
    as chosen; each person's link (shown once) opens that seat; the club lists it."""
    base, cid, token = club["url"], club["id"], club["token"]
    open_club_page(browser, club, "/tables")
    shown(browser, "new-table-link").click()
    form = wait_for("the form", lambda: browser.find_element(
        By.CSS_SELECTOR, "#new-table[data-ready]"))
    settle(browser, "club-tools-new-table")
    choose(browser, "nt-players", "3")
    assert not browser.find_element(By.CSS_SELECTOR, ".seat-pick[data-seat='3']").is_displayed()
    choose(browser, "nt-who-0", members[3])  # Dan
    # Dan sits at seat 1: seat 2 is not offered him.
    assert not browser.find_element(
        By.CSS_SELECTOR, f"#nt-who-1 option[value='{members[3]}']").is_enabled()
    choose(browser, "nt-who-1", members[0])  # Ann
    choose(browser, "nt-who-2", "")  # a guest
    browser.find_element(By.ID, "nt-name-2").send_keys("Gus the guest")
    choose(browser, "nt-season", season)
    choose(browser, "nt-first-dealer", "1")
    browser.find_element(By.CSS_SELECTOR, "#nt-more summary").click()
    choose(browser, "nt-penalty", "capped")
    shown(browser, "nt-multiplier").clear()
    browser.find_element(By.ID, "nt-multiplier").send_keys("20")
    browser.find_element(By.ID, "nt-turn-seconds").send_keys("90")
    settle(browser, "club-tools-new-table-filled")
    form.find_element(By.ID, "nt-submit").click()
    done = shown(browser, "nt-done")
    tid = done.get_attribute("data-table")
    listed = {t["id"]: t for t in ok(base, "GET", f"/v1/clubs/{cid}/tables", token)["items"]}
    assert [(s["name"], s["member"]) for s in listed[tid]["seats"]] == [
        ("Dan", members[3]), ("Ann", members[0]), ("Gus the guest", None)]
    assert listed[tid]["season"] == season
    table = ok(base, "GET", f"/v1/tables/{tid}", token)
    assert table["options"]["loo_penalty"] == {"mode": "capped", "multiplier": 20}
    assert table["options"]["turn_seconds"] == 90 and table["variant"] == "loo"
    assert table["hand"]["dealer"] == 1
    links = [browser.find_element(By.ID, f"nt-link-{s}").get_attribute("value") for s in range(3)]
    assert all(link.startswith(f"{base}/tables/{tid}#token=") for link in links)
    admin = browser.find_element(By.ID, "nt-admin-token").get_attribute("textContent")
    assert ok(base, "GET", f"/v1/tables/{tid}", admin)["viewer"]["role"] == "admin"
    settle(browser, "club-tools-new-table-done")
    browser.set_window_size(*PHONE)
    try:
        fits(browser)
        browser.execute_script("document.getElementById('nt-seat-links').scrollIntoView()")
        settle(browser, "club-tools-phone-new-table-done")
    finally:
        browser.set_window_size(*DESKTOP)
    # Ann's link opens Ann's seat.
    browser.get(links[1])
    wait_for("Ann's seat", lambda: "you are Ann" in browser.find_element(By.ID, "summary").text)
    # The club's tables list it, and its way in opens the admin view with the club's token.
    open_club_page(browser, club, "/tables")
    row = wait_for("the table listed", lambda: browser.find_element(
        By.CSS_SELECTOR, f"#tables tr[data-table='{tid}']"))
    assert "Gus the guest" in row.text
    row.find_element(By.LINK_TEXT, "Admin view").click()
    wait_for("the admin view", lambda: "viewing as admin" in browser.find_element(
        By.ID, "summary").text)


def test_a_refused_table_names_the_box_to_mend_and_the_form_fits_a_phone(
        club, members, browser):  # noqa: F811
    """A refusal is shown in place, its box marked: a guest seat left without a name (told
    before asking), and stakes the API refuses (both antes 0: rule 8.1), at a phone's width."""
    browser.set_window_size(*PHONE)
    try:
        open_club_page(browser, club, "/tables/new")
        form = wait_for("the form", lambda: browser.find_element(
            By.CSS_SELECTOR, "#new-table[data-ready]"))
        fits(browser)
        settle(browser, "club-tools-phone-new-table")
        choose(browser, "nt-variant", "rounce")
        assert browser.find_element(By.ID, "nt-scoring").get_attribute("value") == "points"
        assert browser.find_element(By.ID, "nt-first-dealer").get_attribute("value") == "lots"
        choose(browser, "nt-variant", "loo")
        choose(browser, "nt-scoring", "pool")
        choose(browser, "nt-who-3", "")  # a guest, and no name typed
        form.find_element(By.ID, "nt-submit").click()
        problem = shown(browser, "nt-problem")
        assert problem.text == ("No table created: seat 4 is a guest: type the guest's name "
                                "(or choose a member)")
        assert browser.find_element(By.ID, "nt-name-3").get_attribute("aria-invalid") == "true"
        browser.find_element(By.ID, "nt-name-3").send_keys("Gwen")
        browser.find_element(By.CSS_SELECTOR, "#nt-more summary").click()
        for box in ("nt-ante", "nt-dealer-ante"):
            shown(browser, box).clear()
            browser.find_element(By.ID, box).send_keys("0")
        form.find_element(By.ID, "nt-submit").click()
        wait_for("the API's refusal", lambda: browser.find_element(
            By.ID, "nt-problem").get_attribute("data-code") == "invalid_option")
        assert "ante and dealer_ante cannot both be 0" in browser.find_element(
            By.ID, "nt-problem").text
        assert browser.find_element(By.ID, "nt-ante").get_attribute("aria-invalid") == "true"
        assert browser.find_element(By.ID, "nt-name-3").get_attribute("aria-invalid") is None
        fits(browser)
        browser.execute_script("document.getElementById('nt-problem').scrollIntoView()")
        browser.get_log("browser")  # the 422 itself is logged by the browser: expected here
        browser.save_screenshot("tests/artefacts/web/club-tools-phone-new-table-refused.png")
    finally:
        browser.set_window_size(*DESKTOP)


def revoke(browser: Any, button: Any) -> None:  # noqa: F811
    """Click a Revoke button and confirm in the dialog."""
    button.click()
    shown(browser, "revoke-dialog")
    browser.find_element(By.ID, "revoke-confirm").click()


def test_the_clubs_tokens_are_issued_once_listed_and_revoked_from_the_page(
        club, browser):  # noqa: F811
    """API.md Clubs, tokens: an owner issues a scorer token from the page, sees its secret
    once (it opens the club as a scorer), finds it listed without its secret, and revokes it
    (it opens nothing after). The last owner token is refused in place (409)."""
    base, cid, token = club["url"], club["id"], club["token"]
    open_club_page(browser, club, "/tokens")
    form = shown(browser, "issue-token")
    tab = browser.find_element(By.CSS_SELECTOR, f".tabs a[href='/clubs/{cid}/tokens']")
    assert tab.is_displayed() and tab.get_attribute("aria-current") == "page"
    choose(browser, "token-role", "scorer")
    assert "enters and corrects hands" in browser.find_element(By.ID, "role-note").text
    browser.find_element(By.ID, "token-label").send_keys("Thursday <scorer>")
    form.find_element(By.ID, "issue-button").click()
    issued = shown(browser, "issued")
    tid = issued.get_attribute("data-token")
    secret = browser.find_element(By.ID, "issued-token").text
    assert browser.find_element(By.ID, "issued-club").text == cid
    assert ok(base, "GET", f"/v1/clubs/{cid}", secret)["role"] == "scorer"
    row = wait_for("the token listed", lambda: browser.find_element(
        By.CSS_SELECTOR, f"#tokens tr[data-token='{tid}']"))
    assert "Thursday <scorer>" in row.text and "scorer" in row.text
    assert secret not in browser.find_element(By.ID, "tokens").text
    settle(browser, "club-tools-tokens")
    browser.set_window_size(*PHONE)
    try:
        fits(browser)
        browser.execute_script("document.getElementById('tokens').scrollIntoView()")
        settle(browser, "club-tools-phone-tokens")
    finally:
        browser.set_window_size(*DESKTOP)
    revoke(browser, row.find_element(By.CSS_SELECTOR, "button.revoke"))
    wait_for("the token gone", lambda: not browser.find_elements(
        By.CSS_SELECTOR, f"#tokens tr[data-token='{tid}']"))
    assert call(base, "GET", f"/v1/clubs/{cid}/members", secret)[0] == 401
    assert not browser.find_element(By.ID, "issued").is_displayed()  # its secret gone too
    # The club's only owner token: refused, the reason in the dialog.
    owners = browser.find_elements(By.CSS_SELECTOR, "#tokens tr[data-role='owner'] button.revoke")
    assert len(owners) == 1
    revoke(browser, owners[0])
    problem = shown(browser, "revoke-problem")
    assert problem.get_attribute("data-code") == "last_owner_token"
    assert problem.text.startswith("Not revoked: ")
    browser.save_screenshot("tests/artefacts/web/club-tools-tokens-last-owner.png")
    browser.get_log("browser")  # the 409 itself is logged by the browser: expected here
    browser.find_element(By.ID, "revoke-cancel").click()
    assert ok(base, "GET", f"/v1/clubs/{cid}", token)["role"] == "owner"


def test_a_tables_spectator_link_is_shared_and_revoked_from_the_tokens_page(
        club, members, browser):  # noqa: F811
    """API.md Spectators, from the club's page: a spectator link for one of the club's
    tables, shown once, opens the table read-only; revoked, it opens nothing."""
    base, cid, token = club["url"], club["id"], club["token"]
    made = ok(base, "POST", f"/v1/clubs/{cid}/tables", token, {
        "deal": "results", "first_dealer": 0, "seats": [{"member": m} for m in members[:2]]})
    open_club_page(browser, club, "/tokens")
    wait_for("the table offered", lambda: browser.find_element(
        By.CSS_SELECTOR, f"#spectator-table option[value='{made['id']}']")).click()
    wait_for("its links read", lambda: browser.find_element(By.ID, "spectators")
             .get_attribute("data-table") == made["id"])
    browser.find_element(By.ID, "spectator-label").send_keys("bar screen")
    browser.find_element(By.ID, "spectator-button").click()
    link = wait_for("the link", lambda: browser.find_element(By.ID, "spectator-link")
                    .get_attribute("value"))
    item = wait_for("the link listed", lambda: browser.find_element(
        By.CSS_SELECTOR, "#spectators li"))
    assert "bar screen" in item.text
    settle(browser, "club-tools-spectator-link")
    secret = link.split("#token=")[1]
    assert ok(base, "GET", f"/v1/tables/{made['id']}", secret)["viewer"]["role"] == "spectator"
    revoke(browser, item.find_element(By.CSS_SELECTOR, "button.revoke"))
    wait_for("no link left", lambda: browser.find_element(By.ID, "spectators")
             .get_attribute("data-count") == "0")
    assert not browser.find_element(By.ID, "spectator-made").is_displayed()
    assert call(base, "GET", f"/v1/tables/{made['id']}", secret)[0] == 401


def test_a_scorer_is_offered_no_tokens(club, browser):  # noqa: F811
    base, cid, token = club["url"], club["id"], club["token"]
    scorer = ok(base, "POST", f"/v1/clubs/{cid}/tokens", token,
                {"role": "scorer", "label": "no tokens for me"})["token"]
    browser.get(f"{base}/docs/rules")
    browser.execute_script("sessionStorage.setItem(arguments[0], arguments[1])",
                           f"loo:club:{cid}", scorer)
    browser.get(f"{base}/clubs/{cid}/tokens")
    shown(browser, "not-owner")
    assert not browser.find_element(By.ID, "tokens-app").is_displayed()
    assert not browser.find_element(
        By.CSS_SELECTOR, f".tabs a[href='/clubs/{cid}/tokens']").is_displayed()
    settle(browser, "club-tools-tokens-scorer")


CODE = re.compile(r"\b[a-z]+_[a-z_]+\b")  # an event type or reason as the API spells it


def feed_texts(browser: Any) -> list[str]:  # noqa: F811
    """The shown items' texts, read in one script: the page adds and drops items as events
    come (an element read one by one could be gone by the time it is read)."""
    return browser.execute_script(
        "return [...document.querySelectorAll('#feed li')]"
        ".filter((li) => li.offsetParent !== null).map((li) => li.innerText)")


def test_the_club_feed_tells_what_happens_live_in_words(club, members, browser):  # noqa: F811
    """API.md Feeds: the club's events, followed live (SSE), each a sentence: a member who
    joins, a table set up, a hand settled (linked to its replay), the moves behind 'every
    move'; no event type or reason as the API spells it. Left and come back to, the page
    follows again from where it was: what happened meanwhile is shown once."""
    base, cid, token = club["url"], club["id"], club["token"]
    open_club_page(browser, club, "/feed")
    live = wait_for("the club's stream", lambda: (lambda e: e.get_attribute("data-live")
                                                  == "stream" and e)(
        browser.find_element(By.ID, "live")))
    # From before the page was opened.
    assert any(t.endswith("Ann joined the club.") for t in feed_texts(browser))
    ok(base, "POST", f"/v1/clubs/{cid}/members", token, {"name": "Fern"})
    wait_for("Fern", lambda: "Fern joined the club." in " ".join(feed_texts(browser)),
             deadline=5)
    made = ok(base, "POST", f"/v1/clubs/{cid}/tables", token, {
        "deal": "results", "first_dealer": 0, "seats": [{"member": m} for m in members[:2]]})
    ok(base, "POST", f"/v1/tables/{made['id']}/hands", token, {"result": {
        "decisions": {"0": "play", "1": "play"}, "tricks": {"0": 3, "1": 2}}})
    settled = wait_for("the hand settled", lambda: browser.find_element(
        By.CSS_SELECTOR, f"#feed li[data-type=hand_settled][data-stream='{made['id']}']"),
        deadline=5)
    assert "Hand 1 settled. Chips: Ann " in settled.text and "the pool holds" in settled.text
    where = settled.find_element(By.CSS_SELECTOR, "a.feed-where")
    assert where.text == "Ann, <script>"
    assert where.get_attribute("href") == f"{base}/tables/{made['id']}?club={cid}"
    assert settled.find_element(By.CSS_SELECTOR, "a.feed-replay").get_attribute("href") == (
        f"{base}/tables/{made['id']}/hands/1/replay?club={cid}")
    assert any(t.endswith("A new table: Loo for chips.") for t in feed_texts(browser))
    assert not browser.find_elements(By.CSS_SELECTOR, "#feed li[data-type=tricks_paid]")[0] \
        .is_displayed()
    browser.find_element(By.ID, "every-move").click()
    texts = feed_texts(browser)
    assert any("each trick was worth" in t for t in texts)
    assert not [t for t in texts if CODE.search(t)], [t for t in texts if CODE.search(t)]
    # Newest first.
    positions = [int(li.get_attribute("data-position"))
                 for li in browser.find_elements(By.CSS_SELECTOR, "#feed li")]
    assert positions == sorted(positions, reverse=True)
    settle(browser, "club-tools-feed")
    browser.set_window_size(*PHONE)
    try:
        fits(browser)
        settle(browser, "club-tools-phone-feed")
    finally:
        browser.set_window_size(*DESKTOP)
    # Away and back: the stream was closed while away and resumes where it was.
    browser.get(f"{base}/docs/rules")
    ok(base, "POST", f"/v1/clubs/{cid}/members", token, {"name": "Gil"})
    browser.back()
    wait_for("Gil, once", lambda: [t for t in feed_texts(browser)
                                   if t.endswith("Gil joined the club.")], deadline=5)
    assert len([t for t in feed_texts(browser) if t.endswith("Gil joined the club.")]) == 1
    live = browser.find_element(By.ID, "live")
    assert live.get_attribute("data-duplicates") in ("0", None)


def test_the_club_feed_shows_the_clubs_latest_events_however_long_ago(
        club, members, browser):  # noqa: F811
    """API.md Feeds (?latest=): the page read back over the service's last 2000 positions
    only, so a club quiet while another table played 2000 events showed nothing of its own
    (not even who joined). It reads the club's latest events, however far back: all of this
    club's, and nothing to show before them ('Show earlier events' hidden)."""
    base = club["url"]
    busy = ok(base, "POST", "/v1/tables", body={
        "seats": [{"name": f"Bot {i}", "bot": "random"} for i in range(4)],
        "options": {"max_hands": 80}})
    wait_for("2000 events elsewhere", lambda: ok(
        base, "GET", f"/v1/tables/{busy['id']}", busy["admin_token"])["version"] > 2100,
        deadline=60)
    open_club_page(browser, club, "/feed")
    wait_for("the feed read", lambda: browser.find_element(By.ID, "feed")
             .get_attribute("data-ready"))
    texts = feed_texts(browser)
    assert any(t.endswith("Ann joined the club.") for t in texts), texts
    assert texts[-1].endswith("was founded."), texts  # the club's first event, last
    assert not browser.find_element(By.ID, "feed-earlier").is_displayed()
    assert not browser.find_element(By.ID, "feed-empty").is_displayed()
    assert not [t for t in texts if "Bot 0" in t]  # nothing of the table elsewhere
    settle(browser, "club-tools-feed-latest")


def test_the_club_feed_reads_further_back_on_demand(club, members, browser):  # noqa: F811
    """A club with more events than the page reads at first (a club table of bots played
    900 events after its members joined): its latest are shown, 'Show earlier events' reads
    back (?before=) page by page to who joined, each event once, newest first throughout."""
    base, cid, token = club["url"], club["id"], club["token"]
    bots = ok(base, "POST", f"/v1/clubs/{cid}/tables", token, {
        "first_dealer": 0, "seats": [{"name": f"Robo {i}", "bot": "random"} for i in range(4)],
        "options": {"max_hands": 80}})
    wait_for("900 events in the club", lambda: ok(
        base, "GET", f"/v1/tables/{bots['id']}", token)["version"] > 900, deadline=60)
    open_club_page(browser, club, "/feed")
    wait_for("the feed read", lambda: browser.find_element(By.ID, "feed")
             .get_attribute("data-ready"))
    assert not any("joined the club" in t for t in feed_texts(browser))
    assert any("settled" in t for t in feed_texts(browser))
    earlier = browser.find_element(By.ID, "feed-earlier")
    for _ in range(20):
        if any(t.endswith("Ann joined the club.") for t in feed_texts(browser)):
            break
        assert earlier.is_displayed()
        count = len(browser.find_elements(By.CSS_SELECTOR, "#feed li"))
        earlier.click()
        wait_for("a page further back", lambda c=count: len(browser.find_elements(
            By.CSS_SELECTOR, "#feed li")) > c and earlier.is_enabled())
    assert any(t.endswith("Ann joined the club.") for t in feed_texts(browser))
    positions = browser.execute_script(
        "return [...document.querySelectorAll('#feed li')].map((li) => +li.dataset.position)")
    assert positions == sorted(set(positions), reverse=True)  # each once, newest first
    browser.execute_script("[...document.querySelectorAll('#feed li.notable')].pop()"
                           ".scrollIntoView({block: 'end'})")  # where it reached: who joined
    settle(browser, "club-tools-feed-earlier")
