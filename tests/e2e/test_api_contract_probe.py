"""API.md and RULES.md probed from outside, as the external checker would (both stores):
combinations of Phase 2 features whose answers must agree with each other."""

from __future__ import annotations

import json

from ledger.app.verify import verify_document
from tests.e2e.club import Club
from tests.e2e.test_api_clubs import League

THREE_PLAY = {"1": "play", "2": "play", "0": "play"}


def _hand(club: Club, t, decisions: dict, tricks: dict) -> None:
    r = club.start(t, {"result": {"decisions": decisions, "tricks": tricks}})
    assert r.status_code == 200, r.get_json()


def _voided_back_table(club: Club, lg: League):
    """Hands 1 and 2 entered, hand 2 voided, then hand 1 (voided back to), hand 3 entered."""
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat")]
    t = lg.table(ms, deal="results")
    _hand(club, t, THREE_PLAY, {"0": 3, "1": 2, "2": 0})
    _hand(club, t, {"2": "play", "0": "play", "1": "play"}, {"0": 5, "1": 0, "2": 0})
    for n in (2, 1):
        r = club.post(t, f"/hands/{n}/void", {"reason": "typo"})
        assert r.status_code == 200, r.get_json()
    _hand(club, t, THREE_PLAY, {"0": 1, "1": 2, "2": 2})
    return t


def test_corrections_a_hand_voided_back_to_is_marked_voided_in_every_export(club: Club):
    lg = League(club)
    t = _voided_back_table(club, lg)
    h = lg.h(lg.viewer)
    table_lines = [json.loads(x) for x in
                   club.c.get(f"/v1/tables/{t.id}/history", headers=h).data.splitlines()]
    club_lines = [json.loads(x) for x in lg.get("/history").data.splitlines()]
    files = {n: club.c.get(f"/v1/tables/{t.id}/hands/{n}/history", headers=h).get_json()
             for n in (1, 2, 3)}
    assert [d["hand"]["voided"] for d in table_lines] == [True, True, False]
    assert [d["hand"]["voided"] for d in club_lines] == [True, True, False]
    for doc in table_lines:
        assert files[doc["hand"]["number"]] == doc  # one hand's file is its NDJSON line
        verify_document(doc)  # a file the service wrote verifies offline
        record = club.get(t, path=f"/hands/{doc['hand']['number']}").get_json()
        assert record["hand"]["voided"] is doc["hand"]["voided"]
    last = files[1]["events"][-1]
    assert last["type"] == "hand_voided" and last["hand"] == 1


def test_hand_history_import_of_a_table_with_voided_hands_keeps_its_books(club: Club):
    lg = League(club)
    t = _voided_back_table(club, lg)
    ndjson = club.c.get(f"/v1/tables/{t.id}/history", headers=lg.h(lg.viewer)).data
    r = club.c.post(lg.url("/tables/import"), data=ndjson, content_type="application/x-ndjson",
                    headers=lg.h(lg.scorer))
    assert r.status_code == 201, r.get_json()
    copy = r.get_json()["id"]

    def read(table_id: str, path: str):
        return club.c.get(f"/v1/tables/{table_id}{path}", headers=lg.h(lg.scorer)).get_json()

    assert read(copy, "/ledger")["balances"] == read(t.id, "/ledger")["balances"]
    assert [s["balance"] for s in read(copy, "")["seats"]] == \
        [s["balance"] for s in read(t.id, "")["seats"]]
    again = club.c.get(f"/v1/tables/{copy}/history", headers=lg.h(lg.viewer)).data
    assert [json.loads(x)["hand"]["voided"] for x in again.splitlines()] == [True, True, False]
    assert read(copy, "/audit")["ok"] is True


def test_standings_loos_count_every_looed_player_at_points_and_rounce_too(club: Club):
    """RULES 7: looed is stayed in and won no trick, at any scoring (points: -5, Rounce:
    rounced +5); API.md Standings' `loos` counts them, not only a pool game's penalties."""
    lg = League(club)
    ms = [lg.member(n) for n in ("Ann", "Bob", "Cat")]
    for variant, scoring in (("loo", "pool"), ("loo", "points"), ("rounce", "points")):
        t = lg.table(ms, deal="results", variant=variant, scoring=scoring)
        _hand(club, t, THREE_PLAY, {"0": 0, "1": 5, "2": 0})  # Ann and Cat looed
        assert club.get(t, path="/hands/1").get_json()["hand"]["looed"] == [0, 2]
    for query, loos in (("", 3), ("?scoring=pool", 1), ("?scoring=points", 2),
                        ("?variant=rounce", 1)):
        rows = {r["name"]: r for r in lg.get(f"/standings{query}").get_json()["rows"]}
        assert [rows[n]["loos"] for n in ("Ann", "Bob", "Cat")] == [loos, 0, loos], query
    csv = lg.get("/standings?format=csv").data.decode().splitlines()
    assert csv[0].split(",")[9] == "loos"
    assert sorted(line.split(",")[9] for line in csv[1:]) == ["0", "3", "3"]


def test_audit_ledger_reasons_of_a_voided_hand_are_in_the_openapi_spec(club: Club):
    """API.md Corrections: a void's compensating transfers have reason `void` (scores too);
    the OpenAPI document served by the app lists every reason the ledger answers."""
    schemas = club.c.get("/openapi.json").get_json()["components"]["schemas"]
    enums = {name: set(schemas[name]["properties"]["reason"]["enum"])
             for name in ("TransferOut", "ScoreOut")}
    for scoring in ("pool", "points"):
        t = club.create(seats=[{"name": n} for n in ("Ann", "Bob", "Cat")], first_dealer=0,
                        deal="results", scoring=scoring)
        _hand(club, t, THREE_PLAY, {"0": 0, "1": 5, "2": 0})
        assert club.post(t, "/hands/1/void", {"reason": "typo"}).status_code == 200
        book = club.get(t, path="/ledger").get_json()
        reasons = {x["reason"] for x in book["transfers"]}
        assert "void" in reasons or scoring == "points"
        assert reasons <= enums["TransferOut"]
        scored = {x["reason"] for x in book.get("scores", [])}
        assert scored <= enums["ScoreOut"]
        assert "void" in scored or scoring == "pool"


def test_conventions_nan_and_infinity_are_malformed_json_a_400_on_every_write(club: Club):
    """API.md Conventions: 400 malformed JSON. NaN, Infinity and -Infinity are not JSON
    (RFC 8259) though Python's json module reads them: they were a 422 validation error."""
    lg = League(club)
    member = lg.member("Ann")
    t = club.create(seats=[{"name": n} for n in ("Ann", "Bob", "Cat")], first_dealer=0)
    writes = [("post", "/v1/tables", '{"seats": [{"name": "A"}, {"name": "B"}], "ante": %s}'),
              ("post", f"/v1/tables/{t.id}/actions",
               '{"type": "decide", "choice": "play", "seat": %s}'),
              ("post", f"/v1/tables/{t.id}/hands", '{"expected_version": %s}'),
              ("post", f"/v1/tables/{t.id}/spectators", '{"expected_version": %s}'),
              ("post", f"/v1/tables/{t.id}/hands/1/void", '{"reason": "x", "v": %s}'),
              ("post", f"/v1/tables/{t.id}/close", '{"expected_version": %s}'),
              ("post", "/v1/clubs", '{"name": "Red Lion", "expected_version": %s}'),
              ("post", lg.url("/members"), '{"name": "Bob", "expected_version": %s}'),
              ("patch", lg.url(f"/members/{member}"), '{"name": "Ann", "x": [%s]}'),
              ("post", lg.url("/tokens"), '{"role": "viewer", "label": "v", "n": %s}'),
              ("post", lg.url("/seasons"), '{"name": "S", "starts_on": "2026-01-01", "x": %s}'),
              ("post", lg.url("/webhooks"), '{"url": "http://127.0.0.1:9/h", "events": [%s]}')]
    before = club.view(t)["version"]
    for method, path, body in writes:
        for constant in ("NaN", "Infinity", "-Infinity"):
            token = t.admin if path.startswith("/v1/tables/") else lg.owner
            r = getattr(club.c, method)(path, data=body % constant,
                                        content_type="application/json",
                                        headers=club.auth(token))
            club.problem(r, 400, "malformed_json")
    assert club.view(t)["version"] == before
    assert lg.get("/webhooks", lg.owner).get_json()["items"] == []


def test_hand_history_of_a_hand_abandoned_by_closing_is_409_hand_abandoned_not_live(club: Club):
    """API.md Hand history: complete hands only; 409 while live. A hand the table was closed
    during is no longer live: the 409 says it was abandoned (it said still being played)."""
    t = club.create(seats=[{"name": n} for n in ("Ann", "Bob", "Cat")], first_dealer=0)
    live = club.get(t, path="/hands/1/history")
    assert club.problem(live, 409, "hand_live")
    assert club.post(t, "/close", {}).status_code == 200
    for token in (t.admin, t.seats[1]):
        j = club.problem(club.get(t, token, "/hands/1/history"), 409, "hand_abandoned")
        assert "abandoned" in j["detail"] and "still being played" not in j["detail"]
        assert club.get(t, token, "/hands/1").status_code == 200  # its record is open
    assert club.c.get(j["type"].replace("http://localhost", "")).status_code == 200


def test_tables_max_hands_closes_a_results_table_too(club: Club):
    """API.md Tables: max_hands closes any table by itself once that many hands are settled
    (table_closed, reason max_hands); a results table settles in the request that enters a
    hand, and went on taking hands past it."""
    t = club.create(seats=[{"name": n} for n in ("Ann", "Bob", "Cat")], first_dealer=0,
                    deal="results", options={"max_hands": 2})
    for dealer in (0, 1):
        others = {str((dealer + k) % 3): "drop" for k in (1, 2)}
        r = club.start(t, {"result": {"decisions": others}})
        assert r.status_code == 200, r.get_json()
    view = club.view(t)
    assert view["status"] == "closed"
    last = club.get(t, path="/events?limit=1000").get_json()["events"][-1]
    assert last["type"] == "table_closed" and last["data"]["reason"] == "max_hands"
    club.problem(club.start(t, {"result": {"decisions": {"0": "drop", "1": "drop"}}}), 422,
                 "table_closed")
    assert club.get(t, path="/audit").get_json()["ok"] is True


def test_hand_history_an_export_of_a_table_with_hints_or_a_turn_timer_imports(club: Club):
    """API.md Hand history: an import creates a recorded table whose hands are checked as if
    entered live, and refuses only an illegal file. A shuffled table's hints or turn_seconds
    (options of live play, which a recorded table does not take) refused the whole file."""
    lg = League(club)
    for options in ({"hints": True, "max_hands": 1}, {"turn_seconds": 60, "max_hands": 1}):
        t = lg.table([], seats=[{"name": n} for n in ("Ann", "Bob", "Cat")], options=options)
        while legal := club.view(t)["legal_actions"]:
            assert club.act(t, legal[0]).status_code == 200
        ndjson = club.c.get(f"/v1/tables/{t.id}/history", headers=lg.h(lg.viewer)).data
        r = club.c.post(lg.url("/tables/import"), data=ndjson,
                        content_type="application/x-ndjson", headers=lg.h(lg.scorer))
        assert r.status_code == 201, r.get_json()
        copy = r.get_json()["table"]
        assert copy["options"]["max_hands"] == 1 and copy["deal"] == "recorded"
        assert not copy["options"]["hints"] and "turn_seconds" not in copy["options"]
        book = club.c.get(f"/v1/tables/{copy['id']}/ledger", headers=lg.h(lg.scorer))
        assert book.get_json()["balances"] == club.get(t, path="/ledger").get_json()["balances"]
