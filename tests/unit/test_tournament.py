"""`loo tournament` (issue 18): duplicate seatings, standings, and the command's output."""

from __future__ import annotations

import re

from click.testing import CliRunner

from ledger.cli.main import main
from ledger.core.rules.bots import POLICIES
from ledger.core.rules.tournament import rotations, tournament


def test_every_policy_sits_in_every_seat_across_the_rotations():
    assert rotations(["a", "b"], 4) == [("a", "b", "a", "b"), ("b", "a", "b", "a")]
    seatings = rotations(["a", "b", "c"], 4)
    assert len(seatings) == 4
    for seat in range(4):
        assert {s[seat] for s in seatings} == {"a", "b", "c"}


def test_standings_rank_heuristic_over_random_on_duplicate_deals():
    table = {n: POLICIES[n][0] for n in ("heuristic", "random")}
    standings = tournament(["random", "heuristic"], table, deal_sets=10, hands=4)
    assert [s.policy for s in standings] == ["heuristic", "random"]
    assert [s.rank for s in standings] == [1, 2]
    assert all(s.seat_hands == 10 * 2 * 2 * 4 for s in standings)  # 2 seats, 2 seatings
    assert standings[0].per_hand[0] > standings[1].per_hand[0]


def test_rounce_points_tournament_counts_points_shed_as_won():
    table = {n: POLICIES[n][0] for n in ("heuristic", "random")}
    standings = tournament(["heuristic", "random"], table, seats=3, deal_sets=4, hands=4,
                           variant="rounce", scoring="points")
    assert {s.policy for s in standings} == {"heuristic", "random"}
    assert all(-5 <= s.per_hand[0] <= 5 for s in standings)


def test_loo_tournament_prints_a_standings_table():
    result = CliRunner().invoke(main, ["tournament", "--bots", "expert,heuristic,random",
                                       "--hands", "8", "--samples", "3"])
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if re.match(r"^[123] ", line)]
    assert len(rows) == 3 and {r.split()[1] for r in rows} == {"expert", "heuristic", "random"}
    assert "chips/hand" in result.output and "95% CI" in result.output
    bad = CliRunner().invoke(main, ["tournament", "--bots", "expert,nobot"])
    assert bad.exit_code == 2 and "unknown bot 'nobot'" in bad.output
    same = CliRunner().invoke(main, ["tournament", "--bots", "random,random"])
    assert same.exit_code == 2
    crowded = CliRunner().invoke(main, ["tournament", "--bots", "expert,heuristic,random",
                                        "--seats", "2"])
    assert crowded.exit_code == 2


def test_loo_tournament_counts_a_huge_number_of_hands_exactly(monkeypatch):
    """--hands 10**26 announced 100000000000000003623878656 hands (a float rounded the sets
    of 4); whole numbers now, so the line says what is asked for."""
    import ledger.cli.tournament as cli

    monkeypatch.setattr(cli, "tournament", lambda *a, **k: [])
    result = CliRunner().invoke(main, ["tournament", "--bots", "random,heuristic", "--hands",
                                       str(10**26 + 1)])
    assert result.exit_code == 0, result.output
    assert f"; {10**26 + 4} hands dealt in sets of 4" in result.output
