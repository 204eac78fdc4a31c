"""Schemathesis over the whole API, in-process (WSGI), with every check it has: each
operation fuzzed alone (positive and negative cases), then the stateful phase, which
follows the spec's `links` (a created table to its reads and actions with the returned
id and tokens, a club to its members, seasons, tokens and webhooks). Authentication is
what the spec declares: a real token meeting the operation's `security`, or the one a
link hands on. No 5xx, no answer outside the spec (status, content type, schema, headers),
and every operation reached past 401/403.

The spec's catch-all `default` answers are left out of what schemathesis checks against,
so every status an operation returns must be declared with its own problem response."""

from __future__ import annotations

import copy
import time
from collections import Counter
from typing import Any

import pytest

from tests.e2e.club import Club

schemathesis = pytest.importorskip("schemathesis")

METHODS = ("get", "post", "put", "patch", "delete")
# A request the schema admits can still break a rule of the game or a rule across fields
# that JSON Schema cannot state (a move out of turn, turn_seconds on a results table):
# 422 with the rule, or 409 for a stale version. Everything else keeps schemathesis'
# expectations.
CONFIG = {
    "checks": {"positive_data_acceptance": {
        "expected-statuses": ["2xx", "401", "403", "404", "409", "422", "429"]}},
}
STATELESS_EXAMPLES = 5  # per operation and mode (positive, negative)
STATEFUL_SCENARIOS = 60
STATEFUL_STEPS = 8
STATEFUL_CALLS = 450  # a quiet run of STATEFUL_SCENARIOS makes about 500


def strict(spec: dict[str, Any]) -> dict[str, Any]:
    """The spec without its `default` answers (kept for client generators)."""
    spec = copy.deepcopy(spec)
    for item in spec["paths"].values():
        for method, op in item.items():
            if method in METHODS:
                op["responses"].pop("default", None)
    return spec


class Run:
    """The app under test, the world its ids and tokens come from, and what the run saw."""

    def __init__(self, tmp_path: Any) -> None:
        from ledger.api.app import create_app
        from ledger.bootstrap import Settings, bootstrap
        from tests.e2e.test_openapi_security import world

        self.container = bootstrap(Settings(database_url=f"sqlite:///{tmp_path}/fuzz.db"))
        # Rate limits have their own tests; here they would only turn cases into 429s.
        self.app = create_app(self.container, {"LOO_RATE_LIMITS": "off"})
        w = world(Club(self.app.test_client()))
        self.tokens: dict[str, str] = w["tokens"]
        self.ids: dict[str, str] = w["params"]
        # Who opens what: table or club id -> security scheme -> token; the world's, then
        # those the answers hand out (a created table's admin and seat 0, a club's owner).
        self.access: dict[str, dict[str, str]] = {
            self.ids["table_id"]: {k: v for k, v in self.tokens.items()
                                   if k.startswith("table")},
            self.ids["club_id"]: {k: v for k, v in self.tokens.items() if k.startswith("club")}}
        self.known_ids = set(self.ids.values())
        self.known = set(self.tokens.values())  # every real token seen (links hand them on)
        self.spec = strict(self.app.test_client().get("/openapi.json").get_json())
        self.schema = schemathesis.openapi.from_dict(
            self.spec, config=schemathesis.Config.from_dict(CONFIG))
        self.schema.app = self.app
        self.schema.auth(refresh_interval=None)(self.provider())
        self.failures: dict[str, str] = {}  # kind -> its first example
        self.failure_count = Counter[str]()
        self.cases = Counter[str]()  # phase -> cases sent
        self.statuses: dict[str, Counter[int]] = {}  # operation -> statuses answered

    def provider(self) -> type:
        run = self

        class Tokens:
            """A token meeting the operation's `security` for the resource the case names
            (its creator's, or the world's), unless a link already put a real one (from an
            earlier answer) in the request. A positive case's ids that name nothing are
            the world's first (so it gets past 404); negative cases keep theirs."""

            def get(self, case: Any, context: Any) -> str | None:
                run.real_ids(case)
                security = case.operation.definition.raw.get("security") or []
                params = case.path_parameters or {}
                pool = run.access.get(params.get("table_id", params.get("club_id")), {})
                for requirement in security:
                    for name in requirement:
                        if name in pool:
                            return pool[name]
                first = next(iter(security[0]), None) if security else None
                return run.tokens.get(first) if first else None

            def set(self, case: Any, data: str, context: Any) -> None:
                given = {k.lower(): v for k, v in (case.headers or {}).items()}
                scheme, _, token = str(given.get("authorization", "")).partition(" ")
                if scheme == "Bearer" and token in run.known:
                    return
                case.headers = {k: v for k, v in (case.headers or {}).items()
                                if k.lower() != "authorization"}
                case.headers["Authorization"] = f"Bearer {data}"

        return Tokens

    def fresh_table(self) -> None:
        """A new table (with a spectator) for the ids and tokens of the world: the single
        operations closed the last one."""
        client = Club(self.app.test_client())
        t = client.create(first_dealer=0, options={"hints": True})
        spectator = client.post(t, "/spectators", {"label": "screen"}).get_json()
        self.tokens.update(tableAdmin=t.admin, tableSeat=t.seats[0],
                           tableSpectator=spectator["token"])
        self.ids.update(table_id=t.id, spectator_id=spectator["id"])
        self.access[t.id] = {k: v for k, v in self.tokens.items() if k.startswith("table")}
        self.known_ids.update({t.id, spectator["id"]})
        self.known.update({t.admin, *t.seats, spectator["token"]})

    def real_ids(self, case: Any) -> None:
        meta = case.meta
        if meta is not None and meta.generation.mode == schemathesis.GenerationMode.NEGATIVE:
            return
        for name, value in list((case.path_parameters or {}).items()):
            if name in self.ids and str(value) not in self.known_ids:
                case.path_parameters[name] = self.ids[name]

    def learn(self, response: Any) -> None:
        """Ids and tokens an answer hands out (a table's admin and seats, a club's owner,
        spectator and club tokens)."""
        try:
            body = response.json()
        except Exception:  # noqa: BLE001 - not JSON: nothing to learn
            return
        if not isinstance(body, dict):
            return
        if isinstance(body.get("id"), str):
            self.known_ids.add(body["id"])
        hand = (body.get("table") or body).get("hand")
        if isinstance(hand, dict) and isinstance(hand.get("number"), int):
            self.known_ids.add(str(hand["number"]))
        seats = [s.get("token") for s in body.get("seats") or [] if isinstance(s, dict)]
        if isinstance(body.get("admin_token"), str):
            self.access[body["id"]] = {"tableAdmin": body["admin_token"],
                                       **({"tableSeat": seats[0]} if seats else {})}
        elif isinstance(body.get("token"), str) and str(body.get("id")).startswith("club_"):
            self.access[body["id"]] = {"clubOwner": body["token"]}
        self.known.update(t for t in (body.get("admin_token"), body.get("token"), *seats)
                          if isinstance(t, str))

    def seen(self, phase: str, case: Any, response: Any) -> None:
        self.cases[phase] += 1
        key = f"{case.method.upper()} {case.operation.path}"
        self.statuses.setdefault(key, Counter())[response.status_code] += 1
        self.learn(response)

    def validate(self, case: Any, response: Any) -> None:
        try:
            case.validate_response(response)
        except schemathesis.errors.FailureGroup as group:  # collect them all, not the first
            self.fail(case, response, group)

    def fail(self, case: Any, response: Any, group: BaseExceptionGroup) -> None:
        for failure in group.exceptions:
            key = f"{case.method.upper()} {case.operation.path} -> {response.status_code}: " \
                  f"{type(failure).__name__}"
            self.failures.setdefault(key, f"{case.formatted_path}: {str(failure)[:500]}")
            self.failure_count[key] += 1


def test_schemathesis_all_checks_stateless_and_stateful(tmp_path):
    from hypothesis import HealthCheck, given, settings
    from hypothesis.errors import Flaky, Unsatisfiable
    from schemathesis import GenerationMode
    from schemathesis.engine.errors import is_inconsistent_replay

    started = time.monotonic()
    run = Run(tmp_path)
    options = settings(max_examples=STATELESS_EXAMPLES, deadline=None, derandomize=True,
                       database=None, suppress_health_check=list(HealthCheck))

    operations = [result.ok() for result in run.schema.get_all_operations()]
    operations.sort(key=lambda op: op.path.endswith("/close"))  # the world's table: last
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            @options
            @given(case=operation.as_strategy(generation_mode=mode))
            def check(case: Any) -> None:
                response = case.call()
                run.seen("stateless", case, response)
                run.validate(case, response)

            try:
                check()
            except Unsatisfiable:  # nothing to negate (no parameters, no body)
                assert mode == GenerationMode.NEGATIVE, operation.label
    stateless_done = time.monotonic()
    run.fresh_table()

    # The links the spec declares: (source operation, status, name).
    declared = {(f"{m.upper()} {path}", status, name)
                for path, item in run.spec["paths"].items() for m, op in item.items()
                if m in METHODS for status, r in op["responses"].items()
                for name in r.get("links", {})}
    followed: dict[tuple[str, str, str], Counter[int]] = {}  # declared link -> statuses

    class Workflow(run.schema.as_state_machine()):  # type: ignore[misc]
        def step(self, input: Any) -> Any:
            output = super().step(input)
            if input.transition is not None and input.is_applied:
                # "<source> -> [<status>] <link name> -> <target>"
                source, status_name, _ = input.transition.id.split(" -> ")
                status, name = status_name.split(" ", 1)
                key = (source, status.strip("[]"), name)
                if key in declared:
                    followed.setdefault(key, Counter())[output.response.status_code] += 1
            return output

        def after_call(self, response: Any, case: Any) -> None:
            super().after_call(response, case)
            run.seen("stateful", case, response)

        def validate_response(self, response: Any, case: Any, *args: Any, **kw: Any) -> None:
            try:
                super().validate_response(response, case, *args, **kw)
            except schemathesis.errors.FailureGroup as group:  # the scenario goes on
                run.fail(case, response, group)

        def teardown(self) -> None:
            run.cases["scenarios"] += 1
            super().teardown()

    # The API's state moves on between scenarios, so Hypothesis may find a scenario it
    # replays drawing differently (Flaky); like `st run`, go on with a fresh run until as
    # many calls were made as a quiet run makes. On a loaded machine (CI: two xdist workers
    # beside the browser tests) runs end Flaky sooner: counting scenarios, 329 calls were
    # made once instead of 499, and too few of the declared links were followed.
    for _ in range(10):
        if run.cases["stateful"] >= STATEFUL_CALLS:
            break
        try:
            Workflow.run(settings=settings(
                max_examples=STATEFUL_SCENARIOS, stateful_step_count=STATEFUL_STEPS,
                deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck)))
        except Flaky:
            continue
        except AssertionError as err:
            if not is_inconsistent_replay(err):
                raise
    run.container.close()
    done = time.monotonic()

    labels = {f"{op.method.upper()} {op.path}" for op in operations}
    past_auth = {op for op, c in run.statuses.items() if set(c) - {401, 403}}
    succeeded = {op for op, c in run.statuses.items() if any(s < 300 for s in c)}
    links_ok = {key for key, c in followed.items() if any(s < 300 for s in c)}
    print(f"\nschemathesis: {len(labels)} operations, {run.cases['stateless']} cases one "
          f"operation at a time ({stateless_done - started:.1f} s), {run.cases['stateful']} "
          f"in {run.cases['scenarios']} stateful scenarios ({done - stateless_done:.1f} s); "
          f"{len(succeeded)} operations answered 2xx; {len(links_ok)} of {len(declared)} "
          f"declared links followed to a 2xx; no 2xx: {sorted(labels - succeeded)}")
    assert not run.failures, "\n".join(f"{n} x {kind}\n    {run.failures[kind]}"
                                        for kind, n in run.failure_count.most_common())
    assert set(run.statuses) == labels, labels - set(run.statuses)
    # No operation is left behind 401/403: the declared auth (or a link's token) opens each.
    assert past_auth == labels, sorted(labels - past_auth)
    assert len(succeeded) >= 35, sorted(labels - succeeded)
    # The stateful phase chains: a created table's id and admin token (from the answer,
    # never the world's) open its reads and actions, and likewise for clubs.
    assert any(k[0] == "POST /v1/tables" for k in links_ok), followed
    assert any(k[0] == "POST /v1/clubs" for k in links_ok), followed
    assert len(links_ok) >= 10, followed
    assert run.cases["scenarios"] >= STATEFUL_SCENARIOS // 2
