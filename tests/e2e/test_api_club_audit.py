"""API.md Phase 2 (clubs) held to its word from outside, on both stores: each test is named
after the section it checks and failed before the change it came with."""

from __future__ import annotations

from tests.e2e.club import Club
from tests.e2e.test_api_clubs import RESULT_A, League
from tests.e2e.test_api_http_audit import in_threads


def test_lists_a_filter_naming_no_season_or_member_of_the_club_is_a_422(club: Club):
    """Lists: "an unknown filter or a bad value is a 422, never ignored". A season or member
    that is not the club's (never made, or another club's) answered an empty 200; now the
    422 a write naming it answers (unknown_season, unknown_member), on every read taking it."""
    lg = League(club)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")]
    season = lg.season()
    t = lg.table(ms, season, deal="results")
    assert club.start(t, {"result": RESULT_A}).status_code == 200
    other = League(club, "Crown")
    theirs_season, theirs_member = other.season(), other.member("Eve")
    for bad_season in ("sea_0000000000000000", theirs_season):
        for path in ("/tables", "/standings", f"/members/{ms[0]}/ledger", "/history"):
            r = lg.get(f"{path}?season={bad_season}")
            assert club.problem(r, 422, "unknown_season")["field"] == "season", path
    for bad_member in ("mem_0000000000000000", theirs_member):
        r = lg.get(f"/tables?member={bad_member}")
        assert club.problem(r, 422, "unknown_member")["field"] == "member"
    # The club's own season and member still filter (an archived member, a closed season too).
    assert [x["id"] for x in lg.get(f"/tables?season={season}&member={ms[0]}")
            .get_json()["items"]] == [t.id]
    assert lg.c.post(lg.url(f"/members/{ms[0]}/archive"), json={},
                     headers=lg.h(lg.scorer)).status_code == 200
    assert lg.c.post(lg.url(f"/seasons/{season}/close"), json={},
                     headers=lg.h(lg.scorer)).status_code == 200
    assert len(lg.get(f"/tables?season={season}&member={ms[0]}").get_json()["items"]) == 1
    rows = lg.get(f"/standings?season={season}").get_json()["rows"]
    assert {r["member"] for r in rows} == set(ms)
    assert lg.get(f"/members/{ms[0]}/ledger?season={season}").get_json()["transfers"]
    assert lg.get(f"/history?season={season}").data.count(b"\n") == 1


def test_clubs_tokens_the_last_owner_token_is_never_revoked(club: Club):
    """Clubs, tokens: DELETE .../tokens/{tid} revokes at once, but only an owner issues
    tokens: revoking the last live owner token locked the club out for good (every later
    request 401). Now a 409 last_owner_token that changes nothing; with a second owner
    token issued, either may go (and then the other is the last)."""
    lg = League(club)
    h = lg.h(lg.owner)
    tokens = club.c.get(lg.url("/tokens"), headers=h).get_json()["items"]
    first = next(t["id"] for t in tokens if t["role"] == "owner")
    v = lg.get("").get_json()["version"]
    r = club.c.delete(lg.url(f"/tokens/{first}"), headers=h)
    assert "issue another owner token" in club.problem(r, 409, "last_owner_token")["detail"]
    assert lg.get("").get_json()["version"] == v  # nothing appended
    assert club.c.get(lg.url("/tokens"), headers=h).status_code == 200  # still opens it
    # A second owner: the first may now be revoked (by itself), the second is the last.
    second = club.c.post(lg.url("/tokens"), json={"role": "owner", "label": "deputy"},
                         headers=h).get_json()
    assert club.c.delete(lg.url(f"/tokens/{first}"), headers=h).status_code == 204
    h2 = lg.h(second["token"])
    club.problem(club.c.delete(lg.url(f"/tokens/{second['id']}"), headers=h2), 409,
                 "last_owner_token")
    assert club.c.get(lg.url("/tokens"), headers=h2).status_code == 200
    # Scorer and viewer tokens are revoked as before.
    scorer = next(t["id"] for t in club.c.get(lg.url("/tokens"), headers=h2).get_json()[
        "items"] if t["role"] == "scorer")
    assert club.c.delete(lg.url(f"/tokens/{scorer}"), headers=h2).status_code == 204
    spec = club.c.get("/openapi.json").get_json()
    conflict = spec["paths"]["/v1/clubs/{club_id}/tokens/{token_id}"]["delete"][
        "responses"]["409"]
    assert "last_owner_token" in conflict["description"]
    assert "application/problem+json" in conflict["content"]


def test_clubs_tokens_two_owners_revoking_each_other_at_once_leave_one(club: Club, app):
    """The last-owner check is decided on the club each append is checked against: two
    owners revoking each other concurrently, one wins; the other is told 409 (or, asking
    after it lost its token, 401), and one owner token is left."""
    for _ in range(3):
        lg = League(club)
        second = club.c.post(lg.url("/tokens"), json={"role": "owner", "label": "deputy"},
                             headers=lg.h(lg.owner)).get_json()
        first = next(t["id"] for t in club.c.get(lg.url("/tokens"), headers=lg.h(
            lg.owner)).get_json()["items"] if t["role"] == "owner" and t["id"] != second["id"])
        jobs = [(lg.owner, second["id"]), (second["token"], first)]

        def revoke(client, jobs=jobs, lg=lg):
            token, tid = jobs.pop()
            return client.delete(lg.url(f"/tokens/{tid}"), headers=lg.h(token))

        answers = sorted(r.status_code for r in in_threads(app, 2, revoke))
        assert answers in ([204, 409], [204, 401]), answers
        lists = [club.c.get(lg.url("/tokens"), headers=lg.h(t))
                 for t in (lg.owner, second["token"])]
        assert sorted(r.status_code for r in lists) == [200, 401]
        live = next(r for r in lists if r.status_code == 200).get_json()["items"]
        assert [t["role"] for t in live].count("owner") == 1


def test_a_201_for_a_token_season_or_spectator_carries_the_location_that_reads_it(club: Club):
    """RFC 9110 15.3.2, as tables, clubs, members and webhooks: the 201s of a club token, a
    season and a spectator token had no Location, having no GET of their own. Each now
    reads at its Location (tokens without their secret, for the roles that list them);
    a revoked token reads 404, as it is gone from its list; the spec declares it all."""
    lg = League(club)
    h = lg.h(lg.owner)
    r = club.c.post(lg.url("/tokens"), json={"role": "viewer", "label": "screen"}, headers=h)
    tid = r.get_json()["id"]
    assert r.status_code == 201 and r.headers["Location"] == lg.url(f"/tokens/{tid}")
    got = club.c.get(r.headers["Location"], headers=h)
    assert got.get_json() == {"id": tid, "role": "viewer", "label": "screen"}
    club.problem(club.c.get(r.headers["Location"], headers=lg.h(lg.scorer)), 403,
                 "role_not_allowed")  # tokens are the owner's, as their list
    assert club.c.delete(r.headers["Location"], headers=h).status_code == 204
    club.problem(club.c.get(r.headers["Location"], headers=h), 404, "token_not_found")

    r = club.c.post(lg.url("/seasons"), json={"name": "Winter", "starts_on": "2026-11-01"},
                    headers=lg.h(lg.scorer))
    sid = r.get_json()["id"]
    assert r.status_code == 201 and r.headers["Location"] == lg.url(f"/seasons/{sid}")
    assert club.c.get(r.headers["Location"], headers=lg.h(lg.viewer)).get_json() == \
        r.get_json()
    club.c.post(lg.url(f"/seasons/{sid}/close"), json={}, headers=lg.h(lg.scorer))
    assert club.c.get(r.headers["Location"], headers=lg.h(lg.viewer)).get_json()["closed"]
    club.problem(lg.get("/seasons/sea_0000000000000000"), 404, "season_not_found")

    t = club.create(first_dealer=0)
    r = club.post(t, "/spectators", {"label": "bar screen"})
    spid = r.get_json()["id"]
    assert r.status_code == 201
    assert r.headers["Location"] == f"/v1/tables/{t.id}/spectators/{spid}"
    got = club.c.get(r.headers["Location"], headers=club.auth(t.admin))
    assert got.get_json() == {"id": spid, "label": "bar screen"}
    club.problem(club.c.get(r.headers["Location"], headers=club.auth(t.seats[0])), 403,
                 "admin_only")
    club.problem(club.c.get(r.headers["Location"], headers=club.auth(r.get_json()["token"])),
                 403, "admin_only")
    assert club.c.delete(r.headers["Location"], headers=club.auth(t.admin)).status_code == 204
    club.problem(club.c.get(r.headers["Location"], headers=club.auth(t.admin)), 404,
                 "spectator_not_found")

    spec = club.c.get("/openapi.json").get_json()
    for path, item in (("/v1/clubs/{club_id}/tokens", "/v1/clubs/{club_id}/tokens/{token_id}"),
                       ("/v1/clubs/{club_id}/seasons",
                        "/v1/clubs/{club_id}/seasons/{season_id}"),
                       ("/v1/tables/{table_id}/spectators",
                        "/v1/tables/{table_id}/spectators/{spectator_id}")):
        assert "Location" in spec["paths"][path]["post"]["responses"]["201"]["headers"], path
        assert "200" in spec["paths"][item]["get"]["responses"], item
    token_item = spec["paths"]["/v1/clubs/{club_id}/tokens/{token_id}"]["get"]
    schema = token_item["responses"]["200"]["content"]["application/json"]["schema"]
    ref = schema["$ref"].rsplit("/", 1)[-1]
    assert "token" not in spec["components"]["schemas"][ref]["properties"]


def test_hand_history_an_import_into_the_members_club_keeps_their_seats_and_standings(
        club: Club):
    """Hand history: an import is checked as if entered live. It dropped every seat's
    `member`, so an exported club table imported again counted for nobody in the standings.
    A seat keeps its member when the member is the club's; another club's (or an archived)
    member is refused as at a table's creation, and the file imports with the seat's
    member removed, that seat unlinked."""
    import json

    lg = League(club)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")]
    t = lg.table(ms, deal="results")
    assert club.start(t, {"result": RESULT_A}).status_code == 200
    ndjson = club.c.get(f"/v1/tables/{t.id}/history", headers=lg.h(lg.viewer)).data
    assert [s["member"] for s in json.loads(ndjson.splitlines()[0])["table"]["seats"]] == ms

    def post(lg: League, data: bytes):
        return club.c.post(lg.url("/tables/import"), data=data,
                           content_type="application/x-ndjson", headers=lg.h(lg.scorer))

    before = {r["member"]: r for r in lg.get("/standings").get_json()["rows"]}
    r = post(lg, ndjson)
    assert r.status_code == 201, r.get_json()
    copy = r.get_json()
    assert [s["member"] for s in copy["seats"]] == ms
    listed = next(x for x in lg.get("/tables").get_json()["items"] if x["id"] == copy["id"])
    assert [s["member"] for s in listed["seats"]] == ms
    assert [x["id"] for x in lg.get(f"/tables?member={ms[0]}").get_json()["items"]] == \
        [t.id, copy["id"]]
    after = {r["member"]: r for r in lg.get("/standings").get_json()["rows"]}
    for m in ms:
        assert after[m]["tables"] == 2 * before[m]["tables"] == 2
        assert after[m]["chips"] == 2 * before[m]["chips"]
        assert after[m]["hands"] == 2
    again = club.c.get(f"/v1/tables/{copy['id']}/history", headers=lg.h(lg.viewer)).data
    assert [s["member"] for s in json.loads(again.splitlines()[0])["table"]["seats"]] == ms

    # Another club: its members are not these; refused, nothing created, until unlinked.
    other = League(club, "Crown")
    r = post(other, ndjson)
    problem = club.problem(r, 422, "unknown_member")
    assert ms[0] in problem["detail"] and "remove the seat's member" in problem["detail"]
    assert other.get("/tables").get_json()["items"] == []
    unlinked = b"\n".join(
        json.dumps(doc | {"table": doc["table"] | {"seats": [
            {k: v for k, v in s.items() if k != "member"} for s in doc["table"]["seats"]]}}
        ).encode() for doc in map(json.loads, ndjson.splitlines()))
    r = post(other, unlinked)
    assert r.status_code == 201, r.get_json()
    assert [s["member"] for s in r.get_json()["seats"]] == [None] * 4
    assert other.get("/standings").get_json()["rows"] == []
    # An archived member takes no new table, imported or not.
    assert club.c.post(lg.url(f"/members/{ms[1]}/archive"), json={},
                       headers=lg.h(lg.scorer)).status_code == 200
    club.problem(post(lg, ndjson), 422, "member_archived")
    assert len(lg.get("/tables").get_json()["items"]) == 2


def test_club_tables_and_seasons_starts_on_and_ends_on_are_calendar_dates_written_yyyy_mm_dd(
        club: Club):
    """Club tables and seasons: starts_on and ends_on are dates (the spec: `format: date`,
    RFC 3339's full-date, 2026-11-01). Python's date.fromisoformat also reads ISO 8601's
    other spellings, so "20261101" made a season and "2026-W01-1" one starting on
    2025-12-29, a date the scorer never wrote. Now each is a 422 naming the field, as is
    such a ?since= or ?until= of the club's history; YYYY-MM-DD is read as before."""
    lg = League(club)
    h = lg.h(lg.scorer)
    v = lg.get("").get_json()["version"]
    for field, bad in (("starts_on", "20261101"), ("starts_on", "2026-W01-1"),
                       ("starts_on", "2026W011"), ("ends_on", "20261130"),
                       ("ends_on", "2026-W48-7")):
        body = {"name": "Winter", "starts_on": "2026-11-01"} | {field: bad}
        r = club.c.post(lg.url("/seasons"), json=body, headers=h)
        problem = club.problem(r, 422, "validation_error")
        assert field in problem["detail"], (bad, problem)
    assert lg.get("").get_json()["version"] == v  # nothing appended
    r = club.c.post(lg.url("/seasons"), json={"name": "Winter", "starts_on": "2026-11-01",
                                              "ends_on": "2027-02-28"}, headers=h)
    assert r.status_code == 201, r.get_json()
    assert (r.get_json()["starts_on"], r.get_json()["ends_on"]) == ("2026-11-01", "2027-02-28")
    for query in ("since=20261101", "until=2026-W48-7", "since=2026W011"):
        problem = club.problem(lg.get(f"/history?{query}"), 422, "invalid_filter")
        assert problem["field"] == query.split("=")[0]
    assert lg.get("/history?since=2026-01-01&until=2026-12-31").status_code == 200


def test_standings_csv_is_given_for_an_accept_of_text_csv_with_parameters_or_capitals(
        club: Club):
    """Standings: `Accept: text/csv` gives the rows as CSV. A media type's name is
    case-insensitive and may carry parameters (RFC 9110; text/csv's are charset and header,
    RFC 4180), but `text/csv; charset=utf-8`, `text/csv;header=present` and `TEXT/CSV`
    got JSON. Now they get the CSV; JSON stays the answer to JSON, */*, or a CSV weighed
    below JSON."""
    lg = League(club)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")]
    t = lg.table(ms, deal="results")
    assert club.start(t, {"result": RESULT_A}).status_code == 200
    plain = lg.get("/standings", headers={"Accept": "text/csv"})
    assert plain.mimetype == "text/csv" and plain.data.startswith(b"rank,member,name,")
    for accept in ("text/csv; charset=utf-8", "text/csv;header=present", "TEXT/CSV",
                   "Text/Csv; Charset=UTF-8", "application/json;q=0.5, text/csv;header=present",
                   "text/csv; q=0.9, application/json; q=0.1"):
        r = lg.get("/standings", headers={"Accept": accept})
        assert r.status_code == 200 and r.mimetype == "text/csv", accept
        assert r.data == plain.data, accept
    for accept in ("application/json", "*/*", "text/*", "text/csv;q=0.5, application/json",
                   "text/csv;charset=utf-8;q=0, application/json", "text/html"):
        r = lg.get("/standings", headers={"Accept": accept})
        assert r.status_code == 200 and r.mimetype == "application/json", accept


def test_conventions_a_club_write_that_changes_nothing_keeps_its_idempotency_key(club: Club):
    """Conventions: "repeating a request with the same key returns the first answer and
    appends nothing"; a key reused with another body is a 409. A club write that appended
    nothing (archiving an archived member, a rename to the name it has, enabling a webhook
    that is not disabled) kept no record of its key: its repeat after another write was a
    409 version_conflict instead of the first answer, and the same key with another body
    was carried out (the member renamed) instead of a 409 idempotency_conflict. Now such a
    write keeps its key, with the club's version it answered from."""
    lg = League(club)
    h = lg.h(lg.scorer)
    ann, bob = lg.member("Ann"), lg.member("Bob")
    assert club.c.post(lg.url(f"/members/{ann}/archive"), json={}, headers=h).status_code == 200

    def version() -> int:
        return lg.get("").get_json()["version"]

    v = version()
    archive = {"expected_version": v}
    first = club.c.post(lg.url(f"/members/{ann}/archive"), json=archive,
                        headers=h | {"Idempotency-Key": "archive-ann"})
    assert first.status_code == 200 and first.get_json()["archived"] is True
    assert version() == v  # nothing to append: Ann was archived already
    lg.member("Cat")  # the club moves on
    again = club.c.post(lg.url(f"/members/{ann}/archive"), json=archive,
                        headers=h | {"Idempotency-Key": "archive-ann"})
    assert again.status_code == 200, again.get_json()
    assert again.get_json() == first.get_json()
    assert version() == v + 1

    rename = club.c.patch(lg.url(f"/members/{bob}"), json={"name": "Bob"},
                          headers=h | {"Idempotency-Key": "rename-bob"})
    assert rename.status_code == 200 and rename.get_json()["name"] == "Bob"
    v = version()
    r = club.c.patch(lg.url(f"/members/{bob}"), json={"name": "Robert"},
                     headers=h | {"Idempotency-Key": "rename-bob"})
    club.problem(r, 409, "idempotency_conflict")
    assert lg.get(f"/members/{bob}").get_json()["name"] == "Bob"
    assert version() == v
    again = club.c.patch(lg.url(f"/members/{bob}"), json={"name": "Bob"},
                         headers=h | {"Idempotency-Key": "rename-bob"})
    assert again.status_code == 200 and again.get_json() == rename.get_json()
