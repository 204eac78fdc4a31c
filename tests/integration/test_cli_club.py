"""`loo club create`, `loo club members add/list`, `loo standings` at the scorer's desk."""

from __future__ import annotations

import csv
import io

from click.testing import CliRunner

from ledger.cli.main import main


def test_a_scorer_creates_a_club_adds_members_and_reads_the_standings(tmp_path, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path}/club.db")
    monkeypatch.delenv("REDIS_URL", raising=False)
    run = CliRunner().invoke
    made = run(main, ["club", "create", "Red Lion"])
    assert made.exit_code == 0, made.output
    club_id = made.output.split()[1]
    assert "owner token" in made.output
    ids = [run(main, ["club", "members", "add", club_id, n, "--external-id", str(i)]).output
           .strip() for i, n in enumerate(["Ann", "=cmd()"])]
    assert all(i.startswith("mem_") for i in ids)
    dup = run(main, ["club", "members", "add", club_id, "Bob", "--external-id", "0"])
    assert dup.exit_code == 1 and "already belongs" in dup.output
    listed = run(main, ["club", "members", "list", club_id]).output.splitlines()
    assert [line.split("\t")[:2] for line in listed] == [[ids[0], "Ann"], [ids[1], "=cmd()"]]
    # A results table of the club, entered over the API, then the standings from the CLI.
    from ledger.api.app import create_app

    app = create_app(test_config={"DATABASE_URL": f"sqlite:///{tmp_path}/club.db"})
    c = app.test_client()
    token = c.post(f"/v1/clubs/{club_id}/tokens", json={"role": "scorer"},
                   headers={"Authorization": "Bearer x"})
    assert token.status_code == 401  # nothing opens a club without one of its tokens
    owner = made.output.split("keep it): ")[1].strip()
    h = {"Authorization": f"Bearer {owner}"}
    t = c.post(f"/v1/clubs/{club_id}/tables", headers=h, json={
        "deal": "results", "first_dealer": 0, "seats": [{"member": ids[0]}, {"member": ids[1]}]})
    assert t.status_code == 201, t.get_json()
    r = c.post(f"/v1/tables/{t.get_json()['id']}/hands", headers=h, json={"result": {
        "decisions": {"0": "play", "1": "play"}, "tricks": {"0": 4, "1": 1}}})
    assert r.status_code == 200, r.get_json()
    out = run(main, ["standings", "--club", club_id, "--csv"])
    assert out.exit_code == 0, out.output
    rows = list(csv.DictReader(io.StringIO(out.output)))
    api = c.get(f"/v1/clubs/{club_id}/standings", headers=h).get_json()["rows"]
    assert [int(r["chips"]) for r in rows] == [r["chips"] for r in api]
    assert {r["name"] for r in rows} == {"Ann", "'=cmd()"}
    text = run(main, ["standings", "--club", club_id])
    assert "Ann" in text.output
    missing = run(main, ["standings", "--club", "club_nope"])
    assert missing.exit_code == 1 and "no club" in missing.output
    # Loo for points and Rounce together: the CLI counts Rounce up as the API does, and says so.
    for body in ({"variant": "rounce"}, {"scoring": "points"}):
        t = c.post(f"/v1/clubs/{club_id}/tables", headers=h, json=body | {
            "deal": "results", "first_dealer": 0,
            "seats": [{"member": ids[0]}, {"member": ids[1]}]})
        assert t.status_code == 201, t.get_json()
        r = c.post(f"/v1/tables/{t.get_json()['id']}/hands", headers=h, json={"result": {
            "decisions": {"0": "play", "1": "play"}, "tricks": {"0": 5, "1": 0}}})
        assert r.status_code == 200, r.get_json()
    api = c.get(f"/v1/clubs/{club_id}/standings?scoring=points", headers=h).get_json()
    assert api["mixed_points"] and [r["points"] for r in api["rows"]] == [5 + 5, -5 - 5]
    out = run(main, ["standings", "--club", club_id, "--scoring", "points", "--csv"])
    assert [int(r["points"]) for r in csv.DictReader(io.StringIO(out.output))] == [10, -10]
    text = run(main, ["standings", "--club", club_id, "--scoring", "points"]).output
    assert "each Rounce table counted as its target minus its score" in text
    text = run(main, ["standings", "--club", club_id, "--variant", "rounce"]).output
    assert "target minus" not in text


def test_the_club_commands_refuse_what_the_api_refuses_and_write_nothing(tmp_path, monkeypatch):
    """One path for every writer: a name with control characters (a newline broke the
    tab-separated `members list`), an empty or 101-character external id were written by the
    CLI though the API refuses them (422). Now a usage error naming the value, exit 2."""
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path}/club.db")
    monkeypatch.delenv("REDIS_URL", raising=False)
    run = CliRunner().invoke
    for name in ["Bad\x07Name", "A\nB", "   ", "z" * 61]:
        r = run(main, ["club", "create", name])
        assert r.exit_code == 2 and "Invalid value for NAME" in r.output, r.output
    club_id = run(main, ["club", "create", "Red Lion"]).output.split()[1]
    for args, hint in [(["A\nB"], "NAME"), (["An\x01n"], "NAME"), (["x" * 61], "NAME"),
                       (["Ann", "--external-id", ""], "--external-id"),
                       (["Ann", "--external-id", "y" * 101], "--external-id"),
                       # bytes that are not UTF-8 (a traceback: the event's hash could not
                       # encode them), as the API refuses them: invalid_text
                       (["Ann", "--external-id", "N\udcff1"], "--external-id")]:
        r = run(main, ["club", "members", "add", club_id, *args])
        assert r.exit_code == 2, r.output
        assert f"Invalid value for {hint}" in r.output and "Traceback" not in r.output
    assert run(main, ["club", "members", "list", club_id]).output == ""
    ok = run(main, ["club", "members", "add", club_id, "Ann", "--external-id", "y" * 100])
    assert ok.exit_code == 0 and ok.output.startswith("mem_"), ok.output
