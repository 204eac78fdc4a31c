"""API.md "Hand history (loo-hh 1.0)": per-hand file (409 while live), NDJSON per table,
the JSON Schema served, and every exported file verifies offline."""

from __future__ import annotations

import json

import jsonschema

from ledger.app.checkpoints import public_key
from ledger.app.verify import verify_document
from tests.e2e.club import Club


def test_hand_history_is_409_while_live_then_a_file_that_verifies(club: Club):
    t = club.create(first_dealer=0)
    club.problem(club.get(t, t.seats[1], "/hands/1/history"), 409, "hand_live")
    club.problem(club.get(t, path="/hands/5/history"), 404, "hand_not_found")
    while club.view(t)["hand"]["number"] == 1:
        seat = club.view(t)["hand"]["turn"]
        club.ok(t, club.view(t, t.seats[seat])["legal_actions"][0], t.seats[seat])
    r = club.get(t, t.seats[1], "/hands/1/history")
    assert r.status_code == 200, r.get_json()
    doc = r.get_json()
    schema = club.c.get("/v1/schemas/loo-hh-1.0.json")
    assert schema.status_code == 200 and "json" in schema.mimetype
    jsonschema.validate(doc, json.loads(schema.data))
    assert doc["format"] == "loo-hh" and doc["spec_version"] == "1.0"
    assert doc["table"]["id"] == t.id and doc["hand"]["number"] == 1
    assert len(doc["hand"]["tricks"]) == 5 or doc["hand"]["result"].get("won_without_play")
    assert doc["checkpoint"]["version"] == doc["events"][-1]["version"]
    key = public_key(club.c.get("/v1/checkpoints/key").get_json()["public_key"])
    verify_document(doc, key)
    club.problem(club.get(t, t.seats[1], "/hands/2/history"), 409, "hand_live")


def test_table_history_streams_ndjson_one_complete_hand_a_line(club: Club):
    t = club.create(deal="results", first_dealer=0)
    result = {"result": {"decisions": {"0": "play", "1": "drop", "2": "play", "3": "miss"},
                         "tricks": {"0": 3, "2": 1, "3": 1}}}
    for _ in range(3):
        assert club.start(t, result).status_code == 200
    r = club.get(t, t.seats[3], "/history")
    assert r.status_code == 200 and r.mimetype == "application/x-ndjson"
    docs = [json.loads(line) for line in r.data.splitlines()]
    assert [d["hand"]["number"] for d in docs] == [1, 2, 3]
    for d in docs:
        assert d["hand"]["mode"] == "results" and d["hand"]["actions"] == []
        assert d["hand"]["result"]["tricks"] == {"0": 3, "1": 0, "2": 1, "3": 1}
        verify_document(d)
    assert docs[1]["hand"]["before"]["pool"] == docs[0]["events"][-1]["data"]["pool"]
    club.problem(club.c.get(f"/v1/tables/{t.id}/history"), 401)


def test_an_export_whose_store_fails_at_the_start_is_a_503_not_a_cut_200(
        tmp_path, monkeypatch) -> None:
    """The NDJSON histories stream: a store that fails on their first line answers 503
    problem+json with Retry-After, before any status is sent (it was a 200 whose body broke
    off at once)."""
    from ledger.api.app import create_app
    from ledger.bootstrap import Settings, bootstrap
    from ledger.store.base import StoreUnavailable
    from tests.e2e.test_api_clubs import RESULT_A, League

    container = bootstrap(Settings(database_url=f"sqlite:///{tmp_path}/loo.db"))
    try:
        club = Club(create_app(container).test_client())
        lg = League(club)
        t = lg.table([lg.member(n) for n in ("Ann", "Bob", "Cat", "Dan")], deal="results")
        assert club.start(t, {"result": RESULT_A}).status_code == 200
        assert club.get(t, path="/history").status_code == 200

        def down(*_a, **_k):
            raise StoreUnavailable("PostgreSQL at postgresql://x/db is down (0.1 s)")

        monkeypatch.setattr(container.ledger, "raw_events", down)
        monkeypatch.setattr(container.ledger, "version", down)
        for r in (club.get(t, path="/history"), lg.get("/history")):
            assert r.status_code == 503, r.status_code
            assert r.mimetype == "application/problem+json"
            assert r.get_json()["code"] == "store_unavailable" and r.headers["Retry-After"]
    finally:
        container.close()


def test_hand_history_import_of_a_file_whose_mode_is_not_its_tables_deal_is_a_422(club: Club):
    """API.md "Hand history": an import refuses an illegal file whole, naming where. A
    shuffled hand's file whose hand.mode says "recorded" or "results" (table.deal still
    "shuffled") was replayed into an AssertionError: a 500 for the import, a traceback from
    `loo verify`. It is a 422 import_refused naming the contradiction; nothing is created."""
    from tests.e2e.test_api_clubs import League, _play_out

    lg = League(club)
    source = club.create(first_dealer=0, options={"auto_deal": False})
    assert club.start(source).status_code == 200
    _play_out(club, source, source.admin, 1)
    doc = club.get(source, path="/hands/1/history").get_json()
    for mode in ("recorded", "results"):
        bad = json.loads(json.dumps(doc))
        bad["hand"]["mode"] = mode
        r = club.c.post(lg.url("/tables/import"), json=bad, headers=lg.h(lg.scorer))
        problem = club.problem(r, 422, "import_refused")
        assert f"hand 1: hand.mode '{mode}' is not the table's deal 'shuffled'" in \
            problem["detail"], problem
    assert lg.get("/tables").get_json()["items"] == []


def test_corrections_a_voided_hands_history_carries_its_voids_checkpoint_and_verifies_with_a_key(
        club: Club, tmp_path):
    """API.md Hand history, Checkpoints, Corrections: a voided hand's file (GET one hand, the
    table's NDJSON) carries `void_checkpoint`, the signed checkpoint naming its hand_voided,
    beside its settlement's; the schema validates it, `loo verify --key` checks both, and the
    club import takes the export as before."""
    from click.testing import CliRunner

    from ledger.cli.main import main
    from tests.e2e.test_api_clubs import League, _play_out

    t = club.create(first_dealer=0, options={"auto_deal": False})
    assert club.start(t).status_code == 200
    _play_out(club, t, t.admin, 1)
    assert club.post(t, "/hands/1/void", {"reason": "misdeal"}).status_code == 200
    cps = club.get(t, path="/checkpoints").get_json()["items"]
    assert len(cps) == 2
    schema = json.loads(club.c.get("/v1/schemas/loo-hh-1.0.json").data)
    key_text = club.c.get("/v1/checkpoints/key").get_json()["public_key"]
    key = public_key(key_text)
    one = club.get(t, t.seats[2], "/hands/1/history").get_json()
    ndjson = club.get(t, t.seats[2], "/history").data
    assert [json.loads(x) for x in ndjson.splitlines()] == [one]
    jsonschema.validate(one, schema)
    void = one["events"][-1]
    assert one["hand"]["voided"] is True and void["type"] == "hand_voided"
    assert one["checkpoint"] == cps[0] and one["void_checkpoint"] == cps[1]
    assert (cps[1]["version"], cps[1]["hash"]) == (void["version"], void["hash"])
    done = verify_document(one, key)
    assert done.checkpoint and done.void_checkpoint
    path = tmp_path / "hands.ndjson"
    path.write_bytes(ndjson)
    env = {"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}  # offline: never opened
    r = CliRunner().invoke(main, ["verify", str(path), "--key", key_text], env=env)
    assert r.exit_code == 0, r.output
    assert r.output.strip() == "OK: 1 hand(s) verified (checkpoint signatures checked)"
    lg = League(club)
    r = club.c.post(lg.url("/tables/import"), data=ndjson,
                    headers=lg.h(lg.scorer) | {"Content-Type": "application/x-ndjson"})
    assert r.status_code == 201, r.get_json()
    again = [json.loads(x) for x in club.c.get(f"/v1/tables/{r.get_json()['id']}/history",
                                               headers=lg.h(lg.viewer)).data.splitlines()]
    assert [d["hand"]["voided"] for d in again] == [True] and "void_checkpoint" in again[0]
    verify_document(again[0], key)


def test_checkpoints_a_closed_tables_last_hand_carries_the_close_in_every_export(club: Club,
                                                                                 tmp_path):
    """API.md Checkpoints ("Checkpoints go out in the feed, webhooks and exports") and Hand
    history: table_closed's checkpoint was in no file. GET one hand and the table's NDJSON
    give the last complete hand's file with `close` (the events since, the abandoned hand's
    included, up to table_closed, and its checkpoint); `loo verify --key` checks it."""
    from click.testing import CliRunner

    from ledger.cli.main import main
    from tests.e2e.test_api_clubs import _play_out

    t = club.create(first_dealer=0, options={"auto_deal": False})
    assert club.start(t).status_code == 200
    _play_out(club, t, t.admin, 1)
    assert club.start(t).status_code == 200  # hand 2: abandoned by the close
    assert club.post(t, "/close", {}).status_code == 200
    closed = club.get(t, path="/events?limit=1000").get_json()["events"][-1]
    cps = club.get(t, path="/checkpoints").get_json()["items"]
    one = club.get(t, t.seats[1], "/hands/1/history").get_json()
    ndjson = club.get(t, t.seats[1], "/history").data
    assert [json.loads(x) for x in ndjson.splitlines()] == [one]
    assert one["close"]["checkpoint"] == cps[-1]
    assert (cps[-1]["version"], cps[-1]["hash"]) == (closed["version"], closed["hash"])
    assert one["close"]["events"][-1]["type"] == "table_closed"
    assert any(e["type"] == "tiles_dealt" and e["hand"] == 2 for e in one["close"]["events"])
    jsonschema.validate(one, json.loads(club.c.get("/v1/schemas/loo-hh-1.0.json").data))
    key_text = club.c.get("/v1/checkpoints/key").get_json()["public_key"]
    assert verify_document(one, public_key(key_text)).close_checkpoint
    path = tmp_path / "hands.ndjson"
    path.write_bytes(ndjson)
    env = {"DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"}  # offline: never opened
    r = CliRunner().invoke(main, ["verify", str(path), "--key", key_text], env=env)
    assert r.output.strip() == "OK: 1 hand(s) verified (checkpoint signatures checked)"
