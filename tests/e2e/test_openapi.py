"""The OpenAPI spec is true: every route is in it (schemathesis: test_schemathesis.py)."""

from __future__ import annotations

from tests.e2e.club import Club

ROUTES = [
    ("post", "/v1/tables"), ("get", "/v1/tables/{table_id}"),
    ("post", "/v1/tables/{table_id}/close"), ("post", "/v1/tables/{table_id}/hands"),
    ("get", "/v1/tables/{table_id}/hands/{number}"),
    ("get", "/v1/tables/{table_id}/hands/{number}/replay"),
    ("post", "/v1/tables/{table_id}/actions"), ("get", "/v1/tables/{table_id}/events"),
    ("get", "/v1/tables/{table_id}/ledger"), ("get", "/v1/tables/{table_id}/audit"),
    ("get", "/healthz"), ("get", "/readyz"),
    ("get", "/v1/tables/{table_id}/checkpoints"), ("get", "/v1/checkpoints/key"),
    ("get", "/v1/tables/{table_id}/hands/{number}/history"),
    ("get", "/v1/tables/{table_id}/history"), ("get", "/v1/schemas/loo-hh-1.0.json"),
    ("get", "/v1/bots"), ("get", "/v1/tables/{table_id}/hint"),
]


def test_every_route_of_api_md_is_in_the_spec(club: Club):
    spec = club.c.get("/openapi.json").get_json()
    assert spec["openapi"].startswith("3.")
    for method, path in ROUTES:
        assert method in spec["paths"].get(path, {}), (method, path)


def test_docs_are_swagger_ui_from_local_assets(club: Club):
    """/docs is Swagger UI on /openapi.json, every file it loads served here from the
    pinned package (tests/web/test_browser.py renders it in chromium)."""
    import re

    docs = club.c.get("/docs")
    assert docs.status_code == 200 and docs.mimetype == "text/html"
    page = docs.get_data(as_text=True)
    assert "SwaggerUIBundle" in page and '"/openapi.json"' in page
    assert '"validatorUrl": null' in page  # no online validator badge
    loaded = re.findall(r'(?:src|href)="([^"]+)"', page)
    assets = [u for u in loaded if u.startswith("/assets/swagger-ui/")]
    assert len(assets) == 4 and not [u for u in loaded if "//" in u], loaded
    for url in assets:
        r = club.c.get(url)
        assert r.status_code == 200 and len(r.data) > 500, url
    assert club.c.get("/assets/swagger-ui/index.html").status_code == 404  # only those
    for guide in ("/docs/rules", "/docs/http", "/docs/hash-chain"):
        assert club.c.get(guide).status_code == 200, guide


def test_unknown_route_and_method_are_problems(club: Club):
    club.problem(club.c.get("/v1/nothing"), 404)
    club.problem(club.c.delete("/v1/tables"), 405)


def test_declared_option_bounds_are_what_the_rules_enforce(club: Club):
    """The spec's minimum / maximum / multipleOf for each option and the penalty multiplier
    are exactly where make_options starts refusing (so the two cannot drift apart)."""
    from ledger.core.errors import LedgerError
    from ledger.core.rules.options import make_options

    def accepted(options: dict) -> bool:
        try:
            make_options("loo", "pool", 4, options)
        except LedgerError:
            return False
        return True

    schemas = club.c.get("/openapi.json").get_json()["components"]["schemas"]
    props = schemas["OptionsIn"]["properties"]
    capped = props["loo_penalty"]["oneOf"][2]["properties"]["multiplier"]
    checked = 0
    for name, prop, wrap in [
        *((n, p, lambda n, v: {n: v} if n != "ante" else {"ante": v, "dealer_ante": 5})
          for n, p in props.items() if p.get("type") == "integer"),
        ("multiplier", capped, lambda n, v: {"loo_penalty": {"mode": "capped", n: v}}),
    ]:
        low, high, step = prop["minimum"], prop["maximum"], prop.get("multipleOf", 1)
        assert accepted(wrap(name, low)) and accepted(wrap(name, high)), name
        assert not accepted(wrap(name, low - step)) and not accepted(wrap(name, high + step))
        if step > 1:
            assert not accepted(wrap(name, low + step + 1)), name
        checked += 1
    assert checked == 7  # ante, dealer_ante, lead_trump_threshold, target, max_hands,
    # turn_seconds, multiplier


def test_declared_bots_are_the_policies(club: Club):
    from ledger.core.rules.bots import POLICIES

    seat = club.c.get("/openapi.json").get_json()["components"]["schemas"]["SeatIn"]
    assert set(seat["properties"]["bot"]["enum"]) == {*POLICIES, None}


def test_the_history_and_schema_answers_declare_their_media_types(club: Club):
    # API.md "Hand history": the NDJSON streams are application/x-ndjson and the schema is
    # served as JSON Schema; a client generated from the spec learns both from it.
    client = club.c
    spec = client.get("/openapi.json").get_json()["paths"]
    for path in ("/v1/tables/{table_id}/history", "/v1/clubs/{club_id}/history"):
        assert list(spec[path]["get"]["responses"]["200"]["content"]) == ["application/x-ndjson"]
    content = spec["/v1/schemas/loo-hh-1.0.json"]["get"]["responses"]["200"]["content"]
    assert list(content) == ["application/schema+json"]
    r = client.get("/v1/schemas/loo-hh-1.0.json")
    assert r.status_code == 200 and r.mimetype == "application/schema+json"
