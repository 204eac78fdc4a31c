"""API.md checked from outside, as an integrator's test suite would run it over HTTP: lists
that page through items leaving them, the operator token decided before the body, a key's
request including its query. Each test here failed before the fix it came with, but the
one called a guard."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.e2e.club import Club
from tests.e2e.test_api_clubs import RESULT_A, League


def pages(club: Club, url: str, headers: dict[str, str], between: Any = None,
          limit: int = 1) -> list[str]:
    """Every id a client collects paging `url` `limit` at a time, calling `between()` after
    each page (what other writers do meanwhile)."""
    seen: list[str] = []
    cursor = None
    for _ in range(100):
        sep = "&" if "?" in url else "?"
        r = club.c.get(f"{url}{sep}limit={limit}" + (f"&cursor={cursor}" if cursor else ""),
                       headers=headers)
        assert r.status_code == 200, r.get_json()
        page = r.get_json()
        seen += [item["id"] for item in page["items"]]
        if between is not None:
            between()
        cursor = page["next"]
        if cursor is None:
            return seen
    raise AssertionError("the list never ended")


def one_at_a_time(club: Club, h: dict[str, str], urls: list[str]) -> Callable[[], None]:
    """A change made between pages: each call POSTs the next of `urls` (200), then none."""
    left = iter(urls)

    def post_next() -> None:
        url = next(left, None)
        if url is not None:
            assert club.c.post(url, json={}, headers=h).status_code == 200

    return post_next


# ---- Lists: paging yields every item once, also while others leave the list ---------------


def test_paging_a_club_list_skips_nobody_when_an_item_leaves_it_between_pages(club: Club):
    """The cursor was an offset into the list as filtered now: a token revoked, a webhook
    removed, a member archived (?archived=false) or a season closed (?closed=false) after
    the first page moved every later item one place up, and the item now at the boundary
    was never listed. Each item that is in the list throughout is listed exactly once."""
    lg = League(club)
    h = lg.h(lg.owner)
    for _ in range(3):
        lg.token("viewer")
    live = [t["id"] for t in club.c.get(lg.url("/tokens?limit=500"), headers=h)
            .get_json()["items"]]
    gone = iter(live[1:4])  # revoke all but the owner's, one after each page

    def revoke() -> None:
        tid = next(gone, None)
        if tid is not None:
            assert club.c.delete(lg.url(f"/tokens/{tid}"), headers=h).status_code == 204

    seen = pages(club, lg.url("/tokens"), h, revoke)
    assert {live[0], *live[4:]} <= set(seen) and len(seen) == len(set(seen)), (live, seen)

    lg.scorer = lg.owner  # (the scorer's token was revoked above)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan", "Eve")]
    archive = one_at_a_time(club, h, [lg.url(f"/members/{m}/archive") for m in ms[:2]])
    seen = pages(club, lg.url("/members?archived=false"), h, archive)
    assert set(ms[2:]) <= set(seen) and len(seen) == len(set(seen)), (ms, seen)

    ss = [lg.season(f"S{i}") for i in range(4)]
    close = one_at_a_time(club, h, [lg.url(f"/seasons/{s}/close") for s in ss[:2]])
    seen = pages(club, lg.url("/seasons?closed=false"), h, close)
    assert set(ss[2:]) <= set(seen) and len(seen) == len(set(seen)), (ss, seen)


def test_paging_club_tables_by_status_skips_no_table_when_one_finishes(club: Club):
    lg = League(club)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")]
    tables = [lg.table(ms, deal="results") for _ in range(4)]
    h = lg.h(lg.viewer)
    closing = iter(tables[:2])

    def finish() -> None:
        t = next(closing, None)
        if t is not None:
            assert club.post(t, "/close", {}).status_code == 200

    seen = pages(club, lg.url("/tables?status=playing"), h, finish)
    assert {t.id for t in tables[2:]} <= set(seen) and len(seen) == len(set(seen))


def test_paging_spectators_and_webhooks_skips_none_when_one_is_revoked(club: Club,
                                                                     monkeypatch):
    monkeypatch.setenv("LOO_WEBHOOK_ALLOW_PRIVATE", "1")
    t = club.create(first_dealer=0)
    ids = [club.post(t, "/spectators", {"label": f"s{i}"}).get_json()["id"] for i in range(4)]
    gone = iter(ids[:2])

    def revoke() -> None:
        sid = next(gone, None)
        if sid is not None:
            r = club.c.delete(f"/v1/tables/{t.id}/spectators/{sid}", headers=club.auth(t.admin))
            assert r.status_code == 204

    seen = pages(club, f"/v1/tables/{t.id}/spectators", club.auth(t.admin), revoke)
    assert set(ids[2:]) <= set(seen) and len(seen) == len(set(seen)), (ids, seen)

    lg = League(club)
    h = lg.h(lg.owner)
    hooks = [club.c.post(lg.url("/webhooks"), json={"url": f"http://127.0.0.1:9/{i}",
                                                    "events": ["*"]}, headers=h)
             .get_json()["id"] for i in range(4)]
    removing = iter(hooks[:2])

    def remove() -> None:
        wid = next(removing, None)
        if wid is not None:
            assert club.c.delete(lg.url(f"/webhooks/{wid}"), headers=h).status_code == 204

    seen = pages(club, lg.url("/webhooks"), h, remove)
    assert set(hooks[2:]) <= set(seen) and len(seen) == len(set(seen)), (hooks, seen)


def test_a_page_ends_with_next_null_when_nothing_after_it_is_left(club: Club):
    """The last item kept ends the list (next null), whatever was removed after it (a guard
    of lists.page_of: it passed before)."""
    lg = League(club)
    h = lg.h(lg.owner)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat")]
    for mid in ms[1:]:
        assert club.c.post(lg.url(f"/members/{mid}/archive"), json={}, headers=h
                           ).status_code == 200
    page = club.c.get(lg.url("/members?archived=false&limit=1"), headers=h).get_json()
    assert [m["id"] for m in page["items"]] == ms[:1] and page["next"] is None
    page = club.c.get(lg.url("/members?archived=true&limit=1"), headers=h).get_json()
    assert [m["id"] for m in page["items"]] == ms[1:2] and page["next"]
    rest = club.c.get(lg.url(f"/members?archived=true&limit=1&cursor={page['next']}"),
                      headers=h).get_json()
    assert [m["id"] for m in rest["items"]] == ms[2:] and rest["next"] is None


# ---- LOO_OPERATOR_TOKEN: who may create a club comes before the body ------------------------

@pytest.mark.parametrize("data", [b"{not json", b'{"nmae": "x"}', b"[]"])
def test_with_an_operator_token_a_club_creation_without_it_is_401_whatever_the_body(
        club: Club, monkeypatch: pytest.MonkeyPatch, data: bytes):
    """Auth is decided before the body, as at every other write: without the operator
    token a malformed or invalid body was answered 400 / 422 (telling a stranger how to
    write the body of a request they may not make)."""
    monkeypatch.setenv("LOO_OPERATOR_TOKEN", "the-operator")
    for headers, code in (({}, "missing_token"), (club.auth("not-it"), "invalid_token")):
        r = club.c.post("/v1/clubs", data=data, content_type="application/json",
                        headers=headers)
        club.problem(r, 401, code)
        assert r.headers["WWW-Authenticate"].startswith("Bearer")
    r = club.c.post("/v1/clubs", data=data, content_type="application/json",
                    headers=club.auth("the-operator"))
    assert r.status_code in (400, 422), r.get_json()


# ---- Idempotency-Key: the request is its query too ------------------------------------------

def test_a_key_repeated_with_another_expected_version_in_the_query_is_409(club: Club):
    """A DELETE and an import take expected_version in the query: the same key with another
    one was replayed (204, 201) where the same change in a JSON body is a 409, so a client
    reusing a key by mistake was told its stale request went through."""
    lg = League(club)
    h = lg.h(lg.owner)
    tid = club.c.post(lg.url("/tokens"), json={"role": "viewer", "label": "v"},
                      headers=h).get_json()["id"]
    version = club.c.get(lg.url(), headers=h).get_json()["version"]
    k = {"Idempotency-Key": "revoke-1"}
    first = club.c.delete(lg.url(f"/tokens/{tid}?expected_version={version}"), headers=h | k)
    assert first.status_code == 204
    again = club.c.delete(lg.url(f"/tokens/{tid}?expected_version={version}"), headers=h | k)
    assert again.status_code == 204
    j = club.problem(club.c.delete(lg.url(f"/tokens/{tid}?expected_version=0"),
                                   headers=h | k), 409, "idempotency_conflict")
    assert "query" in j["detail"], j  # (it said "another request body" only)
    club.problem(club.c.delete(lg.url(f"/tokens/{tid}"), headers=h | k), 409,
                 "idempotency_conflict")

    t = club.create(first_dealer=0)
    sid = club.post(t, "/spectators", {}).get_json()["id"]
    ta = club.auth(t.admin) | {"Idempotency-Key": "unwatch"}
    assert club.c.delete(f"/v1/tables/{t.id}/spectators/{sid}", headers=ta).status_code == 204
    assert club.c.delete(f"/v1/tables/{t.id}/spectators/{sid}", headers=ta).status_code == 204
    club.problem(club.c.delete(f"/v1/tables/{t.id}/spectators/{sid}?expected_version=1",
                               headers=ta), 409, "idempotency_conflict")

    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")]
    played = lg.table(ms, deal="results")
    assert club.start(played, {"result": RESULT_A}).status_code == 200
    line = club.get(played, path="/hands/1/history").data
    hs = lg.h(lg.scorer) | {"Idempotency-Key": "import-1", "Content-Type": "application/json"}
    version = club.c.get(lg.url(), headers=h).get_json()["version"]
    url = lg.url(f"/tables/import?expected_version={version}")
    first = club.c.post(url, data=line, headers=hs)
    assert first.status_code == 201, first.get_json()
    assert club.c.post(url, data=line, headers=hs).get_json() == first.get_json()
    club.problem(club.c.post(lg.url("/tables/import?expected_version=0"), data=line,
                             headers=hs), 409, "idempotency_conflict")


# ---- OpenAPI: every list says what its items are --------------------------------------------

LIST_ITEMS = {  # API.md's fields of each list's items
    "/v1/bots": {"name"},
    "/v1/tables/{table_id}/spectators": {"id", "label"},
    "/v1/tables/{table_id}/checkpoints": {"table", "version", "hash", "at", "signature"},
    "/v1/clubs/{club_id}/tokens": {"id", "role", "label"},
    "/v1/clubs/{club_id}/webhooks": {"id", "url", "events"},
    "/v1/clubs/{club_id}/webhooks/{webhook_id}/deliveries": {"event", "status", "attempt",
                                                             "duration_ms", "at"},
    "/v1/clubs/{club_id}/members": {"id", "name", "external_id", "archived"},
    "/v1/clubs/{club_id}/seasons": {"id", "name", "starts_on"},
    "/v1/clubs/{club_id}/tables": {"id", "variant", "scoring", "status", "season",
                                   "created_at", "hands", "seats"},
    "/v1/clubs/{club_id}/members/{member_id}/ledger": {"kind", "table", "seat"},
    "/v1/tables/{table_id}/ledger": {"hand", "version", "from", "to", "amount", "reason"},
}


def test_every_list_in_the_spec_documents_its_items_and_serves_them(club: Club, monkeypatch):
    """The club lists (tokens, webhooks, deliveries, members, seasons, tables) and the
    spectators were documented as {"items": [{}], "next"}: a client generated from the spec
    got untyped items. Each now names its item schema with API.md's fields, and what is
    served has every field the schema requires."""
    monkeypatch.setenv("LOO_WEBHOOK_ALLOW_PRIVATE", "1")
    spec = club.c.get("/openapi.json").get_json()
    schemas = spec["components"]["schemas"]

    def resolve(s: dict) -> dict:
        return schemas[s["$ref"].split("/")[-1]] if "$ref" in s else s

    lists = [p for p, ops in spec["paths"].items()
             if "limit" in [q["name"] for q in ops.get("get", {}).get("parameters", [])]
             and "cursor" in [q["name"] for q in ops["get"]["parameters"]]]
    assert sorted(lists) == sorted(LIST_ITEMS)
    item_schema = {}
    for path, fields in LIST_ITEMS.items():
        page = resolve(spec["paths"][path]["get"]["responses"]["200"]["content"]
                       ["application/json"]["schema"])
        assert {"items", "next"} <= set(page["properties"]), path
        item = resolve(page["properties"]["items"]["items"])
        assert fields <= set(item.get("properties", {})), (path, item)
        item_schema[path] = item

    lg = League(club)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")]
    lg.season()
    t = lg.table(ms, deal="results")
    assert club.start(t, {"result": RESULT_A}).status_code == 200
    assert club.post(t, "/spectators", {"label": "screen"}).status_code == 201
    h = lg.h(lg.owner)
    wid = club.c.post(lg.url("/webhooks"), json={"url": "http://127.0.0.1:9/x",
                                                  "events": ["*"]}, headers=h).get_json()["id"]
    served = {
        "/v1/bots": club.c.get("/v1/bots"),
        "/v1/tables/{table_id}/spectators": club.get(t, path="/spectators"),
        "/v1/tables/{table_id}/checkpoints": club.get(t, path="/checkpoints"),
        **{f"/v1/clubs/{{club_id}}/{name}": club.c.get(lg.url(f"/{name}"), headers=h)
           for name in ("tokens", "webhooks", "members", "seasons", "tables")},
        "/v1/clubs/{club_id}/members/{member_id}/ledger": club.c.get(
            lg.url(f"/members/{ms[0]}/ledger"), headers=h),
        "/v1/tables/{table_id}/ledger": club.get(t, path="/ledger?limit=5"),  # paged: a list
    }
    for path, r in served.items():
        assert r.status_code == 200, (path, r.get_json())
        items = r.get_json()["items"]
        assert items, path
        required = set(item_schema[path].get("required", [])) | LIST_ITEMS[path]
        for item in items:
            assert required <= set(item), (path, item)
    deliveries = club.c.get(lg.url(f"/webhooks/{wid}/deliveries"), headers=h)
    assert deliveries.status_code == 200 and deliveries.get_json()["next"] is None
