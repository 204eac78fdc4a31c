"""Recorded tables end to end: misses naming `drawn`, the rule codes, the §8 settlement,
replay equal to the live state, the double-entry ledger and §8.8 at close."""

from __future__ import annotations

import pytest

from tests.e2e.club import Club, Table

THREE = [{"name": "A"}, {"name": "B"}, {"name": "C"}]
# Dealer 0; threes are trumps; the boneyard is the other twelve tiles.
DEAL3 = {"hands": {"1": ["6-6", "6-5", "6-4", "6-3", "6-2"],
                   "2": ["5-5", "5-4", "5-3", "5-2", "5-1"],
                   "0": ["4-4", "4-3", "4-2", "4-1", "4-0"]}, "turn_up": "3-3"}
DEAL4 = {"hands": {"1": ["6-6", "6-5", "6-4", "1-0", "2-0"],
                   "2": ["5-5", "5-4", "5-3", "3-0", "4-0"],
                   "3": ["4-4", "4-3", "4-2", "2-1", "3-1"],
                   "0": ["3-3", "3-2", "2-2", "1-1", "0-0"]}, "turn_up": "3-6"}


def _act(club: Club, t: Table, seat: int, **body) -> dict:
    r = club.act(t, body | {"seat": seat})
    assert r.status_code == 200, (body, r.get_json())
    return r.get_json()


def _refused(club: Club, t: Table, seat: int, code: str, rule: str, **body) -> None:
    j = club.problem(club.act(t, body | {"seat": seat}), 422, code)
    assert j["rule"] == rule, j


def _play_three_player_hand(club: Club, t: Table, live: dict[int, dict]) -> None:
    def step(seat: int, **body) -> None:
        _act(club, t, seat, **body)
        view = club.view(t)
        live[view["version"]] = view

    _refused(club, t, 1, "drawn_required", "4", type="decide", choice="miss")
    _refused(club, t, 1, "invalid_drawn", "4", type="decide", choice="miss",
             drawn=["0-0", "1-0", "1-1", "2-0", "2-1", "6-6"])
    step(1, type="decide", choice="miss", drawn=["0-0", "1-0", "1-1", "2-0", "2-1", "2-2"])
    _refused(club, t, 1, "invalid_discard", "4", type="discard", tiles=["0-0", "1-0"])
    step(1, type="discard", tiles=["0-0"])
    # The last miss takes the whole boneyard: offered, and accepted, without `drawn`.
    assert {"type": "decide", "choice": "miss", "seat": 2} in club.view(t)["legal_actions"]
    _refused(club, t, 2, "invalid_drawn", "4", type="decide", choice="miss",
             drawn=["0-0", "3-0", "3-1", "3-2", "5-0", "6-0"])  # 0-0 was discarded
    step(2, type="decide", choice="miss")
    step(2, type="discard", tiles=["3-2"])
    _refused(club, t, 0, "miss_unavailable", "4", type="decide", choice="miss")
    step(0, type="decide", choice="play", take_turn_up=True, discard=["4-0"])
    step(1, type="play", tile="2-2")
    _refused(club, t, 2, "must_trump", "6.4", type="play", tile="5-0")
    step(2, type="play", tile="3-0")
    _refused(club, t, 0, "must_follow_suit", "6.3", type="play", tile="4-4")
    step(0, type="play", tile="4-2")
    _refused(club, t, 2, "must_lead_trump", "6.2", type="play", tile="5-0", suit=5)
    for seat, tile in [(2, "3-1"), (0, "4-3"), (1, "1-0"), (0, "3-3"), (1, "1-1"),
                       (2, "6-1"), (0, "4-4"), (1, "2-0"), (2, "6-0")]:
        step(seat, type="play", tile=tile)
    step(0, type="play", tile="4-1", suit=1)
    step(1, type="play", tile="2-1")
    step(2, type="play", tile="5-0")


def test_s4_recorded_three_player_misses_and_s8_settlement(club: Club):
    t = club.create(deal="recorded", first_dealer=0, seats=THREE)
    assert club.start(t, DEAL3).status_code == 200
    live: dict[int, dict] = {}
    _play_three_player_hand(club, t, live)
    view = club.view(t)
    # P = 20, a trick 4: seat 0 won 4, seat 2 one, seat 1 was looed and pays P.
    assert view["hand"]["tricks_won"] == {"0": 4, "1": 0, "2": 1}
    assert view["hand"]["looed"] == [1]
    assert [s["balance"] for s in view["seats"]] == [-10 + 16, -5 - 20, -5 + 4]
    assert view["pool"] == 20
    ledger = club.get(t, path="/ledger").get_json()
    assert ledger["balances"] == {"seat:0": 6, "seat:1": -25, "seat:2": -1, "pool": 20}
    assert [(x["from"], x["to"], x["amount"], x["reason"]) for x in ledger["transfers"]
            if x["version"] > 10] == [("pool", "seat:0", 16, "trick"),
                                      ("pool", "seat:2", 4, "trick"),
                                      ("seat:1", "pool", 20, "loo")]
    assert club.get(t, path="/audit").get_json()["ok"]
    # Replay: each observed version's live state is the replayed state at that step.
    first = club.get(t, path="/hands/1").get_json()["events"][0]["version"]
    for version, seen in live.items():
        r = club.get(t, t.seats[1], f"/hands/1/replay?step={version - first + 1}").get_json()
        assert r["event"]["version"] == version
        state = r["state"]
        assert state["hand"] == seen["hand"]
        assert (state["pool"], state["dealer"], state["status"]) == (
            seen["pool"], seen["dealer"], seen["status"])
        assert state["balances"] == {str(s["seat"]): s["balance"] for s in seen["seats"]}
        assert state["scores"] == {str(s["seat"]): s["score"] for s in seen["seats"]}
    # §8.8: the pool is reported as left over at closing, not shared out.
    r = club.post(t, "/close", {})
    assert r.status_code == 200 and r.get_json()["leftover"] == 20
    assert club.get(t, path="/ledger").get_json()["balances"]["pool"] == 20


def test_s4_recorded_dealer_plays_for_the_pool_and_his_share_stays(club: Club):
    t = club.create(deal="recorded", first_dealer=0)
    assert club.start(t, DEAL4).status_code == 200
    _act(club, t, 1, type="decide", choice="miss")  # 4 players: the whole boneyard
    _act(club, t, 1, type="discard", tiles=["6-2", "6-1"])
    _act(club, t, 2, type="decide", choice="drop")
    _act(club, t, 3, type="decide", choice="drop")
    _act(club, t, 0, type="decide", choice="play", for_pool=True, take_turn_up=True,
         discard=["0-0"])
    for seat, tile, suit in [(1, "5-2", 5), (0, "6-3", None), (0, "3-3", None),
                             (1, "6-0", None), (1, "5-1", 5), (0, "3-2", None),
                             (1, "5-0", 5), (0, "2-2", None), (1, "4-1", 4), (0, "1-1", None)]:
        _act(club, t, seat, type="play", tile=tile, **({"suit": suit} if suit else {}))
    view = club.view(t)
    assert view["hand"]["tricks_won"]["0"] == 1 and view["hand"]["looed"] == []
    # P = 25: seat 1 is paid 4 x 5; the dealer's trick share (5) stays in the pool.
    assert [s["balance"] for s in view["seats"]] == [-10, -5 + 20, -5, -5]
    assert view["pool"] == 5


@pytest.mark.parametrize("options,stake,penalty", [
    ({"loo_penalty": {"mode": "fixed"}}, 25, 20),
    ({"loo_penalty": {"mode": "capped", "multiplier": 10}}, 25, 25),
    ({"loo_penalty": {"mode": "capped", "multiplier": 5}}, 25, 20),
    ({"ante": 50, "loo_penalty": {"mode": "capped", "multiplier": 20}}, 205, 80),
    ({"ante": 0, "dealer_ante": 10}, 10, 10),
])
def test_s8_5_loo_penalty_modes_and_stakes_on_results_tables(club: Club, options, stake,
                                                             penalty):
    t = club.create(deal="results", first_dealer=0, options=options)
    r = club.start(t, {"result": {"decisions": {str(s): "play" for s in range(4)},
                                  "tricks": {"0": 5}}})
    assert r.status_code == 200, r.get_json()
    assert r.get_json()["table"]["hand"]["pool_at_start"] == stake
    ledger = club.get(t, path="/ledger").get_json()
    loo = [x for x in ledger["transfers"] if x["reason"] == "loo"]
    assert [(x["from"], x["amount"], x["uncapped"]) for x in loo] == [
        (f"seat:{s}", penalty, stake) for s in (1, 2, 3)]
    assert sum(ledger["balances"].values()) == 0
    assert ledger["balances"]["pool"] == 3 * penalty  # the dealer took all P in tricks
