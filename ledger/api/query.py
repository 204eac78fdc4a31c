"""Every operation takes exactly the query parameters the OpenAPI spec declares for it, each
once: another one, or one given twice, is a 422 (API.md Lists: an unknown filter or a bad
value is a 422, never ignored). A typo such as ?stpe=3 on a replay or ?afer=40 on the events
used to answer as if nothing had been asked."""

from __future__ import annotations

import re
from typing import Any

from flask import Flask

from ledger.api.context import current_request
from ledger.core.errors import Invalid

_RULE_PARAM = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")  # Flask's <int:n> is OpenAPI's {n}
_METHODS = ("get", "post", "put", "patch", "delete")


class DeclaredQuery:
    """The query parameters of each operation of a spec, checked before its view runs."""

    def __init__(self, paths: dict[str, Any]) -> None:
        self.allowed: dict[tuple[str, str], frozenset[str]] = {
            (method.upper(), path): frozenset(p["name"] for p in op.get("parameters", [])
                                              if p.get("in") == "query")
            for path, item in paths.items() for method, op in item.items()
            if method in _METHODS and isinstance(op, dict) and path.startswith("/v1/")}
        self._paths: dict[str, str] = {}

    def __call__(self) -> None:
        req = current_request()  # one proxy lookup (ledger/api/context.py)
        if not req.args or req.url_rule is None:
            return
        rule = req.url_rule.rule
        path = self._paths.get(rule)
        if path is None:
            path = self._paths[rule] = _RULE_PARAM.sub(r"{\1}", rule)
        allowed = self.allowed.get((req.method, path))
        if allowed is None:  # not an operation of the v1 API (a page, a probe, /metrics)
            return
        unknown = sorted(set(req.args) - allowed)
        if unknown:
            takes = ", ".join(sorted(allowed)) or "no query parameters"
            raise Invalid("unknown_filter", f"unknown query parameter(s): {', '.join(unknown)}"
                          f"; this operation takes {takes}", field=unknown[0])
        for name in req.args:
            if len(req.args.getlist(name)) > 1:
                raise Invalid("invalid_filter", f"{name} is given more than once; give it once",
                              field=name)


def install(app: Flask, paths: dict[str, Any]) -> None:
    """Check each API blueprint's queries after that blueprint's own hooks (an unknown table
    or club, a missing or bad token, a token not allowed come first: 404 / 401 / 403)."""
    check = DeclaredQuery(paths)
    for name in app.blueprints:
        if name in app.extensions["flask-smorest"]["blp_name_to_api"]:
            # The bound method, not the instance: Flask's ensure_sync knows a method's
            # function (LooFlask), an instance it asks inspect about on every request.
            app.before_request_funcs.setdefault(name, []).append(check.__call__)
