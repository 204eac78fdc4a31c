"""The error values of the product, by kind: what went wrong, never how a transport says it
(ledger/api/errors.py maps each kind to an HTTP status, the CLI to a one-line message)."""

from __future__ import annotations

from typing import Any


class LedgerError(Exception):
    """A failure a client caused or can act on."""

    def __init__(
        self, code: str, detail: str, *, rule: str | None = None, **extra: Any
    ) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail
        self.rule = rule
        self.extra = extra


class BadRequest(LedgerError):
    """The request cannot be read (malformed, or a bad header)."""


class Unauthorized(LedgerError):
    """No credentials, or credentials nobody issued."""


class Forbidden(LedgerError):
    """Credentials that may not do this."""


class NotFound(LedgerError):
    """The thing named does not exist (or is not the caller's to see)."""


class Conflict(LedgerError):
    """The request clashes with the current state (a live hand, a reused key)."""


class Invalid(LedgerError):
    """The request is understood but not allowed: a bad value, a rule broken."""


class RuleViolation(Invalid):
    """An action the rules forbid; `rule` names the section of the rule book it breaks."""

    def __init__(self, code: str, rule: str, detail: str) -> None:
        super().__init__(code, detail, rule=rule)
