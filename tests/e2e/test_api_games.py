"""Whole games over HTTP, in every variant and scoring mode, with seat tokens only."""

from __future__ import annotations

import json
import random
import re

import pytest

from tests.e2e.club import Club, Table

TILE = re.compile(r"\b[0-6]-[0-6]\b")


def play_out(club: Club, t: Table, hands: int, rng: random.Random) -> None:
    """Each seat acts with its own token from its legal_actions until `hands` are settled."""
    for _ in range(2000):
        views = [club.view(t, tok) for tok in t.seats]
        hand = views[0]["hand"]
        if views[0]["status"] != "playing" or (hand["number"] > hands) or (
                hand["number"] == hands and hand["phase"] == "complete"):
            return
        if hand["phase"] == "complete":
            assert club.start(t).status_code == 200
            continue
        acting = [(s, v) for s, v in enumerate(views) if v["legal_actions"]]
        assert len(acting) == 1, [v["legal_actions"] for v in views]
        seat, v = acting[0]
        body = rng.choice(v["legal_actions"])
        club.ok(t, body, t.seats[seat])
    raise AssertionError("game did not progress")


@pytest.mark.parametrize("variant,scoring,players", [
    ("loo", "pool", 4), ("loo", "pool", 3), ("loo", "points", 2), ("rounce", "points", 3),
    ("loo", "pool", 2), ("rounce", "points", 4),
])
def test_whole_game_with_seat_tokens(club: Club, variant, scoring, players):
    names = [{"name": f"P{i}"} for i in range(players)]
    t = club.create(variant=variant, scoring=scoring, seats=names, first_dealer="lots")
    play_out(club, t, 3, random.Random(players))
    view = club.view(t)
    ledger = club.get(t, path="/ledger").get_json()
    assert sum(ledger["balances"].values()) == 0
    if scoring == "points":
        assert {k: v for k, v in ledger["totals"].items()} == {
            f"seat:{s['seat']}": s["score"] for s in view["seats"]}
    audit = club.get(t, path="/audit").get_json()
    assert audit["ok"], audit


def test_bots_play_their_turns_in_process(club: Club):
    seats = [{"name": "Ann"}] + [{"name": f"Bot{i}", "bot": "heuristic"} for i in (1, 2, 3)]
    t = club.create(seats=seats, first_dealer=0)
    view = club.view(t, t.seats[0])
    # Seat 0 deals: the three bots decided before it, in turn.
    assert view["hand"]["turn"] == 0 and len(view["hand"]["decisions"]) == 3
    play_out(club, t, 2, random.Random(5))
    events = club.get(t, path="/events?limit=1000").get_json()["events"]
    bot_moves = [e for e in events if (e["causation"] or "").startswith("bot:heuristic@")]
    assert bot_moves


def test_expert_seats_play_their_turns_in_process(club: Club):
    """issue 18: a person against three experts; each expert move is caused by the expert."""
    seats = [{"name": "Ann"}] + [{"name": f"E{i}", "bot": "expert"} for i in (1, 2, 3)]
    t = club.create(seats=seats, first_dealer=0)
    assert [s["bot"] for s in club.view(t)["seats"]] == [None, "expert", "expert", "expert"]
    play_out(club, t, 1, random.Random(6))
    events = club.get(t, path="/events?limit=1000").get_json()["events"]
    assert [e for e in events if (e["causation"] or "").startswith("bot:expert@1")]
    assert club.get(t, path="/audit").get_json()["ok"]


def test_an_all_expert_table_plays_on_in_the_background_to_max_hands(club: Club):
    """issue 18: the experts think up to 200 ms a move; a run of theirs stops after
    SLOW_RUN_SECONDS and goes on off the request (the embedded default's timer thread), so
    creating an all-expert table answers long before its 12 hands are played."""
    from tests.integration.worker_helpers import wait_until

    seats = [{"name": f"E{i}", "bot": "expert"} for i in range(4)]
    r = club.c.post("/v1/tables", json={"seats": seats, "first_dealer": 0,
                                        "options": {"max_hands": 12}})
    assert r.status_code == 201, r.get_json()
    created = r.get_json()
    t = Table(created["id"], created["admin_token"], [s["token"] for s in created["seats"]],
              created)
    assert created["table"]["status"] == "playing"  # answered before the game ended
    wait_until(lambda: club.view(t)["status"] == "closed", timeout=300,
               what="12 expert hands played")
    assert club.view(t)["hand"]["number"] == 12
    assert club.get(t, path="/audit").get_json()["ok"]


def hidden_from(admin_view: dict, seat: int) -> set[str]:
    """Tiles `seat` must not see in this state (empty once the hand is complete)."""
    hand = admin_view["hand"]
    if hand["phase"] in ("complete", "settling"):
        return set()
    hidden = {x for s, ts in hand["hands"].items() if int(s) != seat for x in ts}
    hidden |= set(hand.get("boneyard", []))
    hidden |= {x for s, ts in hand["discards"].items() if int(s) != seat for x in ts}
    shown = {p["tile"] for tr in hand["tricks"] for p in tr["plays"]} | {hand["turn_up"]}
    return hidden - shown - set(hand["hands"][str(seat)])


def test_leak_seat_responses_never_show_hidden_tiles(club: Club):
    """Scan every body a seat receives for tiles it must not see at that moment."""
    rng = random.Random(11)
    t = club.create(first_dealer=0, seats=[{"name": "Ann"}, {"name": "Bob"},
                                           {"name": "Cat", "bot": "random"}, {"name": "Dan"}])
    checked = 0
    for _ in range(400):
        admin = club.view(t)
        hand = admin["hand"]
        if hand["number"] > 3:
            break
        if hand["phase"] == "complete":
            club.start(t)
            continue
        for seat, tok in enumerate(t.seats):
            hidden = hidden_from(admin, seat)
            for path in ("", "/events?limit=1000", f"/hands/{hand['number']}"):
                body = club.get(t, tok, path).get_json()
                if "events" in body:  # earlier, complete hands are open to everyone
                    body["events"] = [e for e in body["events"] if e["hand"] == hand["number"]]
                assert not set(TILE.findall(json.dumps(body))) & hidden, (path, seat)
                checked += 1
        seat = hand["turn"]
        legal = club.view(t, t.seats[seat])["legal_actions"]
        r = club.act(t, rng.choice(legal), t.seats[seat])
        assert r.status_code == 200
        now = club.view(t)
        after = hidden_from(now, seat)
        out = r.get_json()
        # Events of hands already complete are open to all; the live hand's are not.
        live = [e for e in out["events"] if e["hand"] == now["hand"]["number"]]
        assert not set(TILE.findall(json.dumps([live, out["table"]]))) & after
        wrong = next(s for s in range(4) if s != now["hand"]["turn"])
        bad = club.act(t, {"type": "play", "tile": "0-0"}, t.seats[wrong])
        assert bad.status_code == 422  # and its message names no hidden tile:
        assert not set(TILE.findall(bad.get_data(as_text=True))) & hidden_from(now, wrong) - {
            "0-0"}
    assert checked > 100


def test_replay_steps_through_a_complete_hand(club: Club):
    t = club.create(deal="results", first_dealer=0)
    club.start(t, {"result": {"decisions": {"0": "play", "1": "play", "2": "play", "3": "play"},
                              "tricks": {"0": 2, "1": 1, "2": 1, "3": 1}}})
    r0 = club.get(t, t.seats[1], "/hands/1/replay?step=0").get_json()
    assert r0["step"] == 0 and r0["event"] is None and r0["steps"] > 5
    last = club.get(t, t.seats[1], f"/hands/1/replay?step={r0['steps']}").get_json()
    assert last["event"]["type"] in ("hand_settled", "game_won")
    club.problem(club.get(t, path="/hands/9"), 404, "hand_not_found")
    club.problem(club.get(t, path="/hands/1/replay?step=-1"), 422)


def test_replay_of_a_live_hand_is_for_the_admin_only(club: Club):
    t = club.create(first_dealer=0)
    club.problem(club.get(t, t.seats[1], "/hands/1/replay?step=1"), 403)
    r = club.get(t, t.admin, "/hands/1/replay?step=7")
    assert r.status_code == 200 and r.get_json()["state"]["hand"]["hands"]["1"]
