"""RULES §2 (first dealer by lots, rotation), §3 (the deal), §10 and API.md "Fair deal"."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from ledger.core import events as ev
from ledger.core.rules.deal import commitment, deal, deal_order, lots, shuffle, shuffle_once
from ledger.core.rules.tiles import HI, LO, TILES, name, names
from tests.unit.rules_support import TS, Game, of_type, one

VECTOR_1 = ("1-1 6-4 4-1 5-3 5-4 1-0 6-0 6-1 5-0 3-3 4-4 2-1 5-2 4-3 0-0 3-1 4-2 6-5 6-6 6-3 "
            "5-1 6-2 4-0 5-5 3-2 2-2 3-0 2-0")
VECTOR_2 = ("6-5 5-3 6-3 2-1 6-6 6-1 5-2 3-2 2-0 4-0 3-3 4-4 5-0 6-2 4-3 6-0 6-4 4-2 3-0 3-1 "
            "0-0 2-2 5-1 1-0 4-1 1-1 5-4 5-5")
SEED_1 = bytes(32)
SEED_2 = bytes(range(32))


def _reference_shuffle(seed: bytes) -> list[int]:
    """API.md "Fair deal" written out independently of ledger.core.rules.deal."""
    def words():
        k = 0
        while True:
            block = hmac.new(seed, k.to_bytes(8, "big"), hashlib.sha256).digest()
            for i in range(0, 32, 4):
                yield int.from_bytes(block[i:i + 4], "big")
            k += 1

    stream = words()

    def uniform(n: int) -> int:
        while True:
            x = next(stream)
            if x < 2**32 - (2**32 % n):
                return x % n

    items = list(range(28))
    for i in range(27, 0, -1):
        j = uniform(i + 1)
        items[i], items[j] = items[j], items[i]
    return items


@pytest.mark.parametrize(("seed", "digest"), [
    (SEED_1, "66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925"),
    (SEED_2, "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd"),
])
def test_s10_fair_deal_commitment_vectors(seed, digest):
    assert commitment(seed) == digest


@pytest.mark.parametrize(("seed", "order"), [(SEED_1, VECTOR_1), (SEED_2, VECTOR_2)])
def test_s10_fair_deal_shuffle_vectors(seed, order):
    assert [name(t) for t in shuffle(seed)] == order.split()
    assert [name(t) for t in shuffle_once(seed)] == order.split()  # the uncached path


def test_s10_fair_deal_matches_an_independent_reference():
    for i in range(50):
        seed = hashlib.sha256(bytes([i])).digest()
        got = shuffle(seed)
        assert got == _reference_shuffle(seed) == shuffle_once(seed)
        assert sorted(got) == list(TILES)


def test_s10_fair_deal_reads_further_blocks_when_many_draws_are_rejected(monkeypatch):
    # With a limit of 2**31 half the words are rejected, so the first 4 HMAC blocks run out.
    from ledger.core.rules import deal as deal_module

    def reference(seed: bytes) -> list[int]:
        words = (int.from_bytes(hmac.new(seed, k.to_bytes(8, "big"), hashlib.sha256)
                                .digest()[i:i + 4], "big")
                 for k in range(10**6) for i in range(0, 32, 4))
        items = list(range(28))
        for i in range(27, 0, -1):
            x = next(words)
            while x >= 2**31:
                x = next(words)
            j = x % (i + 1)
            items[i], items[j] = items[j], items[i]
        return items

    monkeypatch.setattr(deal_module, "_LIMITS", (2**31,) * 29)
    deal_module._shuffled.cache_clear()
    try:
        for i in range(20):
            seed = hashlib.sha256(b"rejections" + bytes([i])).digest()
            assert shuffle(seed) == reference(seed) == deal_module.shuffle_once(seed)
    finally:
        deal_module._shuffled.cache_clear()


def test_s10_fair_deal_shuffle_is_a_fresh_list_every_time():
    first = shuffle(SEED_1)
    first.reverse()
    assert [name(t) for t in shuffle(SEED_1)] == VECTOR_1.split()


def test_s3_four_player_deal_of_the_first_vector():
    d = deal(shuffle(SEED_1), 4, 0)
    assert [name(t) for t in d.hands[1]] == "1-1 6-4 4-1 5-3 5-4".split()
    assert [name(t) for t in d.hands[2]] == "1-0 6-0 6-1 5-0 3-3".split()
    assert [name(t) for t in d.hands[3]] == "4-4 2-1 5-2 4-3 0-0".split()
    assert [name(t) for t in d.hands[0]] == "3-1 4-2 6-5 6-6 6-3".split()
    assert name(d.turn_up) == "5-1"
    assert HI[d.turn_up] == 5  # fives are trumps
    assert [name(t) for t in d.boneyard][:3] == ["6-2", "4-0", "5-5"]
    assert [name(t) for t in d.boneyard] == "6-2 4-0 5-5 3-2 2-2 3-0 2-0".split()


@pytest.mark.parametrize(("players", "boneyard"), [(2, 17), (3, 12), (4, 7)])
def test_s3_4_boneyard_sizes(players, boneyard):
    for dealer in range(players):
        d = deal(shuffle(SEED_2), players, dealer)
        assert len(d.boneyard) == boneyard
        assert all(len(h) == 5 for h in d.hands)
        every = [t for h in d.hands for t in h] + [d.turn_up] + list(d.boneyard)
        assert sorted(every) == list(TILES)


def test_s3_2_deal_starts_left_of_dealer_and_ends_with_dealer():
    order = shuffle(SEED_2)
    for players in (2, 3, 4):
        for dealer in range(players):
            assert deal_order(players, dealer)[-1] == dealer
            assert deal_order(players, dealer)[0] == (dealer + 1) % players
            d = deal(order, players, dealer)
            for k, seat in enumerate(deal_order(players, dealer)):
                assert d.hands[seat] == tuple(order[5 * k:5 * k + 5])
            assert d.turn_up == order[5 * players]
            assert d.boneyard == tuple(order[5 * players + 1:])


def test_s10_shuffled_hand_commits_then_reveals_the_seed():
    g = Game(deal="shuffled", players=4, dealer=0)
    started = g.shuffled(SEED_1)
    hs = one(started, ev.HandStarted)
    assert hs.commitment == commitment(SEED_1)
    dealt = one(started, ev.TilesDealt)
    assert dealt.hands == deal(shuffle(SEED_1), 4, 0).hands
    assert dealt.boneyard == deal(shuffle(SEED_1), 4, 0).boneyard
    assert one(started, ev.TrumpTurned).tile == deal(shuffle(SEED_1), 4, 0).turn_up
    # everyone drops: the hand ends and the seed is revealed with the order it gives
    for seat in (1, 2, 3):
        out = g.decide(seat, "drop")
    revealed = one(out, ev.SeedRevealed)
    assert revealed.seed == SEED_1.hex()
    assert list(revealed.order) == shuffle(SEED_1)
    assert hashlib.sha256(bytes.fromhex(revealed.seed)).hexdigest() == hs.commitment


# ---- §2 first dealer by lots -----------------------------------------------------------------

def _hi_lo(t: int) -> tuple[int, int]:
    return HI[t], LO[t]


def test_s2_lots_seat_i_draws_item_i_of_the_seed_shuffle():
    for players in (2, 3, 4):
        draws, _winner = lots(SEED_2, players)
        assert list(draws) == shuffle(SEED_2)[:players]


@pytest.mark.parametrize(("seed_byte", "drawn", "winner"), [
    (23, "6-4 6-0 5-5 4-1", 0),  # 6-4 > 6-0 > 5-5: the double is not above a higher end
    (24, "6-0 5-2 3-3 3-1", 0),  # higher end first, not the pip count (5-2 has 7 pips)
    (28, "5-3 6-2 6-5 5-5", 2),  # 6-5 beats 6-2 (lower end) and 5-5
    (4, "3-2 6-5 4-4 5-4", 1),
    (0, "1-1 6-4 4-1 5-3", 1),
])
def test_s2_lots_highest_deals_higher_end_then_lower_end(seed_byte, drawn, winner):
    draws, got = lots(bytes([seed_byte]) * 32, 4)
    assert [name(t) for t in draws] == drawn.split()
    assert got == winner


def test_s2_lots_ordering_example_from_the_rules():
    # "6-6 beats 6-5 beats 5-5 beats 5-4"
    ordered = TS("6-6 6-5 5-5 5-4")
    assert sorted(ordered, key=_hi_lo, reverse=True) == list(ordered)
    for i in range(200):
        seed = hashlib.sha256(b"lots" + bytes([i])).digest()
        for players in (2, 3, 4):
            draws, winner = lots(seed, players)
            assert _hi_lo(draws[winner]) == max(_hi_lo(t) for t in draws)


@pytest.mark.parametrize("variant", ["loo", "rounce"])
def test_s2_first_dealer_by_lots_is_recorded_with_its_seed(variant):
    seed = bytes([28]) * 32
    g = Game(variant=variant, deal="shuffled", dealer="lots", lots_seed=seed)
    chosen = one(g.events, ev.DealerChosen)
    assert chosen.method == "lots"
    assert chosen.seat == 2 == g.t.dealer
    assert chosen.seed == seed.hex()
    assert names(chosen.draws) == names(TS("5-3 6-2 6-5 5-5"))
    assert list(chosen.draws) == shuffle(seed)[:4]


def test_s2_first_dealer_named():
    g = Game(dealer=3)
    chosen = one(g.events, ev.DealerChosen)
    assert (chosen.method, chosen.seat, g.t.dealer) == ("named", 3, 3)


@pytest.mark.parametrize("bad", [4, -1, "seat", None, True])
def test_s2_first_dealer_must_be_a_seat_or_lots(bad):
    from ledger.core.errors import Invalid

    with pytest.raises(Invalid):
        Game(dealer=bad)


@pytest.mark.parametrize("players", [2, 3, 4])
def test_s2_deal_passes_left(players):
    g = Game(deal="shuffled", players=players, variant="rounce", dealer=players - 1)
    dealers = []
    for k in range(2 * players):
        started = g.shuffled(hashlib.sha256(bytes([k])).digest())
        dealers.append(one(started, ev.HandStarted).dealer)
        # everyone but the dealer passes (Rounce allows it with any number of players)
        d = g.t.dealer
        for s in deal_order(players, d)[:-1]:
            g.decide(s, "drop")
        assert not g.t.live
        g.settle()
        if g.t.status != "playing":
            break
    assert dealers == [(players - 1 + k) % players for k in range(len(dealers))]
    assert len(of_type(g.events, ev.HandStarted)) == len(dealers) >= 2
