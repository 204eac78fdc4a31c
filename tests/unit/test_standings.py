"""API.md Standings: the read model kept from the global position equals a fold of every
table, after any mix of hands, corrections and closes; it survives a restart (a new
projector carries on from the saved position) and rebuilding it from zero gives the same
rows."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from ledger.app.clubs import Clubs
from ledger.app.service import Ledger
from ledger.app.standings import NAME, StandingsProjector, standings_rows
from ledger.core import club as cl
from ledger.core import commands as c
from ledger.core.errors import LedgerError
from ledger.store.memory import MemoryStore

KINDS = (("loo", "pool"), ("loo", "points"), ("rounce", "points"))

table = st.tuples(st.just("table"), st.sampled_from(KINDS), st.integers(2, 4),
                  st.lists(st.booleans(), min_size=4, max_size=4), st.booleans())
step = st.one_of(
    table,
    st.tuples(st.just("hand"), st.integers(0, 9)),
    st.tuples(st.just("hand"), st.integers(0, 9)),
    st.tuples(st.just("hand"), st.integers(0, 9)),
    st.tuples(st.just("void"), st.integers(0, 9)),
    st.tuples(st.just("close"), st.integers(0, 9)),
    st.tuples(st.just("catch_up"), st.integers(1, 50)),
)


def _club_ledger() -> tuple[Ledger, Clubs, str, list[str], str]:
    from workers.queue import InlineDispatcher

    counter = itertools.count()
    d = InlineDispatcher()
    led = Ledger(MemoryStore(), d, seeds=lambda: next(counter).to_bytes(32, "big"))
    d.bind(ledger=led)
    clubs = Clubs(led)
    loaded, _token = clubs.create("Thursday club", None, None)
    club_id = loaded.id
    mids = [f"mem_{i:016x}" for i in range(5)]
    for i, mid in enumerate(mids):
        clubs.execute(club_id, lambda club, mid=mid, i=i: cl.join(club, mid, f"P{i}", None))
    season = "sea_0000000000000001"
    clubs.execute(club_id, lambda club: cl.start_season(club, season, "Autumn", "2026-09-01",
                                                        None))
    return led, clubs, club_id, mids, season


def _summary(rows: list[dict]) -> list[tuple]:
    return [tuple(r[k] for k in ("rank", "member", "name", "tables", "hands", "chips",
                                 "points", "games_won", "tricks", "loos", "looed_chips"))
            for r in rows]


def _run(steps: list[tuple], led: Ledger, clubs: Clubs, club_id: str, mids: list[str],
         season: str, projector: StandingsProjector,
         after: Callable[[], None] = lambda: None) -> list[str]:
    """`after` runs after every step. A "late" table (as an import, or a table created while
    other tables play) has a hand played before the club's stream lists it, at the next
    "link" step."""
    tables: list[str] = []
    unlinked: list[tuple[str, c.CreateTable, str]] = []
    for s in steps:
        if s[0] in ("table", "late"):
            (_, (variant, scoring), players, seated, in_season) = s
            members = tuple(mids[i] if seated[i] else None for i in range(players))
            cmd = c.CreateTable(variant=variant, scoring=scoring,
                                seats=tuple((f"B{i}", "random") for i in range(players)),
                                first_dealer=0, deal="shuffled",
                                options={"auto_deal": False, "target": 5},
                                club=club_id, season=season if in_season else None,
                                members=members)
            if s[0] == "late":  # created before a table and its listing committed together
                tid, _tokens, p = led.create_table(cmd)
                led.execute(tid, c.StartHand())
                unlinked.append((tid, cmd, p.table.opts.scoring))
            else:  # listed in the same transaction
                tid, _tokens, p = clubs.create_table(club_id, cmd, expected_version=None,
                                                     key=None, request_hash=None)
                tables.append(tid)
        elif s[0] == "link":
            for tid, cmd, scoring in unlinked:
                clubs.link_table(club_id, tid, cmd.season, cmd.members, cmd.variant, scoring)
                tables.append(tid)
            unlinked.clear()
        elif s[0] == "catch_up":
            projector.batch = s[1]
            projector.catch_up()
        elif tables:
            tid = tables[s[1] % len(tables)]
            t = led.load(tid).table
            try:
                if s[0] == "hand":
                    led.execute(tid, c.StartHand())
                elif s[0] == "void" and t.voidable:
                    led.execute(tid, c.VoidHand(number=t.voidable[-1].number, reason="typo"))
                elif s[0] == "close":
                    led.execute(tid, c.CloseTable())
            except LedgerError:
                pass  # refused by the rules (a finished game, a closed table): nothing appended
        after()
    return tables


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(table, min_size=1, max_size=3), st.lists(step, max_size=30),
       st.integers(1, 40))
def test_standings_read_model_equals_a_fold_of_every_table(tables, steps, batch):
    led, clubs, club_id, mids, season = _club_ledger()
    clubs.projector.batch = batch
    _run(tables + steps, led, clubs, club_id, mids, season, clubs.projector)
    loaded = clubs.load(club_id)
    for filters in ((None, None, None), (season, None, None), (None, "loo", "pool"),
                    (None, None, "points"), (None, "rounce", None)):
        live = clubs.standings(loaded, *filters)
        assert _summary(live["rows"]) == _summary(clubs.standings_by_scan(loaded,
                                                                          *filters)["rows"])
        assert live["as_of"] == led.store.read_all(0, 10**6)[-1].position
    before = clubs.standings(loaded)["rows"]
    # A restart: a new projector on the same store carries on from the saved position...
    restarted = StandingsProjector(led.store, batch=7)
    assert restarted.catch_up() == led.store.read_model_position(NAME)
    # ...and a rebuild from the first event gives the same rows.
    restarted.rebuild()
    assert _summary(clubs.standings(loaded)["rows"]) == _summary(before)


VIEWS = ((None, None, None), ("season", None, None), (None, None, "points"),
         ("season", None, "points"), (None, "rounce", None), (None, "loo", "points"),
         (None, "loo", None))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(table, min_size=1, max_size=4), st.lists(step, max_size=25))
def test_a_members_ledger_adds_up_to_their_standings_row_in_every_view(tables, steps):
    """RULES §9, API.md Standings: in a view mixing Loo for points (counting up) and Rounce
    (counting down) each Rounce table counts as its target minus its score; whatever the mix,
    a member's ledger in the same view (starts and scores `counted`, transfers) adds up to
    the member's row, and points rank the best first: the most, unless every points table
    of the view is Rounce (the fewest)."""
    led, clubs, club_id, mids, season = _club_ledger()
    _run(tables + steps, led, clubs, club_id, mids, season, clubs.projector)
    loaded = clubs.load(club_id)
    links = loaded.club.tables
    for view in VIEWS:
        filters = (season if view[0] else None, view[1], view[2])
        out = clubs.standings(loaded, *filters)
        kinds = {(t.variant, t.scoring) for t in links
                 if (filters[0] is None or t.season == filters[0])
                 and (filters[1] is None or t.variant == filters[1])
                 and (filters[2] is None or t.scoring == filters[2])}
        points_variants = {v for v, s in kinds if s == "points"}
        assert out["mixed_points"] == (points_variants == {"loo", "rounce"})
        if out["mixed_points"] and any(r["points"] for r in out["rows"]):
            event("a mixed view with points scored")
        for row in out["rows"]:
            book = clubs.member_ledger(loaded, row["member"], *filters)
            assert book["mixed_points"] == out["mixed_points"]
            assert sum(x["counted"] for x in book["starts"] + book["scores"]) == row["points"]
            chips = 0
            for x in book["transfers"]:
                me = f"seat:{x['seat']}"
                chips += (x["amount"] if x["to"] == me else 0) - (
                    x["amount"] if x["from"] == me else 0)
            assert chips == row["chips"]
        if filters[2] == "points":  # (Rounce alone: a member with no table there last)
            rounce = points_variants == {"rounce"}
            keys = [(-r["games_won"], int(rounce and r["tables"] == 0),
                     r["points"] if rounce else -r["points"]) for r in out["rows"]]
            assert keys == sorted(keys)
        # Every active member has a row, played or not (API.md Standings).
        assert {r["member"] for r in out["rows"]} >= set(mids)


late = st.tuples(st.just("late"), st.sampled_from(KINDS), st.integers(2, 4),
                 st.lists(st.booleans(), min_size=4, max_size=4), st.booleans())
link = st.tuples(st.just("link"), st.just(0))


def _untagged(items: list[dict], kind: str) -> list[dict]:
    return sorted(({k: v for k, v in x.items() if k != "kind"} for x in items
                   if x["kind"] == kind), key=repr)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(table, min_size=1, max_size=3),
       st.lists(st.one_of(step, late, link), max_size=25))
@example(tables=[("table", ("loo", "pool"), 2, [True] * 4, False)],  # a table listed late
         steps=[("late", ("loo", "pool"), 2, [True] * 4, False), ("hand", 0), ("link", 0),
                ("hand", 0)])
@example(tables=[("table", ("loo", "points"), 2, [True] * 4, True)],
         steps=[("hand", 0), ("late", ("rounce", "points"), 3, [True] * 4, True),
                ("hand", 0), ("link", 0), ("void", 0), ("hand", 1)])
def test_lists_a_members_ledger_items_only_append_so_a_cursor_skips_and_repeats_nothing(
        tables, steps):
    """API.md Lists and Standings: a member's ledger `items` (paged by an offset) are its
    starts, transfers and scores, each once, and whatever is played, voided, closed or
    listed in the club late (an import) meanwhile, a later answer is an earlier one with
    entries after it: so pages followed while hands are entered list every entry once."""
    led, clubs, club_id, mids, season = _club_ledger()
    views = ((None, None, None), (season, None, "points"))
    seen: dict[tuple, list[dict]] = {}

    def snapshot() -> None:
        loaded = clubs.load(club_id)
        for mid in mids[:2]:
            for view in views:
                # (`counted` is not the entry's: it follows the view's mixed_points, which a
                # Rounce table joining a view of Loo for points turns on)
                items = [{k: v for k, v in x.items() if k != "counted"}
                         for x in clubs.member_ledger(loaded, mid, *view)["items"]]
                before = seen.get((mid, view), [])
                assert items[:len(before)] == before, (mid, view)
                if len(items) > len(before) and before:
                    event("entries appended")
                seen[mid, view] = items

    _run(tables + steps + [("link", 0)], led, clubs, club_id, mids, season, clubs.projector,
         snapshot)
    loaded = clubs.load(club_id)
    for mid in mids:
        for view in VIEWS:
            filters = (season if view[0] else None, view[1], view[2])
            book = clubs.member_ledger(loaded, mid, *filters)
            for kind, name in (("transfer", "transfers"), ("score", "scores"),
                               ("start", "starts")):
                assert _untagged(book["items"], kind) == sorted(book[name], key=repr)
            assert len(book["items"]) == sum(len(book[n])
                                             for n in ("transfers", "scores", "starts"))


def test_a_mixed_view_counts_rounce_from_its_target_down():
    """A Rounce row's points in a view that also holds Loo for points: its start (the sum
    of its tables' targets) minus its score; alone, its score, the fewest first."""
    names = {"m1": "Ann", "m2": "Bob"}
    loo = [_row("m1", points=3) | {"scoring": "points"},
           _row("m2", points=2) | {"scoring": "points"}]
    rounce = [_row("m1", points=20, start=15) | {"variant": "rounce", "scoring": "points"},
              _row("m2", points=10, start=15) | {"variant": "rounce", "scoring": "points"}]
    out = standings_rows(loo + rounce, names, None, None, "points")
    assert [(r["member"], r["points"]) for r in out] == [("m2", 7), ("m1", -2)]
    out = standings_rows(rounce, names, None, "rounce", "points")
    assert [(r["member"], r["points"]) for r in out] == [("m2", 10), ("m1", 20)]


def test_a_projector_that_loses_the_race_counts_nothing_twice():
    led, clubs, club_id, mids, season = _club_ledger()
    _run([("table", ("loo", "pool"), 4, [True] * 4, True), ("hand", 0), ("hand", 0)],
         led, clubs, club_id, mids, season, clubs.projector)
    first, second = StandingsProjector(led.store), StandingsProjector(led.store)
    position = led.store.read_model_position(NAME)
    batch = led.store.read_all(position, 1000)
    rows = first._fold(batch)  # noqa: SLF001 - two projectors racing on one batch
    assert second.catch_up() == batch[-1].position
    assert not led.store.save_read_model(NAME, position, batch[-1].position, rows)
    loaded = clubs.load(club_id)
    assert _summary(clubs.standings(loaded)["rows"]) == _summary(
        clubs.standings_by_scan(loaded)["rows"])
    assert {r["hands"] for r in clubs.standings(loaded)["rows"] if r["tables"]} == {2}


def test_a_game_won_counts_after_its_table_is_closed():
    led, clubs, club_id, mids, season = _club_ledger()
    _run([("table", ("loo", "points"), 2, [True] * 4, True), ("hand", 0), ("close", 0)],
         led, clubs, club_id, mids, season, clubs.projector)
    loaded = clubs.load(club_id)
    for rows in (clubs.standings(loaded)["rows"], clubs.standings_by_scan(loaded)["rows"]):
        assert sum(r["games_won"] for r in rows) == 1


def _row(member: str, **figures: int) -> dict:
    return {"member": member, "season": None, "variant": "loo", "scoring": "pool",
            "tables": 1} | dict.fromkeys(("hands", "chips", "points", "games_won", "tricks",
                                          "loos", "looed_chips", "start"), 0) | figures


def test_standings_ties_share_a_rank_standard_competition_ranking():
    """Equal chips (pool), or equal games_won and points (points), share the better rank;
    the next rank counts every row above (1, 1, 3); within a tie by name, then member id."""
    names = {"m1": "Bea", "m2": "Ann", "m3": "Cy", "m4": "Ann", "m5": "Di"}
    pool = [_row("m1", chips=5, games_won=2), _row("m2", chips=5), _row("m3", chips=9),
            _row("m4", chips=5), _row("m5", chips=-19)]
    out = standings_rows(pool, names, None, None, None)
    assert [(r["rank"], r["member"]) for r in out] == [
        (1, "m3"), (2, "m2"), (2, "m4"), (2, "m1"), (5, "m5")]
    points = [_row(m, games_won=w, points=p) | {"scoring": "points"}
              for m, w, p in (("m1", 1, 10), ("m2", 1, 10), ("m3", 1, 12), ("m4", 0, 30),
                              ("m5", 1, 10))]
    out = standings_rows(points, names, None, None, "points")
    assert [(r["rank"], r["member"]) for r in out] == [
        (1, "m3"), (2, "m2"), (2, "m1"), (2, "m5"), (5, "m4")]
