"""Every blueprint of the v1 API, registered in one place."""

from __future__ import annotations

from typing import Any

from flask_smorest import Api

PROBLEM = "application/problem+json"


def register(api: Api) -> None:
    from ledger.api import clubs, history, play, published, records, tables

    for module in (tables, play, records, history, published, clubs):
        api.register_blueprint(module.blp)
    document_problems(api)
    from ledger.api.feeds import document

    document(api.spec._paths)  # noqa: SLF001 - see document_problems


def _as_problem(response: dict[str, Any]) -> None:
    content = response.get("content", {})
    if "application/json" in content:
        content[PROBLEM] = content.pop("application/json")


def document_problems(api: Api) -> None:
    """Errors are application/problem+json: say so in the spec, so it stays true."""
    for response in api.spec.components.responses.values():
        _as_problem(response)
    for item in api.spec._paths.values():  # noqa: SLF001 - apispec keeps no public accessor
        for op in item.values():
            if isinstance(op, dict):
                for status, response in op.get("responses", {}).items():
                    if str(status)[0] in "45" and isinstance(response, dict):
                        _as_problem(response)
