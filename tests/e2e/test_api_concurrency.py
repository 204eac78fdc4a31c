"""Two clients at once never corrupt a table: one write wins, the rest get 409."""

from __future__ import annotations

import threading

from tests.e2e.club import Club


def test_twenty_threads_same_action_same_version_exactly_one_wins(app):
    club = Club(app.test_client())
    t = club.create(deal="results", first_dealer=0)
    version = club.view(t)["version"]
    body = {"result": {"decisions": {"1": "drop", "2": "drop", "3": "drop"}},
            "expected_version": version}
    statuses: list[int] = []
    barrier = threading.Barrier(20)

    def worker() -> None:
        client = app.test_client()  # one client per thread, as separate clubs would
        barrier.wait()
        r = client.post(f"/v1/tables/{t.id}/hands", json=body, headers=club.auth(t.admin))
        statuses.append(r.status_code)
        if r.status_code == 409:
            assert r.get_json()["code"] == "version_conflict"

    threads = [threading.Thread(target=worker) for _ in range(20)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert sorted(statuses) == [200] + [409] * 19
    events = club.get(t, path="/events?limit=1000").get_json()["events"]
    assert [e["version"] for e in events] == list(range(1, len(events) + 1))
    assert sum(1 for e in events if e["type"] == "hand_started") == 1
    assert club.get(t, path="/audit").get_json()["ok"]


def test_concurrent_actions_without_expected_version_never_double_apply(app):
    club = Club(app.test_client())
    t = club.create(first_dealer=0)
    seat = club.view(t)["hand"]["turn"]
    legal = club.view(t, t.seats[seat])["legal_actions"]
    body = legal[0]
    statuses: list[int] = []
    barrier = threading.Barrier(10)

    def worker() -> None:
        client = app.test_client()
        barrier.wait()
        r = client.post(f"/v1/tables/{t.id}/actions", json=body,
                        headers=club.auth(t.seats[seat]))
        statuses.append(r.status_code)

    threads = [threading.Thread(target=worker) for _ in range(10)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert statuses.count(200) == 1, statuses
    assert all(s in (200, 409, 422) for s in statuses)
    events = club.get(t, path="/events?limit=1000").get_json()["events"]
    assert sum(1 for e in events if e["type"] == "player_decided") == 1
    assert club.get(t, path="/audit").get_json()["ok"]


def test_two_api_processes_on_one_store_never_act_on_a_stale_table(backend_url):
    """Each API process caches tables; a write must still be decided on the latest state."""
    from ledger.api.app import create_app
    from ledger.bootstrap import Settings, bootstrap

    containers = [bootstrap(Settings(database_url=backend_url)) for _ in range(2)]
    try:
        a, b = (Club(create_app(c).test_client()) for c in containers)
        t = a.create(deal="shuffled", first_dealer=0)
        for _ in range(12):  # alternate the two processes while the seats move in turn
            for club, other in ((a, b), (b, a)):
                view = club.view(t)
                legal = view["legal_actions"]
                if not legal:
                    assert view["hand"]["phase"] == "complete", view["hand"]
                    return
                # `other` has seen an older version; it must act on the latest all the same
                answer = other.ok(t, dict(legal[0]))
                assert answer["version"] > view["version"]
                assert answer["table"]["version"] == answer["version"]
        versions = [e["version"] for e in a.get(t, path="/events").get_json()["events"]]
        assert versions == list(range(1, len(versions) + 1))
    finally:
        for c in containers:
            c.close()


def test_a_stale_expected_version_is_409_even_when_this_process_cached_it(app):
    club = Club(app.test_client())
    t = club.create(deal="shuffled", first_dealer=0)
    view = club.view(t)
    club.ok(t, dict(view["legal_actions"][0], expected_version=view["version"]))
    r = club.act(t, dict(view["legal_actions"][0], expected_version=view["version"]))
    club.problem(r, 409, "version_conflict")
