"""API.md "Hands": replay `step` is 0..steps; anything else is a 422, never clamped."""

from __future__ import annotations

from tests.e2e.club import Club, Table

RESULT = {"result": {"decisions": {"0": "play", "1": "play", "2": "play", "3": "play"},
                     "tricks": {"0": 2, "1": 1, "2": 1, "3": 1}}}


def _hand(club: Club) -> tuple[Table, int]:
    t = club.create(deal="results", first_dealer=0)
    assert club.start(t, RESULT).status_code == 200
    steps = club.get(t, t.seats[1], "/hands/1/replay").get_json()["steps"]
    return t, steps


def test_replay_without_step_is_step_0(club: Club):
    t, steps = _hand(club)
    r = club.get(t, t.seats[1], "/hands/1/replay").get_json()
    assert r["step"] == 0 and r["event"] is None and steps > 5
    assert r == club.get(t, t.seats[1], "/hands/1/replay?step=0").get_json()


def test_replay_step_past_steps_is_step_out_of_range_not_clamped(club: Club):
    t, steps = _hand(club)
    last = club.get(t, t.seats[1], f"/hands/1/replay?step={steps}").get_json()
    assert last["step"] == steps and last["event"] is not None
    for k in (steps + 1, steps + 50, 10**30):
        j = club.problem(club.get(t, t.seats[1], f"/hands/1/replay?step={k}"), 422)
        assert j["code"] in ("step_out_of_range", "validation_error"), j
    j = club.problem(club.get(t, t.seats[1], f"/hands/1/replay?step={steps + 1}"), 422,
                     "step_out_of_range")
    assert str(steps) in j["detail"]


def test_replay_step_not_an_integer_or_negative_is_422(club: Club):
    t, _steps = _hand(club)
    for k in ("-1", "1.5", "x", "", "1e2", "0x1"):
        j = club.problem(club.get(t, t.seats[1], f"/hands/1/replay?step={k}"), 422)
        assert j["code"] in ("step_out_of_range", "validation_error"), (k, j)
