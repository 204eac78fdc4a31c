"""API.md Phase 2 read line by line against the app (an outside-style audit): each test here
failed before the fix it came with, and is named after the section it holds the app to."""

from __future__ import annotations

from tests.e2e.club import Club
from tests.e2e.test_api_clubs import League


def test_standings_a_view_whose_tables_all_count_points_ranks_by_games_won_then_points(
        club: Club):
    """API.md Standings: "sorted by chips for pool scoring and by games_won then points for
    points scoring". Rounce is always points (API.md Tables), so ?variant=rounce, and a view
    without ?scoring= whose tables all count points, are points scoring. They were ranked by
    chips, which no points table moves: every member shared rank 1, listed by name, the
    member rounced (20 points, the worst at Rounce) first."""
    lg = League(club)
    ann, bob, cat = (lg.member(n) for n in ("Ann", "Bob", "Cat"))
    t = lg.table([ann, bob, cat], deal="results", variant="rounce")
    result = {"decisions": {"0": "play", "1": "play", "2": "play"},
              "tricks": {"0": 0, "1": 2, "2": 3}}  # Ann rounced 15+5, Bob 15-2, Cat 15-3
    assert club.start(t, {"result": result}).status_code == 200
    want = [(1, "Cat", 12), (2, "Bob", 13), (3, "Ann", 20)]
    for view in ("?variant=rounce", "", "?scoring=points"):
        rows = lg.get(f"/standings{view}").get_json()["rows"]
        assert [(r["rank"], r["name"], r["points"]) for r in rows] == want, view
        csv = lg.get(f"/standings{view}", headers={"Accept": "text/csv"}).data.decode()
        assert [line.split(",")[:3] for line in csv.splitlines()[1:]] == [
            [str(rank), r["member"], name]
            for (rank, name, _), r in zip(want, rows, strict=True)], view
    # Loo for points as well: the most points first.
    dan, eve = lg.member("Dan"), lg.member("Eve")
    loo = lg.table([dan, eve], deal="results", scoring="points")
    result = {"decisions": {"0": "play", "1": "play"}, "tricks": {"0": 1, "1": 4}}
    assert club.start(loo, {"result": result}).status_code == 200
    rows = lg.get("/standings?variant=loo").get_json()["rows"]
    assert [(r["rank"], r["name"], r["points"]) for r in rows][:2] == [(1, "Eve", 4),
                                                                       (2, "Dan", 1)]
    # A view mixing pool and points tables is neither: ranked by chips, as before.
    pool = lg.table([ann, bob], deal="results")
    result = {"decisions": {"0": "play", "1": "play"}, "tricks": {"0": 2, "1": 3}}
    assert club.start(pool, {"result": result}).status_code == 200
    rows = lg.get("/standings").get_json()["rows"]
    assert [r["chips"] for r in rows] == sorted((r["chips"] for r in rows), reverse=True)


# ---- Conventions: the OpenAPI spec documents the contract's fields --------------------------

# What API.md names in each answer: (method, path, status) -> {JSON path in the body: fields}
# ("" the body, "x[]" each item of x). A client generated from /openapi.json gets these as
# fields that are always there (required), each with a declared type.
ANSWERS: dict[tuple[str, str, str], dict[str, set[str]]] = {
    ("post", "/v1/tables", "201"): {"": {"id", "admin_token", "seats", "version"},
                                    "seats[]": {"seat", "name", "bot", "token"}},
    ("post", "/v1/tables/{table_id}/actions", "200"): {"": {"version", "events", "table"}},
    ("post", "/v1/tables/{table_id}/close", "200"): {"": {"version", "events", "table",
                                                          "leftover"}},
    ("post", "/v1/tables/{table_id}/spectators", "201"): {"": {"token"}},
    ("get", "/v1/tables/{table_id}/hint", "200"): {"": {"action", "why"}},
    ("get", "/v1/bots", "200"): {"": {"items", "next"}, "items[]": {"name"}},
    ("post", "/v1/clubs", "201"): {"": {"id", "name", "version", "token"}},
    ("get", "/v1/clubs/{club_id}", "200"): {"": {"id", "name", "version", "members",
                                                 "tables"}},
    ("post", "/v1/clubs/{club_id}/tokens", "201"): {"": {"id", "role", "label", "token"}},
    ("get", "/v1/clubs/{club_id}/tokens", "200"): {"items[]": {"id", "role", "label"}},
    ("post", "/v1/clubs/{club_id}/members", "201"): {"": {"id", "name", "external_id",
                                                          "archived"}},
    ("get", "/v1/clubs/{club_id}/members/{member_id}", "200"): {
        "": {"id", "name", "external_id", "archived"}},
    ("get", "/v1/clubs/{club_id}/members", "200"): {
        "items[]": {"id", "name", "external_id", "archived"}},
    ("post", "/v1/clubs/{club_id}/seasons", "201"): {"": {"id", "name", "starts_on",
                                                          "ends_on"}},
    ("post", "/v1/clubs/{club_id}/tables", "201"): {
        "": {"id", "admin_token", "seats", "version"},
        "seats[]": {"seat", "name", "bot", "token"}},
    ("get", "/v1/clubs/{club_id}/standings", "200"): {
        "": {"as_of", "rows"},
        "rows[]": {"rank", "member", "name", "tables", "hands", "chips", "points",
                   "games_won", "tricks", "loos", "looed_chips"}},
    ("get", "/v1/clubs/{club_id}/members/{member_id}/ledger", "200"): {
        "transfers[]": {"table", "hand", "version"}, "scores[]": {"table", "hand", "version"}},
    ("get", "/v1/clubs/{club_id}/events", "200"): {
        "items[]": {"version", "position", "type", "hand", "data", "stream"},
        "events[]": {"version", "position", "type", "hand", "data", "stream"}},
    ("post", "/v1/clubs/{club_id}/webhooks", "201"): {"": {"id", "url", "events", "secret"}},
    ("get", "/v1/clubs/{club_id}/webhooks", "200"): {"items[]": {"id", "url", "events"}},
}
PROBLEM_FIELDS = {"type", "title", "status", "detail", "code"}


def _resolve(spec: dict, node: dict) -> dict:
    while "$ref" in node:
        node = spec["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _at(spec: dict, schema: dict, where: str) -> dict:
    node = _resolve(spec, schema)
    for part in filter(None, where.split(".")):
        name = part.removesuffix("[]")
        node = _resolve(spec, node["properties"][name])
        if part.endswith("[]"):
            node = _resolve(spec, node["items"])
    return node


def test_conventions_the_openapi_spec_requires_every_field_api_md_names_in_an_answer(
        club: Club):
    """API.md: the contract is to be documented in the OpenAPI spec served at /openapi.json,
    and "field names below are the contract". The Phase 2 answers' schemas (and creation,
    action, close, spectator, hint and bot answers) declared their fields but required none,
    so every client generated from the spec had an optional `token` on a new club, an
    optional `id` on a member, ...; the standings' rows, a member's transfers and scores
    and the club feed's events were untyped objects, and a problem's five members were
    optional too. Each field API.md names is now required, with its type."""
    spec = club.c.get("/openapi.json").get_json()
    missing = []
    for (method, path, status), wanted in ANSWERS.items():
        content = spec["paths"][path][method]["responses"][status]["content"]
        for where, fields in wanted.items():
            node = _at(spec, content["application/json"]["schema"], where)
            lacking = fields - set(node.get("required", ()))
            untyped = {f for f in fields if not {"type", "$ref", "allOf", "oneOf"} & set(
                node.get("properties", {}).get(f, {}))}
            if lacking or untyped:
                missing.append((method, path, where, sorted(lacking), sorted(untyped)))
    problem = spec["components"]["schemas"]["Problem"]
    if PROBLEM_FIELDS - set(problem.get("required", ())):
        missing.append(("Problem", sorted(PROBLEM_FIELDS - set(problem.get("required", ())))))
    assert not missing, missing


def test_club_tables_a_seat_with_neither_member_nor_name_is_refused_naming_a_field_it_has(
        club: Club):
    """API.md Club tables: a seat names {"member": mid} or a name. A seat with neither was
    refused naming a field no seat has, `seats.0.seats` (in `detail` and in `errors`, which
    a form reads to mark the box): it names the seat's `name` (a member's seat may leave it
    out), and nothing is created."""
    lg = League(club)
    for seat in ({}, {"bot": "random"}, {"member": None}, {"member": None, "name": None}):
        r = club.c.post(lg.url("/tables"), headers=lg.h(lg.scorer),
                        json={"seats": [{"name": "Ann"}, seat], "first_dealer": 0})
        problem = club.problem(r, 422, "validation_error")
        assert problem["errors"]["json"] == {"seats": {"1": {"name": [
            'a seat needs "member" (a member id) or "name"']}}}, (seat, problem)
        assert problem["detail"].startswith(
            'the request does not match the schema: seats.1.name: a seat needs "member"')
    assert lg.get("/tables").get_json()["items"] == []
