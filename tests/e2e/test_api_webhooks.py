"""Webhooks (API.md "Webhooks (Standard Webhooks)") on SQLite and PostgreSQL, delivered by
the embedded default's in-process runner to a real HTTP receiver on a spare port: signed,
every matching event once in order, retried after the receiver was down, filtered, stopped
by DELETE, logged; URLs to private ranges refused (registration and delivery)."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from ledger.app import webhooks as wh
from tests.e2e.club import Club

DEADLINE = 60.0

# Standard Webhooks' published test vector (standard-webhooks/standard-webhooks,
# libraries/python/tests/test_webhooks.py test_sign_function and go webhook_test.go).
VECTOR_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
VECTOR_ID = "msg_p5jXN8AQM9LWM0D4loKWxJek"
VECTOR_TS = 1614265330
VECTOR_BODY = b'{"test": 2432232314}'
VECTOR_SIG = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
VECTOR_WRONG = ("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA=",
                "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=", "v1,")


def test_signatures_match_the_standard_webhooks_test_vectors() -> None:
    assert wh.sign(VECTOR_SECRET, VECTOR_ID, VECTOR_TS, VECTOR_BODY) == VECTOR_SIG
    # The secret without its prefix is the same key.
    assert wh.sign(VECTOR_SECRET.removeprefix("whsec_"), VECTOR_ID, VECTOR_TS,
                   VECTOR_BODY) == VECTOR_SIG
    headers = {"webhook-id": VECTOR_ID, "webhook-timestamp": str(VECTOR_TS)}
    assert wh.verify(VECTOR_SECRET, headers | {"webhook-signature": VECTOR_SIG}, VECTOR_BODY)
    # Several signatures, space-separated: one valid is enough.
    both = f"{VECTOR_WRONG[1]} {VECTOR_SIG}"
    assert wh.verify(VECTOR_SECRET, headers | {"webhook-signature": both}, VECTOR_BODY)
    for wrong in VECTOR_WRONG:
        assert not wh.verify(VECTOR_SECRET, headers | {"webhook-signature": wrong}, VECTOR_BODY)
    assert not wh.verify(VECTOR_SECRET, headers | {"webhook-signature": VECTOR_SIG},
                         VECTOR_BODY + b" ")


class Receiver:
    """A club's webhook endpoint: records what arrives; can fail (500) or be down, or
    answer as `answer(doc)` says ((status, headers), or None for the usual 204). `tried`
    keeps every POST, answered 2xx or not: (monotonic time of arrival, headers, body,
    status)."""

    def __init__(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.cond = threading.Condition()
        self.failing = False
        self.delay = 0.0  # seconds each answer takes
        self.answer: Any = None
        self.tried: list[tuple[float, dict[str, str], bytes, int]] = []
        self.server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def start(self) -> Receiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                arrived = time.monotonic()
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = {k.lower(): v for k, v in self.headers.items()}
                time.sleep(receiver.delay)
                status, extra = 500 if receiver.failing else 204, {}
                if not receiver.failing and receiver.answer is not None:
                    status, extra = receiver.answer(json.loads(body)) or (204, {})
                with receiver.cond:
                    receiver.tried.append((arrived, headers, body, status))
                    receiver.cond.notify_all()
                if status != 204:
                    self.send_response(status)
                    for name, value in extra.items():
                        self.send_header(name, value)
                    self.end_headers()
                    return
                with receiver.cond:
                    receiver.got.append((headers, body))
                    receiver.cond.notify_all()
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def wait_for(self, pred: Any, what: str) -> None:
        deadline = time.monotonic() + DEADLINE
        with self.cond:
            while not pred(self.got):
                left = deadline - time.monotonic()
                assert left > 0, f"timed out waiting for {what}: got {len(self.got)}"
                self.cond.wait(min(left, 0.2))

    def docs(self) -> list[dict[str, Any]]:
        return [json.loads(b) for _, b in self.got]


@pytest.fixture
def receiver() -> Any:
    r = Receiver().start()
    yield r
    r.stop()


@pytest.fixture
def private_ok(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOO_WEBHOOK_ALLOW_PRIVATE", "1")
    monkeypatch.setenv("LOO_WEBHOOK_RETRY_BASE", "0.2")
    monkeypatch.setenv("LOO_WEBHOOK_RETRY_MAX", "1")
    monkeypatch.setenv("LOO_WEBHOOK_TIMEOUT", "5")


class Owner:
    def __init__(self, club: Club) -> None:
        self.c = club.c
        r = self.c.post("/v1/clubs", json={"name": "Hooks"})
        assert r.status_code == 201
        self.id, self.token = r.get_json()["id"], r.get_json()["token"]

    def h(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.token}"}

    def hook(self, url: str, events: list[str], status: int = 201) -> dict[str, Any]:
        r = self.c.post(f"/v1/clubs/{self.id}/webhooks", json={"url": url, "events": events},
                        headers=self.h())
        assert r.status_code == status, r.get_json()
        return r.get_json()

    def table(self, bots: bool = False, **options: Any) -> dict[str, Any]:
        seats = [{"name": n, "bot": "heuristic" if bots else None}
                 for n in ("Ann", "Bob", "Cat", "Dan")]
        r = self.c.post(f"/v1/clubs/{self.id}/tables", headers=self.h(), json={
            "variant": "loo", "scoring": "pool", "first_dealer": 0, "deal": "shuffled",
            "seats": seats, "options": options})
        assert r.status_code == 201, r.get_json()
        return r.get_json()

    def play(self, table: dict[str, Any], moves: int) -> None:
        for _ in range(moves):
            view = self.c.get(f"/v1/tables/{table['id']}", headers=self.h()).get_json()
            if not view["legal_actions"]:
                return
            r = self.c.post(f"/v1/tables/{table['id']}/actions", headers=self.h(),
                            json=view["legal_actions"][0])
            assert r.status_code == 200, r.get_json()

    def feed(self) -> list[dict[str, Any]]:
        out, after = [], 0
        while True:
            page = self.c.get(f"/v1/clubs/{self.id}/events?after={after}&limit=500",
                              headers=self.h()).get_json()
            if not page["events"]:
                return out
            out += page["events"]
            after = page["next"]

    def deliveries(self, wid: str) -> list[dict[str, Any]]:
        out, cursor = [], ""
        while True:
            r = self.c.get(f"/v1/clubs/{self.id}/webhooks/{wid}/deliveries?limit=100{cursor}",
                           headers=self.h())
            assert r.status_code == 200, r.get_json()
            out += r.get_json()["items"]
            if r.get_json()["next"] is None:
                return out
            cursor = f"&cursor={r.get_json()['next']}"


def _log_of(owner: Owner, wid: str, n: int) -> list[dict[str, Any]]:
    """The delivery log once it holds n attempts (it is written as each answer comes)."""
    deadline = time.monotonic() + DEADLINE
    while len(log := owner.deliveries(wid)) < n:
        assert time.monotonic() < deadline, len(log)
        time.sleep(0.05)
    return log


def _added_at(owner: Owner, wid: str) -> int:
    return next(e["position"] for e in owner.feed()
                if e["type"] == "webhook_added" and e["data"]["id"] == wid)


def test_every_event_arrives_once_in_order_signed(club: Club, receiver: Receiver,
                                                  private_ok: None) -> None:
    owner = Owner(club)
    made = owner.hook(receiver.url, ["*"])
    assert made["secret"].startswith("whsec_") and len(wh.secret_bytes(made["secret"])) >= 24
    assert "secret" not in str(club.c.get(f"/v1/clubs/{owner.id}/webhooks",
                                          headers=owner.h()).get_json())
    table = owner.table()
    owner.play(table, 40)
    since = _added_at(owner, made["id"])
    expected = [e for e in owner.feed() if e["position"] > since]
    receiver.wait_for(lambda got: len(got) >= len(expected), "every event")
    docs = receiver.docs()
    assert [d["position"] for d in docs] == [e["position"] for e in expected]
    for (headers, body), doc in zip(receiver.got, docs, strict=True):
        assert wh.verify(made["secret"], headers, body)
        assert headers["webhook-id"] == f"msg_{made['id']}_{doc['position']}"
        assert abs(int(headers["webhook-timestamp"]) - time.time()) < 120
    # The body is the club feed's event (spectator view, stream); settled hands carry their
    # checkpoint.
    assert {d["stream"] for d in docs} == {"club", table["id"]}
    log = _log_of(owner, made["id"], len(docs))
    assert [(x["event"], x["status"], x["attempt"]) for x in log] == [
        (d["type"], 204, 1) for d in docs]
    assert all(isinstance(x["duration_ms"], int) and x["at"] for x in log)


def test_a_receiver_down_then_up_gets_everything_in_order_after_retries(
        club: Club, receiver: Receiver, private_ok: None) -> None:
    owner = Owner(club)
    made = owner.hook(receiver.url, ["*"])
    receiver.failing = True  # answers 500
    table = owner.table()
    deadline = time.monotonic() + DEADLINE
    while not any(x["status"] == 500 for x in owner.deliveries(made["id"])):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    receiver.stop()  # then down: connection refused
    owner.play(table, 10)
    while not any(x["status"] == "refused" for x in owner.deliveries(made["id"])):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    receiver.failing = False
    receiver.start()  # up again on the same port
    since = _added_at(owner, made["id"])
    expected = [e["position"] for e in owner.feed() if e["position"] > since]
    receiver.wait_for(lambda got: len(got) >= len(expected), "the backlog")
    assert [d["position"] for d in receiver.docs()] == expected  # in order, none lost
    log = _log_of(owner, made["id"], len(expected))
    first = [x for x in log if x["position"] == expected[0]]
    assert [x["attempt"] for x in first] == list(range(1, len(first) + 1))
    assert first[-1]["status"] == 204 and len(first) >= 3
    assert len({x["message_id"] for x in first}) == 1  # one webhook-id for every retry
    assert receiver.got[0][0]["webhook-id"] == first[0]["message_id"]


def test_an_event_filter_and_delete(club: Club, receiver: Receiver, private_ok: None) -> None:
    owner = Owner(club)
    witness = Receiver().start()
    try:
        settled = owner.hook(receiver.url, ["hand_settled", "game_won"])
        everything = owner.hook(witness.url, ["*"])
        owner.table(bots=True, max_hands=2)  # plays two hands at once
        witness.wait_for(lambda got: sum(json.loads(b)["type"] == "table_closed"
                                         for _, b in got) == 1, "the whole table")
        receiver.wait_for(lambda got: len(got) >= 2, "the settled hands")
        wanted = [d for d in witness.docs() if d["type"] in ("hand_settled", "game_won")]
        assert [d["position"] for d in receiver.docs()] == [d["position"] for d in wanted]
        assert any("checkpoint" in d for d in receiver.docs())
        # DELETE: nothing more for that endpoint, while the other keeps getting events.
        r = club.c.delete(f"/v1/clubs/{owner.id}/webhooks/{settled['id']}", headers=owner.h())
        assert r.status_code == 204
        before = len(receiver.got)
        n = len(witness.got)
        owner.table(bots=True, max_hands=1)
        witness.wait_for(lambda got: sum(json.loads(b)["type"] == "table_closed"
                                         for _, b in got) == 2, "the second table")
        assert len(witness.got) > n and len(receiver.got) == before
        assert club.c.get(f"/v1/clubs/{owner.id}/webhooks/{settled['id']}",
                          headers=owner.h()).status_code == 404
        listed = club.c.get(f"/v1/clubs/{owner.id}/webhooks", headers=owner.h()).get_json()
        assert [w["id"] for w in listed["items"]] == [everything["id"]]
    finally:
        witness.stop()


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:9/hook", "http://10.1.2.3/hook", "http://169.254.169.254/latest",
    "http://[::1]:8000/", "http://localhost:8000/hook", "http://192.168.0.1/",
    "http://0.0.0.0/", "http://[::ffff:127.0.0.1]/", "http://224.0.0.1/",
    # IPv6 forms that carry a private IPv4 address: 6to4 of 127.0.0.1 and of 10.0.0.1
    # passed (ipaddress does not call 2002::/16 private), NAT64 of 127.0.0.1
    "http://[2002:7f00:1::]/", "http://[2002:a00:1::5]/", "http://[64:ff9b::7f00:1]/"])
def test_urls_to_private_ranges_are_refused(club: Club, url: str,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOO_WEBHOOK_ALLOW_PRIVATE", raising=False)
    owner = Owner(club)
    problem = owner.hook(url, ["*"], status=422)
    assert problem["code"] == "private_url" and problem["status"] == 422
    assert club.c.get(f"/v1/clubs/{owner.id}/webhooks", headers=owner.h()).get_json()[
        "items"] == []


def test_bad_webhook_requests_are_problems(club: Club) -> None:
    owner = Owner(club)
    for body, code in (({"url": "ftp://example.org/x", "events": ["*"]}, "invalid_url"),
                       ({"url": "http://user:pw@example.org/", "events": ["*"]}, "invalid_url"),
                       ({"url": "not a url", "events": ["*"]}, "invalid_url"),
                       ({"url": "http://[zz/", "events": ["*"]}, "invalid_url"),
                       ({"url": "https://example.invalid/x", "events": ["*"]},
                        "unresolvable_url"),
                       ({"url": "https://93.184.215.14/x", "events": ["nope"]},
                        "invalid_events"),
                       ({"url": "https://93.184.215.14/x", "events": ["*", "hand_settled"]},
                        "invalid_events"),
                       ({"url": "https://93.184.215.14/x", "events": []}, "validation_error"),
                       ({"url": 3, "events": ["*"]}, "validation_error")):
        r = club.c.post(f"/v1/clubs/{owner.id}/webhooks", json=body, headers=owner.h())
        assert r.status_code == 422, (body, r.get_json())
        assert r.mimetype == "application/problem+json" and r.get_json()["code"] == code
    viewer = club.c.post(f"/v1/clubs/{owner.id}/tokens", json={"role": "viewer"},
                         headers=owner.h()).get_json()["token"]
    for method, path in (("post", "/webhooks"), ("get", "/webhooks"),
                         ("delete", "/webhooks/wh_x"), ("get", "/webhooks/wh_x/deliveries")):
        r = getattr(club.c, method)(f"/v1/clubs/{owner.id}{path}", headers=owner.h(viewer),
                                    json={"url": "https://93.184.215.14/", "events": ["*"]}
                                    if method == "post" else None)
        assert r.status_code == 403, (method, path)
    assert club.c.delete(f"/v1/clubs/{owner.id}/webhooks/wh_x",
                         headers=owner.h()).status_code == 404
    assert club.c.get(f"/v1/clubs/{owner.id}/webhooks/wh_x/deliveries",
                      headers=owner.h()).status_code == 404


def test_the_guard_checks_again_at_delivery(club: Club, receiver: Receiver,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Registered while private addresses were allowed, refused when they no longer are
    (as a host re-resolving to 127.0.0.1 would be): logged `blocked`, nothing sent."""
    monkeypatch.setenv("LOO_WEBHOOK_ALLOW_PRIVATE", "1")
    monkeypatch.setenv("LOO_WEBHOOK_RETRY_BASE", "0.2")
    owner = Owner(club)
    made = owner.hook(f"http://localhost:{receiver.port}/hook", ["*"])
    monkeypatch.delenv("LOO_WEBHOOK_ALLOW_PRIVATE")
    # The run the webhook_added commit started read its settings while private addresses
    # were still allowed: the table's events must wait for a run that starts from now on.
    runner = club.c.application.extensions["loo_ledger"].webhooks
    deadline = time.monotonic() + DEADLINE
    while runner._running:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    owner.table()
    while not owner.deliveries(made["id"]):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert owner.deliveries(made["id"])[0]["status"] == "blocked" and receiver.got == []


def test_a_secret_is_whsec_base64_of_32_bytes() -> None:
    secret = wh.endpoint_secret(b"k" * 32, "club_1", "wh_1", "ab" * 16)
    assert secret.startswith("whsec_") and len(base64.b64decode(secret[6:])) == 32
    assert secret != wh.endpoint_secret(b"k" * 32, "club_1", "wh_2", "ab" * 16)


def test_a_hanging_receiver_times_out_and_never_blocks_another_endpoint(
        club: Club, receiver: Receiver, private_ok: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LOO_WEBHOOK_TIMEOUT", "0.5")
    hang = threading.Event()
    with socket.socket() as s:  # accepts, reads, never answers
        s.bind(("127.0.0.1", 0))
        s.listen(16)
        port = s.getsockname()[1]

        def swallow() -> None:
            held = []
            while not hang.is_set():
                s.settimeout(0.2)
                try:
                    held.append(s.accept()[0])
                except OSError:
                    continue
            for c in held:
                c.close()

        t = threading.Thread(target=swallow, daemon=True)
        t.start()
        owner = Owner(club)
        stuck = owner.hook(f"http://127.0.0.1:{port}/hook", ["*"])
        owner.hook(receiver.url, ["*"])
        owner.table(bots=True, max_hands=1)
        receiver.wait_for(lambda got: any(json.loads(b)["type"] == "table_closed"
                                          for _, b in got), "the other endpoint's events")
        deadline = time.monotonic() + DEADLINE
        while not any(x["status"] == "timeout" for x in owner.deliveries(stuck["id"])):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        hang.set()
        t.join(timeout=5)


def test_the_club_feed_shows_a_webhook_by_its_origin_only(club: Club, private_ok: None) -> None:
    owner = Owner(club)
    made = owner.hook("http://127.0.0.1:9/hooks/s3cr3t-path?token=abc", ["*"])
    (added,) = [e for e in owner.feed() if e["type"] == "webhook_added"]
    assert added["data"]["id"] == made["id"] and added["data"]["url"] == "http://127.0.0.1:9"
    assert "salt" not in added["data"] and "s3cr3t" not in str(added)


def test_metrics_count_every_attempt_by_outcome(club: Club, receiver: Receiver,
                                                private_ok: None) -> None:
    from tests.e2e.test_metrics import delta, scrape

    before = scrape(club)
    owner = Owner(club)
    made = owner.hook(receiver.url, ["*"])
    receiver.failing = True  # answers 500
    table = owner.table()
    deadline = time.monotonic() + DEADLINE
    while sum(x["status"] == 500 for x in owner.deliveries(made["id"])) < 2:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    receiver.stop()  # then down: connection refused
    while not any(x["status"] == "refused" for x in owner.deliveries(made["id"])):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    receiver.failing = False
    receiver.start()
    owner.play(table, 4)
    since = _added_at(owner, made["id"])
    expected = [e["position"] for e in owner.feed() if e["position"] > since]
    receiver.wait_for(lambda got: len(got) >= len(expected), "the backlog")
    while True:  # the log is written a moment after the answers
        log = owner.deliveries(made["id"])
        if sum(x["status"] == 204 for x in log) >= len(expected):
            break
        assert time.monotonic() < deadline
        time.sleep(0.05)
    after = scrape(club)
    outcomes = {"delivered": sum(x["status"] == 204 for x in log),
                "rejected": sum(x["status"] == 500 for x in log),
                "refused": sum(x["status"] == "refused" for x in log)}
    assert outcomes["delivered"] == len(expected) and outcomes["rejected"] >= 2
    assert outcomes["refused"] >= 1
    for outcome, n in outcomes.items():
        assert delta(after, before, "loo_webhook_deliveries_total", outcome=outcome) == n, \
            outcome
    assert delta(after, before, "loo_webhook_deliveries_total", outcome="timeout") == 0


def test_a_url_naming_port_0_is_refused_not_sent_to_port_80(club: Club) -> None:
    """Port 0 is no port a receiver listens on: the service sent such a URL's deliveries to
    the scheme's default port (80 or 443), a server nobody named. (An empty port, as in
    http://host:/, is the default port by the URL standard and stays accepted.)"""
    owner = Owner(club)
    for url in ("https://93.184.215.14:0/x", "http://93.184.215.14:00/x"):
        problem = owner.hook(url, ["*"], status=422)
        assert problem["code"] == "invalid_url" and "port" in problem["detail"], problem
    assert club.c.get(f"/v1/clubs/{owner.id}/webhooks", headers=owner.h()).get_json()[
        "items"] == []


def test_delete_stops_a_delivery_run_in_the_middle_of_a_backlog(
        club: Club, receiver: Receiver, private_ok: None) -> None:
    """A run delivers what the endpoint is owed until it is all sent: after an outage that
    is a backlog, and a DELETE meanwhile went on being delivered to the end of it (every
    event the club had since). The run looks for its endpoint's removal as it goes."""
    owner = Owner(club)
    hook = owner.hook(receiver.url, ["*"])
    receiver.failing = True  # down: the table's events pile up
    owner.table(bots=True, max_hands=2)
    deadline = time.monotonic() + DEADLINE
    while not any(e["type"] == "table_closed" for e in owner.feed()):
        assert time.monotonic() < deadline
        time.sleep(0.1)
    owed = sum(1 for e in owner.feed() if e["position"] > _added_at(owner, hook["id"]))
    receiver.delay, receiver.failing = 0.05, False  # back, and slow
    receiver.wait_for(lambda got: len(got) >= 3, "the backlog to start")
    r = club.c.delete(f"/v1/clubs/{owner.id}/webhooks/{hook['id']}", headers=owner.h())
    assert r.status_code == 204
    at_delete = len(receiver.got)
    time.sleep(2.0)  # the backlog would take over 5 s more at 50 ms a POST
    assert owed > 50 and len(receiver.got) - at_delete <= 8, (owed, at_delete,
                                                               len(receiver.got))


@pytest.mark.parametrize("var,value", [
    ("LOO_WEBHOOK_RETRY_BASE", "5s"), ("LOO_WEBHOOK_RETRY_BASE", "0"),
    ("LOO_WEBHOOK_RETRY_MAX", "-1"), ("LOO_WEBHOOK_TIMEOUT", "nan"),
    ("LOO_WEBHOOK_TIMEOUT", "1e9"), ("LOO_WEBHOOK_ALLOW_PRIVATE", "yes")])
def test_a_bad_webhook_setting_is_a_config_error_at_start(var: str, value: str) -> None:
    """They fell back to their defaults without a word: a typo'd retry base or an
    ALLOW_PRIVATE=true that did nothing went unnoticed. Settings.from_env (every entry point
    reads it first) names the variable; good values and unset ones are taken."""
    from ledger.app.webhooks import WebhookConfig
    from ledger.bootstrap import ConfigError, Settings

    with pytest.raises(ConfigError, match=var):
        Settings.from_env({var: value})
    assert WebhookConfig.from_env({"LOO_WEBHOOK_RETRY_BASE": "0.2", "LOO_WEBHOOK_TIMEOUT": "5",
                                   "LOO_WEBHOOK_ALLOW_PRIVATE": "0"}) == WebhookConfig(
        allow_private=False, retry_base=0.2, timeout=5.0)
    assert WebhookConfig.from_env({}) == WebhookConfig()


def _until(what: str, done: Any) -> Any:
    """Poll `done()` until it gives something true (DEADLINE); that something."""
    deadline = time.monotonic() + DEADLINE
    while not (found := done()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return found


def _hand_complete(owner: Owner, table: dict[str, Any]) -> None:
    """Play hand 1 to its end (and its settlement)."""
    deadline = time.monotonic() + DEADLINE
    while not any(e["type"] == "hand_settled" and e["hand"] == 1 for e in owner.feed()):
        assert time.monotonic() < deadline
        owner.play(table, 5)


def test_every_attempt_of_one_message_sends_the_same_body(
        club: Club, receiver: Receiver, private_ok: None) -> None:
    """Standard Webhooks: one webhook-id, one payload. A live hand's event that failed was
    retried, after its hand completed, with another body under the same webhook-id: the
    tiles, the seed and the hashes the first attempt had hidden (redacted as the table was
    at each attempt). Every attempt now sends the same bytes (the feed's event as it stood
    at its own position), only the timestamp and the signature new."""
    owner = Owner(club)
    made = owner.hook(receiver.url, ["*"])
    hold = threading.Event()
    hold.set()
    receiver.answer = lambda doc: (500, {}) if hold.is_set() and \
        doc["type"] == "tiles_dealt" else None
    table = owner.table()
    (dealt,) = [e for e in owner.feed() if e["type"] == "tiles_dealt"]
    msg_id = f"msg_{made['id']}_{dealt['position']}"

    def tries() -> list[tuple[float, dict[str, str], bytes, int]]:
        with receiver.cond:
            return [t for t in receiver.tried if t[1]["webhook-id"] == msg_id]

    _until("a failed attempt while the hand is live", lambda: len(tries()) >= 2)
    _hand_complete(owner, table)
    after = len(tries())
    _until("a retry after the hand completed", lambda: len(tries()) > after)
    hold.clear()
    _until("the message delivered", lambda: any(t[3] == 204 for t in tries()))
    attempts = tries()
    assert [t[3] for t in attempts[:-1]] == [500] * (len(attempts) - 1)
    assert len(attempts) >= 3 and attempts[-1][3] == 204
    first = attempts[0][2]
    for _, headers, body, _ in attempts:
        assert body == first  # byte for byte
        assert wh.verify(made["secret"], headers, body)
    doc = json.loads(first)
    # As the spectator's feed showed it while the hand was live: no seed, tiles counted,
    # no hash (which a seat could search the hidden tiles with).
    assert "seed" not in doc["data"] and doc["hash"] is None
    assert all(set(n) == {"count"} for n in doc["data"]["hands"].values())
    # The feed itself now shows the completed hand's event whole.
    (now,) = [e for e in owner.feed() if e["position"] == dealt["position"]]
    assert now["hash"] is not None and now["data"] != doc["data"]
    log = [x for x in owner.deliveries(made["id"]) if x["position"] == dealt["position"]]
    assert {x["message_id"] for x in log} == {msg_id}


def test_a_receiver_answering_410_disables_the_webhook_until_the_owner_enables_it(
        club: Club, receiver: Receiver, private_ok: None) -> None:
    """410 Gone: the endpoint is no more (Standard Webhooks: disable it). The worker logs
    the attempt, appends webhook_disabled to the club's stream and delivers nothing more;
    GET shows it disabled, with why and where. POST .../enable (owner) appends
    webhook_enabled and delivery resumes with the message answered 410, nothing skipped."""
    owner = Owner(club)
    witness = Receiver().start()
    try:
        gone = threading.Event()
        gone.set()
        receiver.answer = lambda doc: (410, {}) if gone.is_set() else None
        made = owner.hook(receiver.url, ["*"])
        owner.hook(witness.url, ["*"])
        table = owner.table()
        hook_url = f"/v1/clubs/{owner.id}/webhooks/{made['id']}"
        shown = _until("the webhook disabled", lambda: (
            w := club.c.get(hook_url, headers=owner.h()).get_json())["disabled"] and w)
        log = owner.deliveries(made["id"])
        assert [(x["status"], x["attempt"]) for x in log] == [(410, 1)]
        assert shown["status"] == "disabled" and "410" in shown["disabled_reason"]
        assert shown["disabled_position"] == log[0]["position"] and shown["disabled_at"]
        (disabled,) = [e for e in owner.feed() if e["type"] == "webhook_disabled"]
        assert disabled["data"]["id"] == made["id"] and disabled["data"]["status"] == 410
        listed = club.c.get(f"/v1/clubs/{owner.id}/webhooks", headers=owner.h()).get_json()
        assert {w["id"]: w["status"] for w in listed["items"]}[made["id"]] == "disabled"
        # Nothing more goes to it while the other endpoint gets everything.
        owner.play(table, 6)
        last = owner.feed()[-1]["position"]
        witness.wait_for(lambda got: json.loads(got[-1][1])["position"] >= last,
                         "the witness up to the last event")
        assert len(receiver.tried) == 1 and owner.deliveries(made["id"]) == log
        # The owner's way back (a viewer may not; an unknown webhook is 404).
        viewer = club.c.post(f"/v1/clubs/{owner.id}/tokens", json={"role": "viewer"},
                             headers=owner.h()).get_json()["token"]
        assert club.c.post(f"{hook_url}/enable", json={},
                           headers=owner.h(viewer)).status_code == 403
        club.problem(club.c.post(f"/v1/clubs/{owner.id}/webhooks/wh_x/enable", json={},
                                 headers=owner.h()), 404, "webhook_not_found")
        gone.clear()
        r = club.c.post(f"{hook_url}/enable", json={}, headers=owner.h())
        assert r.status_code == 200, r.get_json()
        assert r.get_json()["status"] == "active" and r.get_json()["disabled"] is False
        assert r.get_json()["disabled_reason"] is None
        since = _added_at(owner, made["id"])
        expected = [e["position"] for e in owner.feed() if e["position"] > since]
        receiver.wait_for(lambda got: len(got) >= len(expected), "the backlog")
        assert [d["position"] for d in receiver.docs()] == expected  # from the 410'd one on
        assert expected[0] == log[0]["position"]
        assert {"webhook_disabled", "webhook_enabled"} <= {d["type"] for d in receiver.docs()}
        again = _log_of(owner, made["id"], len(expected) + 1)
        assert [(x["status"], x["attempt"]) for x in again[:2]] == [(410, 1), (204, 2)]
        # Enabling an endpoint that is not disabled appends nothing.
        version = club.c.get(f"/v1/clubs/{owner.id}", headers=owner.h()).get_json()["version"]
        r = club.c.post(f"{hook_url}/enable", json={}, headers=owner.h())
        assert r.status_code == 200 and r.get_json()["status"] == "active"
        assert club.c.get(f"/v1/clubs/{owner.id}",
                          headers=owner.h()).get_json()["version"] == version
    finally:
        witness.stop()


def test_retry_after_on_429_and_503_is_waited_for_within_retry_max(
        club: Club, receiver: Receiver, private_ok: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A receiver that says when to come back (Retry-After: seconds or an HTTP date, on
    429 or 503) was retried after the backoff all the same (0.2 s here): it is waited for,
    up to LOO_WEBHOOK_RETRY_MAX (an hour's Retry-After waits 3 s here)."""
    from email.utils import formatdate

    monkeypatch.setenv("LOO_WEBHOOK_RETRY_MAX", "3")
    answers = [(429, lambda: "2"), (503, lambda: formatdate(time.time() + 3, usegmt=True)),
               (503, lambda: "3600")]

    def answer(doc: dict[str, Any]) -> Any:
        if not answers:
            return None
        status, after = answers.pop(0)
        return status, {"Retry-After": after()}

    receiver.answer = answer
    owner = Owner(club)
    made = owner.hook(receiver.url, ["*"])
    owner.table()
    receiver.wait_for(lambda got: got, "the first event, at the fourth attempt")
    times = [t[0] for t in receiver.tried[:4]]
    assert [t[3] for t in receiver.tried[:4]] == [429, 503, 503, 204]
    assert len({t[1]["webhook-id"] for t in receiver.tried[:4]}) == 1
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert 1.9 <= gaps[0] < 2.9 + 1, gaps  # "2"
    assert 1.5 <= gaps[1] < 3 + 1, gaps  # a date 2 to 3 s ahead (whole seconds)
    assert 2.9 <= gaps[2] < 3 + 2, gaps  # an hour asked, retry_max (3 s) waited
    log = _log_of(owner, made["id"], 4)
    assert [x["status"] for x in log[:4]] == [429, 503, 503, 204]


def _results_table(club: Club, owner: Owner, scoring: str) -> str:
    """A results-mode club table of four (Ann deals first): its id."""
    r = club.c.post(f"/v1/clubs/{owner.id}/tables", headers=owner.h(), json={
        "variant": "loo", "scoring": scoring, "first_dealer": 0, "deal": "results",
        "seats": [{"name": n} for n in ("Ann", "Bob", "Cat", "Dan")]})
    assert r.status_code == 201, r.get_json()
    return str(r.get_json()["id"])


def test_a_hand_settled_webhook_gets_the_checkpoint_of_the_hand_that_won_the_game(
        club: Club, receiver: Receiver, private_ok: None) -> None:
    """API.md Checkpoints go out in webhooks, one after every settled hand. The hand that
    wins a game ends its settlement with game_won, which carries the checkpoint: an endpoint
    that asked for ["hand_settled"] (API.md's own example) got every hand's checkpoint but
    that one. Its hand_settled now carries it; an endpoint that also asked for game_won gets
    it there, as the feed has it."""
    from ledger.app.checkpoints import public_key, verify

    owner = Owner(club)
    witness = Receiver().start()
    try:
        settled = owner.hook(receiver.url, ["hand_settled"])
        owner.hook(witness.url, ["hand_settled", "game_won"])
        table = _results_table(club, owner, "points")
        result = {"decisions": {str(s): "play" for s in range(4)},
                  "tricks": {"0": 5, "1": 0, "2": 0, "3": 0}}
        for _ in range(3):  # 5 points a hand: the third reaches the target, 15
            r = club.c.post(f"/v1/tables/{table}/hands", headers=owner.h(),
                            json={"result": result})
            assert r.status_code == 200, r.get_json()
        checkpoints = club.c.get(f"/v1/tables/{table}/checkpoints",
                                 headers=owner.h()).get_json()["items"]
        assert len(checkpoints) == 3
        receiver.wait_for(lambda got: len(got) >= 3, "three settled hands")
        docs = receiver.docs()
        assert [d["type"] for d in docs] == ["hand_settled"] * 3
        assert [d["checkpoint"] for d in docs] == checkpoints
        key = public_key(club.c.get("/v1/checkpoints/key").get_json()["public_key"])
        assert all(verify(d["checkpoint"], key) is None for d in docs)
        _log_of(owner, settled["id"], 3)
        witness.wait_for(lambda got: len(got) >= 4, "three settled hands and the game")
        both = witness.docs()
        assert [d["type"] for d in both] == ["hand_settled"] * 3 + ["game_won"]
        assert "checkpoint" not in both[2] and both[3]["checkpoint"] == checkpoints[2]
    finally:
        witness.stop()


def test_corrections_a_hand_voided_webhook_gets_the_voids_checkpoint_and_table_closed_its_own(
        club: Club, receiver: Receiver, private_ok: None) -> None:
    """API.md Checkpoints go out in webhooks; Corrections: a void is as tamper-evident as a
    settlement. Nothing signed a hand_voided or table_closed, so an endpoint that asked for
    them got no checkpoint at all; each now carries its own, as the club feed has it."""
    from ledger.app.checkpoints import public_key, verify

    owner = Owner(club)
    made = owner.hook(receiver.url, ["hand_voided", "table_closed"])
    table = _results_table(club, owner, "pool")
    result = {"decisions": {str(s): "play" for s in range(4)},
              "tricks": {"0": 2, "1": 1, "2": 1, "3": 1}}
    for _ in range(2):
        r = club.c.post(f"/v1/tables/{table}/hands", headers=owner.h(), json={"result": result})
        assert r.status_code == 200, r.get_json()
    r = club.c.post(f"/v1/tables/{table}/hands/2/void", headers=owner.h(),
                    json={"reason": "tricks entered wrong"})
    assert r.status_code == 200, r.get_json()
    r = club.c.post(f"/v1/tables/{table}/close", headers=owner.h(), json={})
    assert r.status_code == 200, r.get_json()
    checkpoints = club.c.get(f"/v1/tables/{table}/checkpoints",
                             headers=owner.h()).get_json()["items"]
    assert len(checkpoints) == 4  # two settled hands, the void, the close
    receiver.wait_for(lambda got: len(got) >= 2, "the void and the close")
    docs = receiver.docs()
    assert [d["type"] for d in docs] == ["hand_voided", "table_closed"]
    assert [d["checkpoint"] for d in docs] == checkpoints[2:]
    assert [(d["version"], d["hash"]) for d in docs] == [
        (cp["version"], cp["hash"]) for cp in checkpoints[2:]]
    key = public_key(club.c.get("/v1/checkpoints/key").get_json()["public_key"])
    assert all(verify(d["checkpoint"], key) is None for d in docs)
    # The club feed places each on the event it names.
    feed = {d["position"]: d for d in owner.feed() if d["stream"] == table}
    assert [feed[d["position"]].get("checkpoint") for d in docs] == checkpoints[2:]
    _log_of(owner, made["id"], 2)


def test_webhooks_events_unknown_types_are_refused_with_the_valid_ones(club: Club) -> None:
    """API.md Webhooks: `events` is a list of event types or ["*"]. An unknown one is a 422
    whose `detail` and `valid` list every type it could have named (before: only the
    unknown ones were named)."""
    owner = Owner(club)
    r = club.c.post(f"/v1/clubs/{owner.id}/webhooks", headers=owner.h(),
                    json={"url": "https://93.184.215.14/x", "events": ["hand_setled", "*x"]})
    j = club.problem(r, 422, "invalid_events")
    assert j["unknown"] == ["*x", "hand_setled"]
    assert "hand_settled" in j["valid"] and "table_closed" in j["valid"]
    assert "hand_settled" in j["detail"] and "hand_setled" in j["detail"]


@pytest.mark.parametrize("events", [["hand_settled", "hand_settled"], ["*", "*"],
                                    ["game_won", "hand_settled", "game_won"]])
def test_webhooks_events_named_twice_are_refused(club: Club, events: list[str]) -> None:
    """A type named twice asks for nothing more and was kept as sent (every GET showed the
    list with its duplicate): a 422 naming it, nothing added."""
    owner = Owner(club)
    r = club.c.post(f"/v1/clubs/{owner.id}/webhooks", headers=owner.h(),
                    json={"url": "https://93.184.215.14/x", "events": events})
    j = club.problem(r, 422, "invalid_events")
    assert j["duplicates"] == [events[0]] and events[0] in j["detail"]
    assert club.c.get(f"/v1/clubs/{owner.id}/webhooks", headers=owner.h()).get_json()[
        "items"] == []


def test_a_pool_beyond_64_bits_is_delivered_exactly(club: Club, receiver: Receiver,
                                                   private_ok: None) -> None:
    """RULES §8.5 lets an uncapped pool grow without limit: a hand_settled past 2**64 chips
    goes out with its exact pool (the body's encoder refused it: the endpoint retried the
    same message for ever and nothing after it was sent)."""
    owner = Owner(club)
    made = owner.hook(receiver.url, ["hand_settled"])
    r = club.c.post(f"/v1/clubs/{owner.id}/tables", headers=owner.h(), json={
        "deal": "results", "first_dealer": 0,
        "seats": [{"name": n} for n in ("Ann", "Bob", "Cat", "Dan")]})
    assert r.status_code == 201, r.get_json()
    table = r.get_json()
    url = f"/v1/tables/{table['id']}"
    for n in range(42):  # the dealer takes every trick, the three others pay the pool
        result = {"decisions": {str(s): "play" for s in range(4)}, "tricks": {str(n % 4): 5}}
        r = club.c.post(f"{url}/hands", json={"result": result}, headers=owner.h())
        assert r.status_code == 200, r.get_json()
    pool = club.c.get(url, headers=owner.h()).get_json()["pool"]
    assert pool > 2**64
    receiver.wait_for(lambda got: len(got) >= 42, "every hand_settled")
    headers, body = receiver.got[-1]
    assert wh.verify(made["secret"], headers, body)
    assert json.loads(body)["data"]["pool"] == pool


class _V6Receiver(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def test_webhooks_a_host_written_in_unicode_or_as_ipv6_is_posted_with_a_valid_host_header(
        club: Club, receiver: Receiver, private_ok: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A URL's host goes out as HTTP writes it (RFC 9110 7.2, RFC 3986 3.2.2): a name in
    Unicode as its IDNA (punycode) ASCII form, an IPv6 address in brackets. The header was the
    URL's host as written: `bücher.test` went out as a Latin-1 byte, `пример.test` could not be
    written at all (UnicodeEncodeError: the delivery run died at every try, no attempt logged,
    nothing ever delivered, though the webhook was accepted with a 201), and `[::1]:8080`
    went out as `::1:8080`, which nginx refuses (400) and a virtual host cannot match."""
    resolve = wh._resolve
    monkeypatch.setattr(wh, "_resolve", lambda host, port: ["127.0.0.1"]
                        if host.endswith(".test") else resolve(host, port))
    owner = Owner(club)
    latin = owner.hook(f"http://bücher.test:{receiver.port}/hook", ["member_joined"])
    cyrillic = owner.hook(f"http://пример.test:{receiver.port}/hook", ["member_joined"])
    hosts: list[str | None] = []
    try:
        v6 = _V6Receiver(("::1", 0), _host_recorder(hosts))
    except OSError:  # no IPv6 loopback on this machine: the names are checked all the same
        v6 = None
    if v6 is not None:
        threading.Thread(target=v6.serve_forever, daemon=True).start()
        literal = owner.hook(f"http://[::1]:{v6.server_address[1]}/hook", ["member_joined"])
    try:
        r = club.c.post(f"/v1/clubs/{owner.id}/members", json={"name": "Fern"},
                        headers=owner.h())
        assert r.status_code == 201
        receiver.wait_for(lambda got: len(got) >= 2, "both named endpoints")
        assert sorted(h["host"] for h, _ in receiver.got) == [
            f"xn--bcher-kva.test:{receiver.port}", f"xn--e1afmkfd.test:{receiver.port}"]
        for made in (latin, cyrillic):
            assert [(x["event"], x["status"]) for x in _log_of(owner, made["id"], 1)] == [
                ("member_joined", 204)]
        if v6 is not None:
            assert [x["status"] for x in _log_of(owner, literal["id"], 1)] == [204]
            assert hosts == [f"[::1]:{v6.server_address[1]}"]
    finally:
        if v6 is not None:
            v6.shutdown()
            v6.server_close()


def _host_recorder(hosts: list[str | None]) -> Any:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            hosts.append(self.headers.get("Host"))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def test_webhooks_an_unexpected_failure_of_a_post_is_an_error_attempt_retried(
        club: Club, receiver: Receiver, private_ok: None,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A POST that fails in a way the HTTP client does not name (any exception, not one of
    urllib3's) is logged as an `error` attempt and retried like any failure; it ended the
    run before, with nothing logged and the event owed until another run came."""
    import urllib3

    real = urllib3.HTTPConnectionPool.urlopen
    failures = iter([True])

    def urlopen(self: Any, *args: Any, **kwargs: Any) -> Any:
        if next(failures, False):
            raise RuntimeError("something no one expected")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(urllib3.HTTPConnectionPool, "urlopen", urlopen)
    owner = Owner(club)
    made = owner.hook(receiver.url, ["member_joined"])
    r = owner.c.post(f"/v1/clubs/{owner.id}/members", json={"name": "Eve"}, headers=owner.h())
    assert r.status_code == 201, r.get_json()
    log = _log_of(owner, made["id"], 2)
    assert [(x["event"], x["status"], x["attempt"]) for x in log] == [
        ("member_joined", "error", 1), ("member_joined", 204, 2)]
    assert len(receiver.docs()) == 1
