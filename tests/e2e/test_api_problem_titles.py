"""Problem documents (API.md Conventions, RFC 9457) say the same `title` for the same
status whoever refuses: the schema (webargs), a value the service refuses, a rule of the
rule book, a bad filter (both stores). Clients match on `code`; the title is for people and
must not depend on the path the request took."""

from __future__ import annotations

from typing import Any

from tests.e2e.club import Club
from tests.e2e.test_api_clubs import League
from tests.e2e.test_api_rules import DEAL, undecided

UNPROCESSABLE = "Unprocessable content"


def test_every_422_has_one_title(club: Club):
    t, two = undecided(club, players=3), undecided(club, players=2)
    lg = League(club)
    c, admin = club.c, club.auth(t.admin)
    base = f"/v1/tables/{t.id}"
    answers: dict[str, Any] = {
        # the body against the schema (webargs): unknown field, wrong type, padded tile
        "unknown field": club.act(t, {"type": "decide", "choice": "play", "colour": 1},
                                  t.seats[1]),
        "wrong type": club.act(t, {"type": "decide", "choice": "play", "seat": "one"}),
        "padded tile": club.act(t, {"type": "play", "tile": " 6-3"}, t.seats[1]),
        "creation": c.post("/v1/tables", json={"seats": [{"name": "Ann"}]}),
        # values the service refuses (Invalid)
        "invalid seat": club.act(t, {"type": "decide", "choice": "play", "seat": 3}),
        "seat required": club.act(t, {"type": "decide", "choice": "play"}),
        "invalid deal": club.start(club.create(deal="recorded"), {"hands": DEAL["hands"]}),
        # the rule book (RuleViolation)
        "not your turn": club.act(t, {"type": "decide", "choice": "play"}, t.seats[2]),
        "drop not allowed": club.act(two, {"type": "decide", "choice": "drop"}, two.seats[1]),
        # filters and query values
        "bad after": c.get(f"{base}/events?after=x", headers=admin),
        "unknown filter": c.get(f"{base}/events?afer=3", headers=admin),
        "step out of range": c.get(f"{base}/hands/1/replay?step=999", headers=admin),
        "club filter": c.get(lg.url("/tables?status=sleeping"), headers=lg.h(lg.viewer)),
        "club limit": c.get(lg.url("/members?limit=0"), headers=lg.h(lg.viewer)),
    }
    codes = {}
    for what, r in answers.items():
        j = club.problem(r, 422)
        codes[what] = j["code"]
        assert j["title"] == UNPROCESSABLE, (what, j)
    # The sweep covers each way a 422 is made: schema, refused value, rule, filter.
    assert codes["unknown field"] == "validation_error"
    assert codes["invalid seat"] == "invalid_seat"
    assert codes["not your turn"] == "not_your_turn"
    assert codes["drop not allowed"] == "drop_not_allowed"
    assert codes["unknown filter"] == "unknown_filter"
    assert "rule" in answers["not your turn"].get_json()


def test_other_statuses_have_one_title_too(club: Club):
    """404 from an unknown route (werkzeug) and from an unknown table (the service) alike."""
    t = club.create()
    titles = {club.c.get("/v1/nowhere").get_json()["title"],
              club.c.get("/v1/tables/tbl_nope", headers=club.auth(t.admin)).get_json()["title"]}
    assert titles == {"Not found"}
    bad_json = club.c.post(f"/v1/tables/{t.id}/actions", data="{", headers=club.auth(t.admin),
                           content_type="application/json").get_json()
    assert bad_json["title"] == "Bad request" and bad_json["code"] == "malformed_json"
