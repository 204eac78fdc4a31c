"""RQ workers on real Redis and PostgreSQL: bots, settlement, races, crashes, penalty caps."""

from __future__ import annotations

import random
import threading
import uuid
from typing import Any

import pytest
from rq.job import JobStatus

from ledger.app import handlers
from ledger.app.service import JOB_ADVANCE, Ledger
from ledger.bootstrap import Settings, bootstrap, open_database
from ledger.core import commands as c
from ledger.core.rules.legal import legal_actions
from ledger.store.base import EventStore
from tests.integration.worker_helpers import (
    blocked_backends,
    check_table,
    drain,
    four_bots,
    hand_done,
    hold_version,
    kill9,
    play_hands,
    seeded,
    wait_until,
    worker_process,
)
from workers.queue import InlineDispatcher, RqDispatcher, rq_job_id

pytestmark = [pytest.mark.postgres, pytest.mark.redis]


def test_four_bot_table_plays_20_hands_through_rq(store: EventStore, queue: Any,
                                                  worker_ledger: Ledger) -> None:
    ledger = Ledger(store, RqDispatcher(queue))
    table_id, _, _ = ledger.create_table(four_bots())
    play_hands(ledger, table_id, 20, run_jobs=lambda: drain(queue))
    book = check_table(store, table_id, hands=20)
    assert any(t["reason"] == "loo" for t in book["transfers"])
    assert queue.count == 0 and queue.failed_job_registry.count == 0


def test_all_bot_table_with_auto_deal_plays_to_max_hands_through_rq_and_closes(
        store: EventStore, queue: Any, worker_ledger: Ledger) -> None:
    """API.md, Tables: auto_deal means the same whoever sits; max_hands closes the table."""
    ledger = Ledger(store, RqDispatcher(queue))
    table_id, _, p = ledger.create_table(four_bots(auto_deal=True, max_hands=6))
    assert p.table.status == "playing"  # the answer is the table as created: jobs follow
    wait_until(lambda: (drain(queue), ledger.load(table_id).table.status)[1] == "closed",
               what="the all-bot table to close itself")
    check_table(store, table_id, hands=6)
    [closed] = [e for e in store.load(table_id) if e.type == "table_closed"]
    assert closed.data["reason"] == "max_hands" and closed.data["abandoned_hand"] is None
    assert queue.count == 0 and queue.failed_job_registry.count == 0


def test_bot_turns_record_policy_and_version(store: EventStore, queue: Any,
                                            worker_ledger: Ledger) -> None:
    ledger = Ledger(store, RqDispatcher(queue))
    table_id, _, _ = ledger.create_table(four_bots())
    play_hands(ledger, table_id, 1, run_jobs=lambda: drain(queue))
    moves = [e for e in store.load(table_id) if e.type in ("player_decided", "tile_played")]
    assert moves and all(e.causation.startswith("bot:heuristic@") for e in moves)


def test_mixed_table_waits_for_people_and_moves_bots_on_their_turn(
        store: EventStore, queue: Any, worker_ledger: Ledger) -> None:
    ledger = Ledger(store, RqDispatcher(queue), seeds=seeded(1))
    seats = (("Ann", None), ("Bot B", "heuristic"), ("Cat", None), ("Bot D", "heuristic"))
    cmd = c.CreateTable(variant="loo", scoring="pool", seats=seats, first_dealer=0,
                        deal="shuffled")
    table_id, _, _ = ledger.create_table(cmd)
    rng = random.Random(1)
    while ledger.load(table_id).table.hand.number < 3:  # auto_deal starts each next hand
        drain(queue)
        p = ledger.load(table_id)
        assert handlers.next_command(p) is None  # the workers left nothing undone
        h = p.table.hand
        assert h is not None and h.turn is not None and seats[h.turn][1] is None
        ledger.execute(table_id, c.Act(rng.choice(legal_actions(h, h.turn))))
    check_table(store, table_id)
    for e in store.load(table_id):
        if e.type in ("player_decided", "tile_played", "tiles_discarded"):
            bot = seats[e.data["seat"]][1] is not None
            assert e.causation.startswith("bot:") == bot, e


def test_racing_workers_never_double_move_or_settle(db_url: str, store: EventStore,
                                                    queue: Any, worker_ledger: Ledger,
                                                    redis_url: str) -> None:
    ledger = Ledger(store, RqDispatcher(queue), seeds=seeded(2))
    tables = [ledger.create_table(four_bots())[0] for _ in range(3)]
    other = Ledger(open_database(Settings(database_url=db_url), upgrade=False))
    for number in range(1, 7):
        for t in tables:  # the test starts every hand (four_bots: no auto_deal)
            ledger.execute(t, c.StartHand())
        if number % 2:
            # Duplicates of every job under other ids (rq cannot dedupe them), and the
            # deterministic id again (a no-op), then two workers over the same queue.
            for t in tables:
                version = ledger.load(t).version
                for _ in range(2):
                    queue.enqueue(JOB_ADVANCE, t, version, job_id=f"dup-{uuid.uuid4().hex}")
                ledger.dispatch(t)
            drain(queue, workers=2)
        else:
            # `advance` twice for the same version by two ledgers with their own caches
            # and connections, released together: the database picks one.
            queue.empty()
            for t in tables:
                _race_advance([worker_ledger, other], t, ledger.load(t).version)
        for t in tables:
            wait_until(lambda t=t: hand_done(ledger, t), what=f"table {t} hand {number}")
    other.store.close()
    # Two real `loo worker --burst` processes over the same duplicated jobs.
    for t in tables:
        ledger.execute(t, c.StartHand())
        version = ledger.load(t).version
        queue.enqueue(JOB_ADVANCE, t, version, job_id=f"dup-{uuid.uuid4().hex}")
    procs = [worker_process(db_url, redis_url, queue.name, "--burst", "--reconcile-every", "0")
             for _ in range(2)]
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        assert proc.returncode == 0, out.decode(errors="replace")
    for t in tables:
        assert hand_done(ledger, t)
        check_table(store, t, hands=7)
    assert queue.failed_job_registry.count == 0


def _race_advance(ledgers: list[Ledger], table_id: str, version: int) -> None:
    barrier = threading.Barrier(len(ledgers))
    results: list[str] = []
    errors: list[BaseException] = []

    def run(ledger: Ledger) -> None:
        try:
            barrier.wait(timeout=10)
            results.append(ledger.advance(table_id, version))
        except BaseException as err:  # noqa: BLE001 - reported below, in the test thread
            errors.append(err)

    threads = [threading.Thread(target=run, args=(lg,)) for lg in ledgers]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=30)
    assert not errors, errors
    assert sorted(results) == ["idle", "stale"]  # one plays the hand out, one stands down


@pytest.mark.parametrize("held", [1, 3], ids=["at_its_first_move", "at_its_third_move"])
def test_worker_killed_mid_job_its_job_is_retried_by_rq(held: int, db_url: str,
                                                        store: EventStore, queue: Any,
                                                        redis_url: str) -> None:
    """No reconciler: the job's execution stops being heartbeated, rq's started-registry
    cleanup (run by the other worker's maintenance) retries it, and the hand ends."""
    ledger = Ledger(store, RqDispatcher(queue), seeds=seeded(3))
    worker = worker_process(db_url, redis_url, queue.name, "--reconcile-every", "0")
    fresh = None
    try:
        table_id, _, _ = ledger.create_table(four_bots())
        play_hands(ledger, table_id, 2)  # the running worker plays these
        version = ledger.execute(table_id, c.StartHand(), dispatch=False).projection.version
        # Block the append that would write version + held, so the kill lands mid-job.
        with hold_version(db_url, table_id, version + held) as hold:
            ledger.dispatch(table_id)
            (backend,) = wait_until(lambda: blocked_backends(hold), what="worker blocked")
            job = queue.fetch_job(rq_job_id(f"advance:{table_id}:{version}"))
            assert job is not None and job.get_status() == JobStatus.STARTED
            kill9(worker)
            # A killed client's transaction dies with it; end it now rather than when
            # PostgreSQL notices the closed socket.
            hold.execute("SELECT pg_terminate_backend(%s)", (backend,))
        p = ledger.load(table_id)
        assert handlers.next_command(p) is not None  # stuck: waiting on a worker
        # A job's moves are one append: killed mid-job, it leaves all or none of them.
        assert p.version == version
        fresh = worker_process(db_url, redis_url, queue.name, "--reconcile-every", "0")
        wait_until(lambda: hand_done(ledger, table_id), timeout=30, what="the job retried")
        check_table(store, table_id, hands=3)
    finally:
        for proc in (worker, fresh):
            if proc is not None and proc.poll() is None:
                kill9(proc)


# ---- penalty caps (RULES §8.5) -----------------------------------------------------------

CAP_MODES = [pytest.param({"mode": "uncapped"}, None, id="uncapped"),
             pytest.param({"mode": "fixed"}, 20, id="fixed"),
             pytest.param({"mode": "capped", "multiplier": 10}, 40, id="capped10")]


def _expected_penalty(pool: int, cap: int | None, mode: str) -> int:
    """§8.5: uncapped = P; fixed = 5 x players; capped = min(P, m x players)."""
    if mode == "fixed":
        assert cap is not None
        return cap
    return pool if cap is None else min(pool, cap)


def _results_hand(decisions: dict[int, str], tricks: dict[int, int] | None = None,
                  for_pool: bool = False) -> c.StartHand:
    result: dict[str, Any] = {"decisions": {str(s): d for s, d in decisions.items()},
                              "for_pool": for_pool}
    if tricks is not None:
        result["tricks"] = {str(s): n for s, n in tricks.items()}
    return c.StartHand(result=result)


@pytest.mark.parametrize(("penalty", "cap"), CAP_MODES)
def test_loo_with_a_large_pool_pays_the_capped_penalty(penalty: dict[str, Any],
                                                       cap: int | None,
                                                       store: EventStore) -> None:
    """A results table: for-pool hands grow the pool, then two players are looed."""
    ledger = Ledger(store)
    cmd = c.CreateTable(variant="loo", scoring="pool", seats=tuple((n, None) for n in "ABCD"),
                        first_dealer=0, deal="results", options={"loo_penalty": penalty})
    table_id, _, _ = ledger.create_table(cmd)
    pool = 0  # the model of §8.1-8.4 the ledger must agree with
    for _ in range(3):
        dealer = ledger.load(table_id).table.dealer
        assert dealer is not None
        left, others = (dealer + 1) % 4, [(dealer + k) % 4 for k in (2, 3)]
        # The dealer plays for the pool against one player who took the miss (§4): the
        # dealer's five tricks stay in the pool and the other player is looed into it.
        ledger.execute(table_id, _results_hand(
            {dealer: "play", left: "miss", others[0]: "drop", others[1]: "drop"},
            {dealer: 5, left: 0}, for_pool=True))
        pool += 25 if pool == 0 else 5
        pool += _expected_penalty(pool, cap, penalty["mode"])
    dealer = ledger.load(table_id).table.dealer
    assert dealer is not None
    seats = [(dealer + k) % 4 for k in range(4)]
    out = ledger.execute(table_id, _results_hand(
        {s: "play" for s in seats}, {seats[1]: 3, seats[2]: 2, seats[3]: 0, seats[0]: 0}))
    big = pool + 5
    assert big == {"uncapped": 235, "fixed": 100, "capped": 145}[penalty["mode"]]
    assessed = [e.data for e in out.stored if e.type == "penalty_assessed"]
    paid = _expected_penalty(big, cap, penalty["mode"])
    assert paid == {"uncapped": 235, "fixed": 20, "capped": 40}[penalty["mode"]]
    assert sorted(a["seat"] for a in assessed) == sorted([seats[0], seats[3]])
    for a in assessed:
        assert (a["uncapped"], a["cap"], a["amount"], a["mode"]) == (big, cap, paid,
                                                                     penalty["mode"])
    book = check_table(store, table_id, hands=4)
    loo = [t for t in book["transfers"] if t["reason"] == "loo" and t["hand"] == 4]
    assert sorted((t["from"], t["amount"]) for t in loo) == sorted(
        (f"seat:{s}", paid) for s in (seats[0], seats[3]))
    # Each penalty points at its cause, the looed player's event before it.
    stored = {e.version: e for e in store.load(table_id)}
    for e in stored.values():
        if e.type == "penalty_assessed":
            cause = stored[int(e.causation.removeprefix("event:"))]
            assert cause.type == "player_looed" and cause.data["seat"] == e.data["seat"]


@pytest.mark.parametrize(("penalty", "cap"), CAP_MODES)
def test_worker_settlement_applies_the_penalty_cap(penalty: dict[str, Any], cap: int | None,
                                                   store: EventStore, queue: Any,
                                                   worker_ledger: Ledger) -> None:
    """Shuffled all-bot hands settled by the RQ worker; every penalty follows §8.5."""
    ledger = Ledger(store, RqDispatcher(queue), seeds=seeded(0))
    table_id, _, _ = ledger.create_table(four_bots(loo_penalty=penalty))
    play_hands(ledger, table_id, 8, run_jobs=lambda: drain(queue))
    check_table(store, table_id, hands=8)
    pool, at_start, capped = 0, 0, 0
    for e in store.load(table_id):
        d = e.data
        if e.type == "stake_posted":
            pool += d["amount"]
            at_start = pool
        elif e.type == "tricks_paid":
            pool -= sum(d["payments"].values())
        elif e.type == "penalty_assessed":
            expected = _expected_penalty(at_start, cap, penalty["mode"])
            assert (d["uncapped"], d["cap"], d["amount"]) == (at_start, cap, expected)
            pool += d["amount"]
            capped += expected < at_start
    # These seeds loo players with pools above the caps, so the cap really applied.
    assert capped > 0 if cap is not None else capped == 0


# ---- the embedded default ----------------------------------------------------------------

def test_embedded_default_plays_20_hands_without_redis(db_url: str) -> None:
    container = bootstrap(Settings(database_url=db_url))  # no REDIS_URL: jobs in-process
    try:
        assert container.queue is None and isinstance(container.dispatcher, InlineDispatcher)
        ledger = container.ledger
        table_id, _, _ = ledger.create_table(four_bots())
        play_hands(ledger, table_id, 20)
        check_table(container.store, table_id, hands=20)
    finally:
        container.close()
