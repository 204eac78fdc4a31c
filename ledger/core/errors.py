"""The error values of the product; mapped to problem+json in one place (ledger/api/errors.py)."""

from __future__ import annotations

from typing import Any


class LedgerError(Exception):
    """A failure a client caused or can act on."""

    status = 400
    title = "Bad request"

    def __init__(
        self, code: str, detail: str, *, rule: str | None = None, **extra: Any
    ) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.rule = rule
        self.extra = extra


class BadRequest(LedgerError):
    status, title = 400, "Bad request"


class Unauthorized(LedgerError):
    status, title = 401, "Unauthorized"


class Forbidden(LedgerError):
    status, title = 403, "Forbidden"


class NotFound(LedgerError):
    status, title = 404, "Not found"


class Conflict(LedgerError):
    status, title = 409, "Conflict"


class Invalid(LedgerError):
    status, title = 422, "Unprocessable content"


class RuleViolation(Invalid):
    """An action the rules of RULES.md forbid; `rule` names the section it breaks."""

    title = "Rule violation"

    def __init__(self, code: str, rule: str, detail: str) -> None:
        super().__init__(code, detail, rule=rule)
