"""API.md Phase 2 (clubs) held to its word from outside, on both stores: each test is named
after the section it checks and failed before the change it came with."""

from __future__ import annotations

from tests.e2e.club import Club
from tests.e2e.test_api_clubs import RESULT_A, League


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
