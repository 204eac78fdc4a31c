"""/metrics (Prometheus text) and request ids (issue 16): after a game the counters match
the events appended and the requests made; X-Request-Id is echoed or made."""

from __future__ import annotations

import random
import re
from collections import Counter
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.club import Club
from tests.e2e.test_api_games import play_out


def scrape(club: Club) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    r = club.c.get("/metrics")
    assert r.status_code == 200 and r.mimetype == "text/plain"
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(r.get_data(as_text=True))
            for s in family.samples}


def delta(after: dict, before: dict, name: str, **labels: str) -> float:
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0.0) - before.get(key, 0.0)


def test_counters_after_a_game_match_the_events_and_requests(club: Club) -> None:
    before = scrape(club)
    seats = [{"name": "Ann"}] + [{"name": f"Bot{i}", "bot": "heuristic"} for i in (1, 2, 3)]
    t = club.create(seats=seats, first_dealer=1)
    actions = []
    orig = club.ok

    def counted(table: Any, body: dict, token: str | None = None) -> dict:
        actions.append(body)
        return orig(table, body, token)

    club.ok = counted  # type: ignore[method-assign]
    play_out(club, t, 2, random.Random(3))
    after = scrape(club)

    events = club.get(t, path="/events?limit=1000").get_json()["events"]
    by_type = Counter(e["type"] for e in events)
    assert sum(by_type.values()) > 20
    for kind, n in by_type.items():
        assert delta(after, before, "loo_events_appended_total", type=kind) == n, kind
    route = "/v1/tables/<table_id>/actions"
    assert delta(after, before, "loo_http_requests_total", method="POST", route=route,
                 status="200") == len(actions) > 0
    assert delta(after, before, "loo_http_requests_total", method="POST", route="/v1/tables",
                 status="201") == 1
    assert delta(after, before, "loo_http_request_duration_seconds_count", method="POST",
                 route=route) == len(actions)
    # An unknown address is one label, not one per path.
    club.c.get("/v1/no/such/thing/123")
    assert delta(scrape(club), after, "loo_http_requests_total", method="GET",
                 route="unmatched", status="404") == 1


def test_request_id_is_echoed_or_made(club: Club) -> None:
    r = club.c.get("/healthz", headers={"X-Request-Id": "club-7.req:42"})
    assert r.headers["X-Request-Id"] == "club-7.req:42"
    made = club.c.get("/healthz").headers["X-Request-Id"]
    assert re.fullmatch(r"[0-9a-f]{32}", made)
    # Not a sane token (spaces, too long): replaced, never echoed back.
    for bad in ("a b", "x" * 200):
        assert club.c.get("/healthz", headers={"X-Request-Id": bad}).headers[
            "X-Request-Id"] != bad
    problem = club.c.post("/v1/tables", json={"seats": "no"}, headers={"X-Request-Id": "r1"})
    assert problem.status_code == 422 and problem.headers["X-Request-Id"] == "r1"
