"""The guides a user reads (/docs/rules, /docs/http, /docs/hash-chain), and errors that
name a rule link to it and quote it."""

from __future__ import annotations

import re

import pytest

from tests.e2e.club import Club


@pytest.mark.parametrize("guide,heading", [
    ("rules", "Play of the tricks"), ("http", "Hand history"),
    ("hash-chain", "The hash chain")])
def test_each_guide_is_a_page_with_the_site_around_it(club: Club, guide: str, heading: str):
    r = club.c.get(f"/docs/{guide}")
    assert r.status_code == 200 and r.mimetype == "text/html"
    page = r.get_data(as_text=True)
    assert heading in page and 'class="top"' in page
    for other in ("/docs/rules", "/docs/http", "/docs/hash-chain"):
        assert f'href="{other}"' in page  # every page links every guide


def test_the_rule_book_anchors_every_section_and_numbered_rule(club: Club):
    page = club.c.get("/docs/rules").get_data(as_text=True)
    ids = set(re.findall(r'id="(rule-[0-9.]+)"', page))
    assert {f"rule-{n}" for n in range(1, 11)} <= ids
    assert {"rule-3.2", "rule-6.1", "rule-6.3", "rule-6.4", "rule-8.1", "rule-8.2",
            "rule-8.5"} <= ids


def test_the_guides_never_send_a_reader_to_files_they_cannot_see(club: Club):
    for guide in ("rules", "http", "hash-chain"):
        page = club.c.get(f"/docs/{guide}").get_data(as_text=True)
        assert not re.search(r"(RULES|API|STYLE)\.md", page), guide


def test_a_rule_violation_links_to_its_rule_and_quotes_it(club: Club):
    t = club.create(deal="recorded", seats=[{"name": n} for n in ("Ann", "Bob", "Cat")])
    hands = {"0": ["6-6", "5-5", "4-4", "3-3", "2-2"], "1": ["6-5", "6-4", "6-3", "6-2", "6-1"],
             "2": ["5-4", "5-3", "5-2", "5-1", "5-0"]}
    r = club.start(t, {"hands": hands | {"2": hands["1"]}, "turn_up": "1-1"})
    p = club.problem(r, 422, "invalid_deal")
    assert p["rule"] == "3" and p["rule_url"] == "/docs/rules#rule-3"
    assert p["type"] == "http://localhost/docs/rules#rule-3"  # its type is the rule
    assert p["rule_text"] == "The deal"


def test_an_option_refused_by_a_numbered_rule_quotes_that_rule(club: Club):
    r = club.c.post("/v1/tables", json={"seats": [{"name": n} for n in "ABCD"],
                                        "options": {"ante": 3}})
    p = club.problem(r, 422, "invalid_option")
    assert p["rule"] == "8.2" and p["rule_url"] == "/docs/rules#rule-8.2"
    assert p["rule_text"].startswith("The pool at the start of the hand")
    assert club.c.get("/docs/rules").get_data(as_text=True).count('id="rule-8.2"') == 1


def _codes_in_source() -> set[str]:
    """Every `code` a literal in ledger/ gives an error: the first argument of an error
    kind (or of the rules' `violation`), the second of `problem(status, code, ...)`."""
    import ast
    import pathlib

    import ledger
    kinds = {"RuleViolation", "Invalid", "Conflict", "NotFound", "Forbidden",
             "Unauthorized", "BadRequest", "violation"}
    trees = [ast.parse(path.read_text("utf-8"))
             for path in pathlib.Path(ledger.__file__).parent.rglob("*.py")]
    for tree in trees:  # and their subclasses (ImportRefused, UrlRefused, ...)
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and any(
                    isinstance(b, ast.Name) and b.id in kinds for b in node.bases):
                kinds.add(node.name)
    codes: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            name = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
            at = 0 if name in kinds else 1 if name == "problem" else None
            if at is not None and len(node.args) > at:
                arg = node.args[at]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    codes.add(arg.value)
    return codes


def test_every_code_the_service_gives_has_its_entry_among_the_problem_types(club: Club):
    page = club.c.get("/docs/http").get_data(as_text=True)
    anchored = set(re.findall(r'id="problem-([a-z0-9_]+)"', page))
    codes = _codes_in_source()
    assert len(codes) > 60 and {"table_not_found", "must_follow_suit"} <= codes  # it found them
    # HTTP's own refusals and the dependencies' answers, named at run time
    codes |= {"malformed_json", "validation_error", "not_found", "method_not_allowed",
              "unsupported_media_type", "request_entity_too_large", "store_unavailable",
              "queue_unavailable", "internal_error", "rate_limited"}
    assert codes - anchored == set()


@pytest.mark.parametrize("call,status,code,path", [
    (lambda c: c.get("/v1/tables/nope"), 404, "table_not_found",
     "/docs/http#problem-table_not_found"),
    (lambda c: c.post("/v1/tables", data="{", content_type="application/json"), 400,
     "malformed_json", "/docs/http#problem-malformed_json"),
    (lambda c: c.delete("/v1/tables"), 405, "method_not_allowed",
     "/docs/http#problem-method_not_allowed"),
    (lambda c: c.post("/v1/tables", json={"seats": [{"name": "A"}] * 4, "options": {"ante": 3}}),
     422, "invalid_option", "/docs/rules#rule-8.2"),
])
def test_each_problem_type_is_the_address_of_its_explanation(club: Club, call, status: int,
                                                             code: str, path: str):
    p = club.problem(call(club.c), status, code)
    assert p["type"] == "http://localhost" + path
    page, anchor = path.split("#")
    r = club.c.get(page)
    assert r.status_code == 200 and f'id="{anchor}"' in r.get_data(as_text=True)


def test_the_openapi_spec_never_sends_a_reader_to_files_they_cannot_see(club: Club):
    spec = club.c.get("/openapi.json").get_data(as_text=True)
    assert not re.search(r"(RULES|API|STYLE)\.md|RULES \\u00a7|RULES §", spec)
