"""/docs/http Problems: every 404 for a thing the path names is `<thing>_not_found`
(a spectator token id that does not exist answered `unknown_spectator`, the odd one out);
the guide and the OpenAPI 404 response name every such code."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _not_found_codes() -> set[str]:
    """The code of every `NotFound("code", ...)` raised in the service."""
    codes: set[str] = set()
    for path in (ROOT / "ledger").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "NotFound" \
                    and node.args and isinstance(node.args[0], ast.Constant):
                codes.add(node.args[0].value)
    return codes


def test_every_404_code_is_thing_not_found_and_documented():
    codes = _not_found_codes()
    assert "spectator_not_found" in codes
    assert {c for c in codes if not c.endswith("_not_found")} == set()
    guide = (ROOT / "ledger" / "web" / "guides" / "http.md").read_text()
    from ledger.api.routes import PROBLEM_RESPONSES

    described = PROBLEM_RESPONSES["NOT_FOUND"]["description"]
    for code in codes:
        assert f"`{code}`" in guide, code
        assert code in described, code
