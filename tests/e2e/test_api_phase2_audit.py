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
