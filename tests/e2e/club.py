"""A thin HTTP client over the Flask test client, as a club's software would use the API."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Table:
    id: str
    admin: str
    seats: list[str]
    created: dict[str, Any]


class Club:
    def __init__(self, client: Any) -> None:
        self.c = client

    @staticmethod
    def auth(token: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"} if token else {}

    def create(self, **body: Any) -> Table:
        body.setdefault("seats", [{"name": n} for n in ("Ann", "Bob", "Cat", "Dan")])
        r = self.c.post("/v1/tables", json=body)
        assert r.status_code == 201, r.get_json()
        j = r.get_json()
        return Table(j["id"], j["admin_token"], [s["token"] for s in j["seats"]], j)

    def get(self, t: Table, token: str | None = None, path: str = "") -> Any:
        return self.c.get(f"/v1/tables/{t.id}{path}", headers=self.auth(token or t.admin))

    def view(self, t: Table, token: str | None = None) -> dict[str, Any]:
        r = self.get(t, token)
        assert r.status_code == 200, r.get_json()
        return r.get_json()

    def post(self, t: Table, path: str, body: Any, token: str | None = None,
             headers: dict[str, str] | None = None) -> Any:
        return self.c.post(f"/v1/tables/{t.id}{path}", json=body,
                           headers=self.auth(token or t.admin) | (headers or {}))

    def act(self, t: Table, body: dict[str, Any], token: str | None = None, **kw: Any) -> Any:
        return self.post(t, "/actions", body, token, **kw)

    def ok(self, t: Table, body: dict[str, Any], token: str | None = None) -> dict[str, Any]:
        r = self.act(t, body, token)
        assert r.status_code == 200, r.get_json()
        return r.get_json()

    def start(self, t: Table, body: dict[str, Any] | None = None) -> Any:
        return self.post(t, "/hands", body or {})

    def problem(self, r: Any, status: int, code: str | None = None) -> dict[str, Any]:
        assert r.status_code == status, (r.status_code, r.get_json())
        assert r.mimetype == "application/problem+json", r.mimetype
        j = r.get_json()
        for key in ("type", "title", "status", "detail", "code"):
            assert key in j, j
        if code:
            assert j["code"] == code, j
        return j
