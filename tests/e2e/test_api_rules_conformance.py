"""RULES.md checked from outside, over HTTP, as a club's own checker would (both stores).

Random games (2-4 players, Loo and Rounce, pool and points, every stake and penalty option,
shuffled and recorded deals) played through the API with the admin and the seat tokens:
- `legal_actions` served to the seat to act equals an oracle written from the rule book's
  text (§4, §6), and every body outside it that we try is refused: 422 problem+json whose
  `type` links to the rule it cites, never a 5xx;
- every trick's winner and the next leader follow §6; every chip (§8) or point (§9) the
  ledger moved for a hand is recomputed from the hand's record; a points game ends as §9 says;
- replay equals live state (API.md "Hands"): each step of a hand's replay shows what
  `GET /v1/tables/{id}` showed at that step's version, for the same viewer (the replay opens
  every tile: a seat's view is compared with the replay's hand as that seat saw it).
"""

from __future__ import annotations

import hashlib
import hmac
import random
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.e2e.club import Club, Table

ALL = [f"{b}-{a}" for a in range(7) for b in range(a, 7)]


def ends(t: str) -> tuple[int, int]:
    hi, lo = (int(x) for x in t.split("-"))
    return max(hi, lo), min(hi, lo)


def is_trump(t: str, trump: int) -> bool:
    return trump in ends(t)  # §5: every tile bearing the trump suit, and only as a trump


def lead_suits(t: str, trump: int) -> list[int]:
    """§6 Leading: a trump leads trumps, a double its own suit, a plain tile either end."""
    hi, lo = ends(t)
    if is_trump(t, trump):
        return [trump]
    return [hi] if hi == lo else [hi, lo]


def follows(t: str, led: int, trump: int) -> bool:
    """§6.3: bears the led suit and is not a trump, unless trumps were led."""
    return is_trump(t, trump) if led == trump else led in ends(t) and not is_trump(t, trump)


def win_key(t: str, led: int, trump: int) -> tuple[int, int]:
    """§5, §6: trumps over the led suit; within a suit the double, then the other end."""
    hi, lo = ends(t)
    for kind, suit in ((2, trump), (1, led)):
        if (kind == 2 and is_trump(t, trump)) or (kind == 1 and follows(t, led, trump)):
            return kind, 7 if hi == lo else hi + lo - suit
    return -1, -1


@dataclass(frozen=True)
class Setup:
    players: int
    variant: str
    scoring: str
    deal: str
    options: dict[str, Any]
    first_dealer: Any
    seed: int
    hands: int


@st.composite
def setups(draw) -> Setup:
    players = draw(st.integers(2, 4))
    variant = draw(st.sampled_from(["loo", "rounce"]))
    scoring = "points" if variant == "rounce" else draw(st.sampled_from(["pool", "points"]))
    ante = draw(st.sampled_from([0, 5, 10]))
    options = {"ante": ante, "dealer_ante": draw(st.sampled_from([5, 10] if ante == 0
                                                                 else [0, 5, 15])),
               "loo_penalty": draw(st.sampled_from([{"mode": "uncapped"}, {"mode": "fixed"},
                                                    {"mode": "capped", "multiplier": 10},
                                                    {"mode": "capped", "multiplier": 5}])),
               "lead_trump_threshold": draw(st.integers(1, 3)),
               "target": draw(st.sampled_from([3, 6, 15])),
               "auto_deal": draw(st.booleans())}
    return Setup(players, variant, scoring,
                 draw(st.sampled_from(["shuffled", "recorded", "results"])),
                 options, draw(st.sampled_from(["lots", 0, players - 1])),
                 draw(st.integers(0, 2**32 - 1)), draw(st.integers(1, 3)))


# ---- the oracle: what RULES.md allows the seat to act now ------------------------------------

def key(body: dict[str, Any]) -> tuple:
    """An action body as a comparable value (a discard is a set of tiles)."""
    kind = body["type"]
    if kind == "decide":
        return (kind, body["choice"], body.get("take_turn_up", False),
                tuple(body.get("discard", [])), body.get("for_pool", False))
    if kind == "discard":
        return (kind, frozenset(body["tiles"]))
    return (kind, body["tile"], body.get("suit"))


@dataclass
class View:
    """The admin's view of the live hand, with the seat to act."""

    s: Setup
    hand: dict[str, Any]

    @property
    def seat(self) -> int:
        return self.hand["turn"]

    @property
    def held(self) -> list[str]:
        return self.hand["hands"][str(self.seat)]

    @property
    def current(self) -> dict[str, Any] | None:
        tricks = self.hand["tricks"]
        return tricks[-1] if tricks and tricks[-1]["winner"] is None else None

    @property
    def done(self) -> list[dict[str, Any]]:
        return [t for t in self.hand["tricks"] if t["winner"] is not None]

    @property
    def miss_draw(self) -> int:
        return 7 if self.s.players == 4 else 6  # §4: all seven with 4 players, else six

    def miss_left(self) -> bool:
        return self.hand["misses"] < (1 if self.s.players == 4 else 2)  # §4, §9 dummies


def oracle(v: View) -> set[tuple]:
    h, seat, trump = v.hand, v.seat, v.hand["trump"]
    if h["phase"] == "discarding":
        return {("discard", frozenset(c)) for c in combinations(v.held, v.miss_draw - 5)}
    if h["phase"] == "deciding":
        n, dealer = v.s.players, h["dealer"]
        out = {("decide", "play", False, (), False)}
        # README: on recorded 2-3 player tables a miss that must name its draw is not listed.
        if v.miss_left() and (v.s.deal == "shuffled" or h["boneyard_count"] == v.miss_draw):
            out.add(("decide", "miss", False, (), False))
        if n >= 3 or v.s.variant == "rounce":  # §4 drop; §9 Rounce passes with any number
            out.add(("decide", "drop", False, (), False))
        pools = [False]
        if seat == dealer:
            others = [s for s in range(n) if s != dealer and h["decisions"].get(str(s)) != "drop"]
            if (v.s.scoring == "pool" and n == 4 and len(others) == 1
                    and h["decisions"][str(others[0])] == "miss"):
                pools.append(True)  # §4 playing for the pool
        for pool in pools:
            out.add(("decide", "play", False, (), pool))
            if seat == dealer:  # §4: keep the hand, take the turn-up, discard one of the five
                out |= {("decide", "play", True, (t,), pool) for t in v.held}
        return out
    hand = v.held
    trumps = [t for t in hand if is_trump(t, trump)]
    cur = v.current
    if cur is None:
        won_last = bool(v.done) and v.done[-1]["winner"] == seat
        if len(trumps) >= v.s.options["lead_trump_threshold"] or (trumps and won_last):
            hand = trumps  # §6.1, §6.2
        return {("play", t, s) for t in hand for s in lead_suits(t, trump)}
    able = [t for t in hand if follows(t, cur["suit"], trump)]  # §6.3
    if not able and v.s.variant == "loo":
        able = trumps  # §6.4, Loo only
    return {("play", t, None) for t in (able or hand)}


def candidates(v: View, rng: random.Random) -> list[dict[str, Any]]:
    """Bodies legal or not, to try on the server."""
    h = v.hand
    outsider = rng.choice([t for t in ALL if t not in v.held and t != h["turn_up"]])
    if h["phase"] == "deciding":
        out: list[dict[str, Any]] = []
        for choice in ("play", "miss", "drop"):
            for pool in (False, True):
                out.append({"type": "decide", "choice": choice, "for_pool": pool})
                for t in [*v.held, h["turn_up"], outsider]:
                    out.append({"type": "decide", "choice": choice, "take_turn_up": True,
                                "discard": [t], "for_pool": pool})
        out.append({"type": "decide", "choice": "play", "discard": [v.held[0]]})
        out.append({"type": "decide", "choice": "play", "take_turn_up": True,
                    "discard": v.held[:2]})
        return out
    if h["phase"] == "discarding":
        need = v.miss_draw - 5
        out = [{"type": "discard", "tiles": list(c)} for k in (need - 1, need, need + 1)
               for c in combinations(v.held, k)]
        return out + [{"type": "discard", "tiles": [outsider, *v.held[:need - 1]]}]
    if v.current is None:
        return [{"type": "play", "tile": t, "suit": s} for t in ALL for s in range(7)] + [
            {"type": "play", "tile": t} for t in ALL]
    return [{"type": "play", "tile": t} for t in ALL]


def accepted_by_oracle(v: View, body: dict[str, Any], legal: set[tuple]) -> bool:
    if body["type"] == "play" and v.current is None and body.get("suit") is None:
        suits = lead_suits(body["tile"], v.hand["trump"])  # the suit goes without saying
        return len(suits) == 1 and ("play", body["tile"], suits[0]) in legal
    return key(body) in legal


# ---- settlement recomputed from the hand's record (§8, §9) -----------------------------------

@dataclass
class Books:
    pool: int = 0
    scores: list[int] | None = None


def expected_transfers(s: Setup, rec: dict[str, Any], books: Books) -> list[tuple]:
    """§8: stakes, tricks at P/5, the dealer's whole pool without play, loo penalties."""
    n, dealer, opts = s.players, rec["dealer"], s.options
    out = []
    if books.pool == 0 and opts["ante"]:
        out += [(f"seat:{x}", "pool", opts["ante"], "ante") for x in range(n)]
    if opts["dealer_ante"]:
        out.append((f"seat:{dealer}", "pool", opts["dealer_ante"], "dealer_ante"))
    p = books.pool + sum(a for _, _, a, _ in out)
    assert rec["pool_at_start"] == p  # §8.2
    decisions, won = rec["decisions"], rec["tricks_won"]
    if rec["won_without_play"] == dealer and str(dealer) not in decisions:
        pay = {dealer: p}  # §8.3: every other player dropped: the dealer takes the pool
        reason = "pool_award"
    else:
        pay = {x: won[str(x)] * (p // 5) for x in range(n)
               if not (rec["for_pool"] and x == dealer)}
        reason = "trick"
    out += [("pool", f"seat:{x}", a, reason) for x, a in pay.items() if a]
    cap = {"uncapped": None, "fixed": 5 * n,
           "capped": opts["loo_penalty"].get("multiplier", 0) * n}[opts["loo_penalty"]["mode"]]
    penalty = cap if opts["loo_penalty"]["mode"] == "fixed" else min(p, cap or p)
    looed = [x for x in range(n) if decisions.get(str(x)) != "drop" and won[str(x)] == 0
             and not (rec["for_pool"] and x == dealer)]  # §7
    assert sorted(rec["looed"]) == looed
    out += [(f"seat:{x}", "pool", penalty, "loo") for x in looed]
    books.pool = p - sum(pay.values()) + penalty * len(looed)
    return out


def expected_scores(s: Setup, rec: dict[str, Any]) -> list[tuple]:
    """§9: Loo +1 a trick, -5 looed; Rounce -1 a trick, +5 rounced; ±5 without play."""
    sign = -1 if s.variant == "rounce" else 1
    decisions, won = rec["decisions"], rec["tricks_won"]
    if rec["won_without_play"] is not None:
        return [(rec["won_without_play"], 5 * sign)]
    out = [(x, sign * won[str(x)]) for x in range(s.players) if won[str(x)]]
    out += [(x, -5 * sign) for x in range(s.players)
            if decisions.get(str(x)) != "drop" and won[str(x)] == 0]
    return out


def expected_winner(s: Setup, rec: dict[str, Any], before: list[int],
                    after: list[int]) -> int | None | str:
    """§9: the game ends when somebody reaches the goal; best score wins, ties to the first."""
    rounce = s.variant == "rounce"
    goal = (lambda x: x <= 0) if rounce else (lambda x: x >= s.options["target"])
    if not any(goal(x) for x in after):
        return "none"
    best = min(after) if rounce else max(after)
    leaders = [x for x in range(s.players) if after[x] == best]
    if len(leaders) == 1:
        return leaders[0]
    running = list(before)
    for trick in rec["tricks"]:
        w = trick["winner"]
        running[w] += -1 if rounce else 1
        if w in leaders and goal(running[w]):
            return w
    return None


# ---- the fair deal (API.md), written again from its text -------------------------------------

def fair_order(seed_hex: str) -> list[str]:
    """HMAC-SHA256 stream, rejection sampling, Fisher-Yates over the canonical order."""
    seed, words, k = bytes.fromhex(seed_hex), [], 0

    def uniform(n: int) -> int:
        nonlocal k
        while True:
            if not words:
                block = hmac.new(seed, k.to_bytes(8, "big"), hashlib.sha256).digest()
                words.extend(int.from_bytes(block[i:i + 4], "big") for i in range(0, 32, 4))
                k += 1
            x = words.pop(0)
            if x < 2**32 - (2**32 % n):
                return x % n

    items = [f"{b}-{a}" for a in range(7) for b in range(a, 7)]
    for i in range(27, 0, -1):
        j = uniform(i + 1)
        items[i], items[j] = items[j], items[i]
    return items


def check_fair_deal(club: Club, t: Table, s: Setup, number: int, dealer: int) -> None:
    """§3, §10: the revealed seed gives the deal, the turn-up, and every miss in order."""
    events = [e for e in club.get(t, path="/events?limit=1000").get_json()["events"]
              if e["hand"] == number]
    data = {e["type"]: e["data"] for e in events}
    order = fair_order(data["seed_revealed"]["seed"])
    assert hashlib.sha256(bytes.fromhex(data["seed_revealed"]["seed"])).hexdigest() == \
        data["hand_started"]["commitment"]
    for k in range(s.players):
        seat = (dealer + 1 + k) % s.players
        assert sorted(data["tiles_dealt"]["hands"][str(seat)]) == sorted(order[5 * k:5 * k + 5])
    assert data["trump_turned"]["tile"] == order[5 * s.players]
    assert data["trump_turned"]["trump"] == ends(order[5 * s.players])[0]
    # §3.3 the dealer exposes it; §9 Rounce: the player on the trump-holder's right
    assert data["trump_turned"]["exposed_by"] == (
        (dealer - 1) % s.players if s.variant == "rounce" else dealer)
    boneyard = order[5 * s.players + 1:]
    for e in events:
        if e["type"] == "miss_drawn":  # §3.4: drawn in shuffled order, never a discard
            n = len(e["data"]["tiles"])
            assert e["data"]["tiles"] == boneyard[:n]
            boneyard = boneyard[n:]


# ---- the driver --------------------------------------------------------------------------

def check_refused(r: Any, body: dict[str, Any]) -> None:
    assert r.status_code == 422, (body, r.status_code, r.get_json())
    assert r.mimetype == "application/problem+json"
    j = r.get_json()
    assert j["code"] and j["detail"], j
    if "rule" in j:
        assert j["type"].endswith(f"/docs/rules#rule-{j['rule']}"), j


def deal_recorded(club: Club, t: Table, s: Setup, rng: random.Random) -> None:
    tiles = ALL[:]
    rng.shuffle(tiles)
    dealer = club.view(t)["dealer"]
    hands = {str((dealer + 1 + k) % s.players): tiles[5 * k:5 * k + 5]
             for k in range(s.players)}
    r = club.start(t, {"hands": hands, "turn_up": tiles[5 * s.players]})
    assert r.status_code == 200, r.get_json()


def enter_result(club: Club, t: Table, s: Setup, dealer: int, rng: random.Random) -> None:
    """A results hand: decisions one seat at a time as §4 allows them, tricks among those in."""
    n, drop_ok = s.players, s.players >= 3 or s.variant == "rounce"
    decisions: dict[str, str] = {}
    misses = 0
    for seat in [(dealer + k) % n for k in range(1, n + 1)]:
        others_in = [x for x in decisions if decisions[x] != "drop"]
        if seat == dealer and not others_in:
            if rng.random() < 0.5:
                decisions[str(seat)] = "play"  # the dealer wins without play: may be said
            break
        allowed = ["play"] + ["miss"] * (misses < (1 if n == 4 else 2)) + ["drop"] * drop_ok
        decisions[str(seat)] = choice = rng.choice(allowed)
        misses += choice == "miss"
    others_in = [x for x in decisions if decisions[x] != "drop" and x != str(dealer)]
    for_pool = (s.scoring == "pool" and n == 4 and decisions.get(str(dealer)) == "play"
                and len(others_in) == 1 and decisions[others_in[0]] == "miss"
                and rng.random() < 0.5)
    active = [x for x in range(n) if decisions.get(str(x), "play") != "drop"]
    tricks = dict.fromkeys(map(str, range(n)), 0)
    for _ in range(5):
        tricks[str(rng.choice(active))] += 1
    result: dict[str, Any] = {"decisions": decisions, "for_pool": for_pool, "tricks": tricks}
    if len(active) == 1 and rng.random() < 0.5:
        del result["tricks"]  # the one left wins five: may go without saying
        if str(dealer) in decisions and decisions[str(dealer)] == "drop" and rng.random() < 0.5:
            del decisions[str(dealer)]
    r = club.start(t, {"result": result})
    assert r.status_code == 200, (result, r.get_json())


class Recorder(Club):
    """The client, keeping every table view the API answered (GET /v1/tables/{id} and the
    `table` of a write's answer) by version and by who asked, to set the replay against."""

    def __init__(self, club: Club) -> None:
        super().__init__(club.c)
        self.seen: dict[int, dict[str, dict[str, Any]]] = {}

    def _keep(self, r: Any, view: Any) -> Any:
        if r.status_code == 200 and isinstance(view, dict) and "viewer" in view:
            who = view["viewer"]
            self.seen.setdefault(view["version"], {})[f"{who['role']}:{who['seat']}"] = view
        return r

    def get(self, t: Table, token: str | None = None, path: str = "") -> Any:
        r = super().get(t, token, path)
        return self._keep(r, r.get_json()) if path == "" else r

    def post(self, t: Table, path: str, body: Any, token: str | None = None,
             headers: dict[str, str] | None = None) -> Any:
        r = super().post(t, path, body, token, headers)
        return self._keep(r, (r.get_json() or {}).get("table"))


def as_seen_by(hand: dict[str, Any], seat: int) -> dict[str, Any]:
    """A full-information hand as the seat sees it live (§10): the others' tiles, discards and
    the boneyard hidden, until the hand is complete."""
    if hand["phase"] in ("settling", "complete"):
        return hand
    out = dict(hand)
    out.pop("boneyard", None)
    for key in ("hands", "discards"):
        if key in hand:
            out[key] = {k: v if int(k) == seat else {"count": len(v)}
                        for k, v in hand[key].items()}
    return out


def check_replay(club: Recorder, t: Table, s: Setup, number: int, rng: random.Random) -> None:
    """Replay equals live state: at every step whose version was served live, the replay's
    state is the table view of that version, for the admin and for the seats alike (pool,
    balances, scores, dealer, status, the hand; at step 0 hand n has not begun: null)."""
    events = club.get(t, path=f"/hands/{number}").get_json()["events"]
    token = rng.choice(t.seats)  # the hand is complete: any seat may step through it
    first = club.get(t, token, f"/hands/{number}/replay?step=0").get_json()
    assert first["steps"] == len(events)
    checked = 0
    for k in range(len(events) + 1):
        version = events[k - 1]["version"] if k else events[0]["version"] - 1
        views = club.seen.get(version, {})
        if not views:
            continue
        state = club.get(t, token, f"/hands/{number}/replay?step={k}").get_json()["state"]
        for who, view in views.items():
            got = {"pool": state["pool"], "dealer": state["dealer"], "status": state["status"],
                   "balances": state["balances"], "scores": state["scores"]}
            want = {"pool": view["pool"], "dealer": view["dealer"], "status": view["status"],
                    "balances": {str(x["seat"]): x["balance"] for x in view["seats"]},
                    "scores": {str(x["seat"]): x["score"] for x in view["seats"]}}
            assert got == want, (number, k, who)
            if k == 0:
                assert state["hand"] is None
            else:
                role, seat = who.split(":")
                mine = state["hand"] if role == "admin" else as_seen_by(state["hand"], int(seat))
                assert mine == view["hand"], (number, k, who)
            checked += 1
    assert checked, "no step of the hand was seen live"


def play(club: Club, s: Setup) -> None:
    club = Recorder(club)
    rng = random.Random(s.seed)
    seats = [{"name": f"p{i}"} for i in range(s.players)]
    t = club.create(variant=s.variant, scoring=s.scoring, deal=s.deal, seats=seats,
                    first_dealer=s.first_dealer, options=s.options)
    v0 = club.view(t)
    dealer = v0["dealer"]
    if s.first_dealer != "lots":
        assert dealer == s.first_dealer
    else:  # §2 by lots: seat i draws item i of the seed's shuffle; the highest tile deals
        (chosen,) = [e["data"] for e in club.get(t, path="/events").get_json()["events"]
                     if e["type"] == "dealer_chosen"]
        draws = fair_order(chosen["seed"])[:s.players]
        assert chosen["draws"] == draws
        assert dealer == max(range(s.players), key=lambda x: ends(draws[x]))
    books = Books(scores=[s.options["target"] if s.variant == "rounce" else 0] * s.players)
    for number in range(1, s.hands + 1):
        table = club.view(t)
        if table["status"] != "playing":
            break
        if table["hand"] is None or table["hand"]["number"] < number:
            if s.deal == "recorded":
                deal_recorded(club, t, s, rng)
            elif s.deal == "results":
                enter_result(club, t, s, dealer, rng)
            else:
                assert not s.options["auto_deal"] or number == 1
                assert club.start(t).status_code == 200
        table = club.view(t)
        assert table["hand"]["number"] == number and table["hand"]["dealer"] == dealer  # §2
        for _ in range(40):
            table = club.view(t)
            h = table["hand"]
            if h["number"] != number or h["phase"] in ("settling", "complete"):
                break
            step(club, t, s, View(s, h), table["legal_actions"], rng)
        else:
            raise AssertionError("the hand does not end")
        rec = club.get(t, path=f"/hands/{number}").get_json()
        if s.deal == "shuffled":
            check_fair_deal(club, t, s, number, dealer)
        if s.deal != "results":
            check_tricks(s, rec)
        check_settlement(club, t, s, rec, books)
        check_replay(club, t, s, number, rng)
        dealer = (dealer + 1) % s.players  # §2: the deal passes to the left
    table = club.view(t)
    assert sum(x["balance"] for x in table["seats"]) + table["pool"] == 0  # §8.7
    if s.scoring == "pool":  # §8.8: the players close the game; the pool is left over
        if table["hand"]["phase"] == "complete":
            assert table["pool"] == books.pool
        r = club.post(t, "/close", {})
        assert r.status_code == 200 and r.get_json()["leftover"] == table["pool"], r.get_json()
        assert club.start(t).status_code == 422
    # §10: the record replays, every play was legal, chips are conserved
    audit = club.get(t, path="/audit").get_json()
    assert audit["ok"] is True and all(v is True for v in audit["checks"].values()), audit


def step(club: Club, t: Table, s: Setup, v: View, served: list[dict[str, Any]],
         rng: random.Random) -> None:
    seat = v.seat
    assert all(b.pop("seat") == seat for b in served)
    legal = {key(b) for b in served}
    assert len(legal) == len(served)
    assert legal == oracle(v), (v.hand["phase"], legal ^ oracle(v))
    seen = club.get(t, t.seats[seat]).get_json()
    assert {key(b) for b in seen["legal_actions"]} == legal  # the seat's token: the same
    # §10: a seat sees its own tiles and the turn-up, never another hand, a discard or the
    # boneyard (only how many tiles the others hold)
    hand = seen["hand"]
    assert hand["turn_up"] == v.hand["turn_up"] and "boneyard" not in hand
    for other in range(s.players):
        theirs, shown = v.hand["hands"][str(other)], hand["hands"][str(other)]
        assert shown == (theirs if other == seat else {"count": len(theirs)})
        if other != seat:
            assert hand["discards"][str(other)] == {"count": len(v.hand["discards"][str(other)])}
    for other in range(s.players):
        if other != seat:
            assert club.get(t, t.seats[other]).get_json()["legal_actions"] == []
    tried = [b for b in candidates(v, rng) if not accepted_by_oracle(v, b, legal)]
    for body in rng.sample(tried, min(5, len(tried))):
        check_refused(club.act(t, body | {"seat": seat}), body)
    moves = list(served)
    if (s.deal == "recorded" and v.hand["phase"] == "deciding" and v.miss_left()
            and ("decide", "miss", False, (), False) not in legal):
        drawn = rng.sample(v.hand["boneyard"], v.miss_draw)  # the scorer names the draw
        moves.append({"type": "decide", "choice": "miss", "drawn": drawn})
    body = rng.choice(moves)

    if rng.random() < 0.5:
        r = club.act(t, body, t.seats[seat])
    else:
        r = club.act(t, body | {"seat": seat})
    assert r.status_code == 200, (body, r.get_json())


def check_tricks(s: Setup, rec: dict[str, Any]) -> None:
    """§6: the eldest active player leads first, the highest trump (else led suit) wins, the
    winner leads next; five tricks, or none when §4 ends the hand."""
    h = rec["hand"]
    assert rec["complete"] and rec["settled"]
    tricks, trump = h["tricks"], h["trump"]
    if h["won_without_play"] is not None:
        assert tricks == [] and h["tricks_won"][str(h["won_without_play"])] == 5
        return
    assert len(tricks) == 5
    active = [x for x in range(s.players) if h["decisions"].get(str(x)) != "drop"]
    leader = next(x % s.players for x in range(h["dealer"] + 1, h["dealer"] + s.players + 1)
                  if x % s.players in active)
    for trick in tricks:
        assert trick["leader"] == leader == trick["plays"][0]["seat"]
        assert [p["seat"] for p in trick["plays"]] == [
            x % s.players for x in range(leader, leader + s.players) if x % s.players in active]
        best = max(trick["plays"], key=lambda p: win_key(p["tile"], trick["suit"], trump))
        assert trick["winner"] == best["seat"]
        leader = trick["winner"]


def check_settlement(club: Club, t: Table, s: Setup, rec: dict[str, Any], books: Books) -> None:
    h = rec["hand"]
    number = h["number"]
    table = club.view(t)
    ledger = club.get(t, path="/ledger").get_json()
    if s.scoring == "pool":
        want = expected_transfers(s, h, books)
        got = [(x["from"], x["to"], x["amount"], x["reason"]) for x in ledger["transfers"]
               if x["hand"] == number]
        assert sorted(got) == sorted(want), (h, got, want)
        if table["hand"]["number"] == number:
            assert table["pool"] == books.pool
        return
    before = list(books.scores)
    want = expected_scores(s, h)
    got = [(x["seat"], x["delta"]) for x in ledger["scores"] if x["hand"] == number]
    assert sorted(got) == sorted(want), (h, got, want)
    for x, delta in want:
        books.scores[x] += delta
    assert [x["score"] for x in table["seats"]] == books.scores
    winner = expected_winner(s, h, before, books.scores)
    if winner == "none":
        assert table["status"] == "playing" and table["winner"] is None
    else:
        assert table["status"] == "finished" and table["winner"] == winner, (table, winner)


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(setup=setups())
def test_rules_over_http_legal_actions_refusals_tricks_and_settlement(club: Club, setup: Setup):
    play(club, setup)
