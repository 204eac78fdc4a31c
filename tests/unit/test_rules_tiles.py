"""RULES §1 (equipment), §3.3 (trumps from the turn-up), §5 (ranking and trumps), §6 (winning)."""

from __future__ import annotations

import pytest

from ledger.core.errors import Invalid
from ledger.core.rules.tiles import (
    CANONICAL,
    TILES,
    follows,
    is_trump,
    name,
    names,
    parse_tile,
    rank,
    sort_tiles,
    suits_of,
    tile,
    trick_winner,
    trump_of,
)
from tests.unit.rules_support import TS, T


def test_s1_double_six_set_has_28_tiles_in_canonical_order():
    assert len(TILES) == 28 == len(set(CANONICAL))
    assert CANONICAL[0] == (0, 0) and CANONICAL[1] == (0, 1) and CANONICAL[7] == (1, 1)
    assert CANONICAL[-1] == (6, 6)
    assert all(0 <= a <= b <= 6 for a, b in CANONICAL)
    assert [name(t) for t in TILES[:8]] == ["0-0", "1-0", "2-0", "3-0", "4-0", "5-0", "6-0",
                                            "1-1"]


def test_s1_tile_written_high_end_first_and_parsed_either_way():
    for a, b in CANONICAL:
        t = tile(a, b)
        assert tile(b, a) == t
        assert name(t) == f"{b}-{a}"
        assert parse_tile(f"{a}-{b}") == parse_tile(f"{b}-{a}") == t
    assert name(parse_tile("3-6")) == "6-3"


@pytest.mark.parametrize("bad", ["7-1", "6", "6-3-1", "", "a-b", "-1-2", None, 63, ["6", "3"],
                                 " 2-0", "2-0 ", " 2-0 ", "2-0\n", "\t0-2", "\u00a02-0"])
def test_s1_parse_refuses_non_tiles(bad):
    with pytest.raises(Invalid) as info:
        parse_tile(bad)
    assert info.value.code == "invalid_tile"


def test_s1_names_sorted_highest_first():
    assert names(TS("1-0 6-6 5-5 6-5 6-0")) == ["6-6", "6-5", "6-0", "5-5", "1-0"]
    assert sort_tiles(TS("5-4 6-0")) == [T("6-0"), T("5-4")]


def test_s3_trump_suit_is_turn_up_higher_end():
    assert trump_of(T("6-2")) == 6
    assert trump_of(T("2-6")) == 6
    assert trump_of(T("3-3")) == 3
    assert trump_of(T("1-0")) == 1
    assert trump_of(T("0-0")) == 0


def test_s5_rank_within_suit_double_on_top_then_other_end():
    suit5 = TS("5-5 6-5 5-4 5-3 5-2 5-1 5-0")
    assert sorted(suit5, key=lambda t: rank(t, 5), reverse=True) == list(suit5)
    ranks = [rank(t, 5) for t in suit5]
    assert ranks == sorted(ranks, reverse=True) and len(set(ranks)) == 7
    # the same tile ranks by its *other* end in each of its suits
    assert rank(T("6-1"), 6) < rank(T("6-2"), 6)
    assert rank(T("6-1"), 1) > rank(T("5-1"), 1)


def test_s5_every_tile_bearing_the_trump_suit_is_a_trump():
    for trump in range(7):
        trumps = [t for t in TILES if is_trump(t, trump)]
        assert len(trumps) == 7
        assert all(trump in CANONICAL[t] for t in trumps)


def test_s5_trump_tile_never_follows_plain_suit():
    # 3-5 with fives trump is a trump, and only a trump: never a three
    assert is_trump(T("3-5"), 5)
    assert not follows(T("3-5"), 3, 5)
    assert follows(T("3-5"), 5, 5)
    assert suits_of(T("3-5"), 5) == (5,)
    for trump in range(7):
        for led in range(7):
            if led == trump:
                continue
            for t in TILES:
                if is_trump(t, trump):
                    assert not follows(t, led, trump)


def test_s5_double_of_trumps_is_the_highest_tile():
    for trump in range(7):
        top = tile(trump, trump)
        for led in range(7):
            for other in TILES:
                if other == top:
                    continue
                plays = [(0, other), (1, top)]
                assert trick_winner(plays, led, trump) == 1
                assert trick_winner(list(reversed(plays)), led, trump) == 1


def test_s5_double_belongs_to_its_own_suit_only():
    assert suits_of(T("3-3"), 6) == (3,)
    assert follows(T("3-3"), 3, 6)
    assert not any(follows(T("3-3"), led, 6) for led in (0, 1, 2, 4, 5))


def test_s5_any_trump_beats_any_non_trump():
    trump = 2
    lowest_trump = T("2-0")
    for led in range(7):
        if led == trump:
            continue
        for t in TILES:
            if not is_trump(t, trump):
                assert trick_winner([(0, t), (1, lowest_trump)], led, trump) == 1


def test_s6_leading_suits_trump_as_trumps_double_own_plain_either_end():
    assert suits_of(T("6-3"), 5) == (6, 3)
    assert suits_of(T("6-3"), 3) == (3,)
    assert suits_of(T("4-4"), 1) == (4,)
    assert suits_of(T("1-1"), 1) == (1,)


def test_s6_3_following_trumps_any_trump_follows():
    assert follows(T("6-0"), 6, 6)
    assert follows(T("6-6"), 6, 6)
    assert not follows(T("5-0"), 6, 6)


def test_s6_3_following_plain_suit_needs_that_end_and_no_trump():
    # sixes led, fives trump
    assert follows(T("6-3"), 6, 5)
    assert follows(T("6-6"), 6, 5)
    assert not follows(T("6-5"), 6, 5)  # a trump
    assert not follows(T("4-3"), 6, 5)


def test_s6_trick_won_by_highest_trump():
    # threes led, ones trump: 1-0 (lowest trump) vs 1-1 (double of trumps) vs 3-3
    plays = [(0, T("3-3")), (1, T("1-0")), (2, T("1-1")), (3, T("3-2"))]
    assert trick_winner(plays, 3, 1) == 2


def test_s6_trick_without_trump_won_by_highest_of_led_suit():
    plays = [(2, T("4-2")), (3, T("6-4")), (0, T("6-6")), (1, T("4-4"))]
    assert trick_winner(plays, 4, 1) == 1
    plays = [(2, T("4-2")), (3, T("6-4")), (0, T("6-6")), (1, T("4-3"))]
    assert trick_winner(plays, 4, 1) == 3


def test_s6_tile_neither_following_nor_trumping_never_wins():
    # twos led (leader's 2-0), fives trump; 6-6 is the highest plain tile but cannot win
    assert trick_winner([(0, T("2-0")), (1, T("6-6")), (2, T("4-4"))], 2, 5) == 0
    # led as zeros the same tile ranks by the other end
    assert trick_winner([(0, T("2-0")), (1, T("1-0"))], 0, 5) == 0
    assert trick_winner([(0, T("2-0")), (1, T("3-0"))], 0, 5) == 1
    assert trick_winner([(0, T("2-0")), (1, T("3-0"))], 2, 5) == 0
