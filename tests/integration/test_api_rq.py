"""The HTTP API on the production path: PostgreSQL, and follow-up jobs through RQ workers."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from ledger.api.app import create_app
from ledger.app import handlers
from ledger.app.service import Ledger
from ledger.bootstrap import Container, Settings
from ledger.core import commands as c
from ledger.store.base import EventStore
from tests.e2e.club import Club, Table
from tests.integration.worker_helpers import (
    check_table,
    drain,
    four_bots,
    hand_done,
    seeded,
    wait_until,
)
from workers.queue import RqDispatcher, rq_job_id

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


@pytest.fixture
def club(db_url: str, store: EventStore, queue: Any,
         worker_ledger: Ledger) -> Iterator[Club]:
    """The app as `loo serve` composes it with REDIS_URL set; `drain(queue)` is the worker."""
    dispatcher = RqDispatcher(queue)
    container = Container(Settings(database_url=db_url, queue_name=queue.name), store, queue,
                          dispatcher, Ledger(store, dispatcher))
    app = create_app(container)
    app.config["TESTING"] = True
    yield Club(app.test_client())


def test_idempotent_repeats_through_rq_give_the_first_answers_after_the_bots_moved(
        club: Club, queue: Any) -> None:
    """API.md: a repeat with the same Idempotency-Key returns the first answer. Through RQ
    the bots' moves and the settlement come later, from a worker: a repeat must not count
    them into the answer (nor may the first answer depend on how fast the worker was)."""
    body = {"variant": "loo", "scoring": "pool", "first_dealer": 0, "deal": "shuffled",
            "seats": [{"name": "Ann"}] + [{"name": f"B{i}", "bot": "heuristic"}
                                          for i in (1, 2, 3)]}
    created = club.c.post("/v1/tables", json=body, headers={"Idempotency-Key": "create-1"})
    assert created.status_code == 201, created.get_json()
    first = created.get_json()
    t = Table(first["id"], first["admin_token"], [s["token"] for s in first["seats"]], first)
    sent = []
    for step in range(40):
        drain(queue)  # the bots decide or play up to Ann's turn; settlement, next deal
        view = club.view(t, t.seats[0])
        if view["hand"]["number"] > 2:
            break
        assert view["legal_actions"], view["hand"]
        action = view["legal_actions"][0]
        key = {"Idempotency-Key": f"ann-{step}"}
        r = club.act(t, action, t.seats[0], headers=key)
        assert r.status_code == 200, r.get_json()
        answer = r.get_json()
        # The answer is the write's own events: the bots have not moved yet.
        assert answer["events"][-1]["version"] == answer["version"]
        sent.append((action, key, answer))
    drain(queue)
    moved = club.view(t)["version"]
    assert len(sent) > 5 and moved > sent[-1][2]["version"]
    for action, key, answer in sent:
        again = club.act(t, action, t.seats[0], headers=key)
        assert again.status_code == 200
        assert again.get_json() == answer
    again = club.c.post("/v1/tables", json=body, headers={"Idempotency-Key": "create-1"})
    assert again.status_code == 201 and again.get_json() == first
    assert club.view(t)["version"] == moved  # nothing appended


def test_a_job_a_dead_worker_dequeued_but_never_started_is_enqueued_again(
        store: EventStore, queue: Any, worker_ledger: Ledger,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """rq's dequeue moves a job from the queue into its intermediate list and takes it out
    when the job starts. A worker killed in between leaves the job "queued" but in no queue;
    rq's cleanup of that list retries it only after a minute: a worker's maintenance does
    so after STUCK_DEQUEUED seconds (0 here, so two passes: seen, then retried)."""
    from workers import worker as loo_worker

    monkeypatch.setattr(loo_worker, "STUCK_DEQUEUED", 0)
    ledger = Ledger(store, RqDispatcher(queue), seeds=seeded(11))
    table_id, _, _ = ledger.create_table(four_bots())
    ledger.execute(table_id, c.StartHand())
    drain(queue)  # hand 1
    assert hand_done(ledger, table_id)
    version = ledger.execute(table_id, c.StartHand()).projection.version  # enqueues its job
    jid = rq_job_id(f"advance:{table_id}:{version}")
    assert queue.get_job_ids() == [jid]
    # What a worker's dequeue does (BLMOVE), before it dies without starting the job.
    assert queue.connection.lmove(queue.key, queue.intermediate_queue_key) == jid.encode()
    drain(queue)
    assert handlers.next_command(ledger.load(table_id)) is not None  # stuck
    maintenance = loo_worker.Maintenance(
        loo_worker.LooWorker([queue], connection=queue.connection, serializer=queue.serializer),
        queue, reconcile=lambda: None, reconcile_every=0)
    try:
        wait_until(lambda: (maintenance.tick(), queue.get_job_ids() == [jid])[1],
                   what="the lost job enqueued again")
    finally:
        maintenance.stop()
    assert queue.intermediate_queue.get_job_ids() == []
    drain(queue)
    assert hand_done(ledger, table_id)
    check_table(store, table_id, hands=2)


class _InstantWorker(RqDispatcher):
    """A worker that runs each job the moment it is enqueued, before the API answers."""

    def enqueue(self, func_path: str, *args: Any, job_id: str) -> None:
        super().enqueue(func_path, *args, job_id=job_id)
        drain(self.queue)


def test_a_created_tables_answer_is_the_table_as_created_however_fast_the_worker(
        db_url: str, store: EventStore, queue: Any, worker_ledger: Ledger) -> None:
    """API.md: POST /v1/tables answers with the new table's `version`. Through RQ the bots'
    first moves are a worker's, whenever it runs: they are not part of the answer."""
    dispatcher = _InstantWorker(queue)
    container = Container(Settings(database_url=db_url, queue_name=queue.name), store, queue,
                          dispatcher, Ledger(store, dispatcher))
    app = create_app(container)
    app.config["TESTING"] = True
    club = Club(app.test_client())
    body = {"variant": "loo", "scoring": "pool", "first_dealer": 0, "deal": "shuffled",
            "seats": [{"name": "Ann"}] + [{"name": f"B{i}", "bot": "heuristic"}
                                          for i in (1, 2, 3)]}
    created = club.c.post("/v1/tables", json=body)
    assert created.status_code == 201, created.get_json()
    answer = created.get_json()
    stored = store.load(answer["id"])
    first_bot_move = next(s.version for s in stored if (s.causation or "").startswith("bot:"))
    assert answer["version"] == answer["table"]["version"] == first_bot_move - 1
    assert stored[-1].version > answer["version"]  # the worker did move, before the answer


def webhook_api(db_url: str, store: EventStore, queue: Any, worker_ledger: Ledger,
                monkeypatch: pytest.MonkeyPatch) -> tuple[Ledger, Any]:
    """The API's ledger and a test client of an app whose club commits, like the worker's,
    trigger webhook deliveries through RQ (private receiver addresses allowed)."""
    from workers.webhooks import rq_trigger

    monkeypatch.setenv("LOO_WEBHOOK_ALLOW_PRIVATE", "1")
    dispatcher = RqDispatcher(queue)
    led = Ledger(store, dispatcher)
    led.on_club_commit = rq_trigger(dispatcher)
    worker_ledger.on_club_commit = rq_trigger(worker_ledger.dispatcher)
    container = Container(Settings(database_url=db_url, queue_name=queue.name), store, queue,
                          dispatcher, led)
    app = create_app(container)
    app.config["TESTING"] = True
    return led, app.test_client()


def club_with_webhook(c: Any, name: str, url: str) -> tuple[dict[str, Any], dict[str, str],
                                                         str]:
    """A new club (its answer and owner's auth header) with an endpoint for every event at
    `url`, and that endpoint's secret."""
    club = c.post("/v1/clubs", json={"name": name}).get_json()
    auth = {"Authorization": f"Bearer {club['token']}"}
    made = c.post(f"/v1/clubs/{club['id']}/webhooks", headers=auth,
                  json={"url": url, "events": ["*"]})
    assert made.status_code == 201, made.get_json()
    return club, auth, made.get_json()["secret"]


def test_webhooks_are_delivered_by_rq_jobs_in_order(
        db_url: str, store: EventStore, queue: Any, worker_ledger: Ledger,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Through RQ: a commit of a club enqueues its for_club job, which enqueues one delivery
    job per endpoint; the worker POSTs every event, signed, in position order. The sweep
    (the worker's reconciler) enqueues them again, finding nothing more to send."""
    from ledger.app import webhooks as wh
    from tests.e2e.test_api_webhooks import Receiver
    from workers.webhooks import sweep

    led, c = webhook_api(db_url, store, queue, worker_ledger, monkeypatch)
    receiver = Receiver().start()
    try:
        club, auth, secret = club_with_webhook(c, "RQ", receiver.url)
        r = c.post(f"/v1/clubs/{club['id']}/tables", headers=auth, json={
            "variant": "loo", "scoring": "pool", "first_dealer": 0, "deal": "shuffled",
            "seats": [{"name": f"B{i}", "bot": "heuristic"} for i in range(4)],
            "options": {"max_hands": 1}})
        assert r.status_code == 201, r.get_json()
        assert queue.fetch_job(rq_job_id(f"webhooks:{club['id']}")) is not None
        for _ in range(20):
            drain(queue)  # the bots' hand, then the deliveries its commits enqueued
            if any(json.loads(b)["type"] == "table_closed" for _, b in receiver.got):
                break
        feed = c.get(f"/v1/clubs/{club['id']}/events?limit=500", headers=auth).get_json()
        since = next(e["position"] for e in feed["events"] if e["type"] == "webhook_added")
        expected = [e["position"] for e in feed["events"] if e["position"] > since]
        docs = [json.loads(b) for _, b in receiver.got]
        assert [d["position"] for d in docs] == expected
        assert all(wh.verify(secret, h, b) for h, b in receiver.got)
        assert sweep(worker_ledger) == 1
        drain(queue)
        assert len(receiver.got) == len(expected)  # nothing sent twice
    finally:
        receiver.stop()


def test_an_event_committed_just_after_a_delivery_runs_last_read_is_delivered_next(
        db_url: str, store: EventStore, queue: Any, worker_ledger: Ledger,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The race: a delivery run has read everything owed (its last read found nothing) when
    an event commits, and that commit's for_club job runs on another worker before the run
    has ended (so RQ still holds the run's job as started and refuses a duplicate). The next
    run follows the running one (it is enqueued as that ends) and delivers the event, in
    order, once, without waiting for another commit or the reconciler's sweep."""
    from tests.e2e.test_api_webhooks import Receiver
    from workers.webhooks import for_club

    led, c = webhook_api(db_url, store, queue, worker_ledger, monkeypatch)
    receiver = Receiver().start()
    try:
        club, auth, _ = club_with_webhook(c, "Race", receiver.url)
        c.post(f"/v1/clubs/{club['id']}/members", headers=auth, json={"name": "Ann"})
        drain(queue)
        assert [json.loads(b)["type"] for _, b in receiver.got] == ["member_joined"]

        # The hook: the next delivery run's read that finds nothing owed is followed, before
        # the run ends, by a commit whose for_club job runs at once (another worker's).
        real_read_all = worker_ledger.store.read_all
        fired: list[int] = []

        def read_all(after_position: int = 0, limit: int = 1000) -> list[Any]:
            page = real_read_all(after_position=after_position, limit=limit)
            if not page and not fired:
                led.on_club_commit = lambda cid: fired.append(for_club(cid, ledger=led))
                r = c.post(f"/v1/clubs/{club['id']}/members", headers=auth,
                           json={"name": "Bob"})
                assert r.status_code == 201, r.get_json()
                assert fired == [1]  # for_club ran (and found the endpoint's run started)
            return page

        monkeypatch.setattr(worker_ledger.store, "read_all", read_all)
        c.post(f"/v1/clubs/{club['id']}/members", headers=auth, json={"name": "Cat"})
        drain(queue)  # Cat's delivery run, during which Bob commits; then what follows it
        names = [json.loads(b)["data"].get("name") for _, b in receiver.got]
        assert names == ["Ann", "Cat", "Bob"], names
        feed = c.get(f"/v1/clubs/{club['id']}/events?limit=500", headers=auth).get_json()
        since = next(e["position"] for e in feed["events"] if e["type"] == "webhook_added")
        assert [json.loads(b)["position"] for _, b in receiver.got] == [
            e["position"] for e in feed["events"] if e["position"] > since]
    finally:
        receiver.stop()
