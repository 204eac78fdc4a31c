"""The request path's shortcuts answer as the long way did."""

from __future__ import annotations

import pytest
from flask import Flask
from marshmallow import Schema, fields

from ledger.api.app import LooFlask
from ledger.api.writes import BODY_PARSER
from ledger.core.errors import Invalid


class Label(Schema):
    label = fields.String()


def test_ensure_sync_returns_sync_functions_as_they_are_and_still_wraps_coroutines():
    app = LooFlask(__name__)
    wrapped: list[object] = []
    app.async_to_sync = lambda fn: wrapped.append(fn) or "wrapped"  # type: ignore[method-assign]

    def plain() -> None: ...

    async def coroutine() -> None: ...

    class View:
        def get(self) -> None: ...

        async def post(self) -> None: ...

    view = View()
    for _ in range(2):  # asked, then known
        assert app.ensure_sync(plain) is plain
        assert app.ensure_sync(view.get) == view.get
        assert app.ensure_sync(coroutine) == "wrapped"
        assert app.ensure_sync(view.post) == "wrapped"
    assert wrapped == [coroutine, view.post] * 2


@pytest.mark.parametrize("raw", [b'{"label": "a\\u0000b"}', b'{"label": "\\ud800"}',
                                 b'{"label": "x\\\\\\u0000"}'])
def test_a_nul_or_lone_surrogate_escaped_in_a_body_is_refused(raw: bytes):
    app = Flask(__name__)
    with app.test_request_context("/", method="POST", data=raw,
                                  content_type="application/json"), \
            pytest.raises(Invalid, match="NUL character"):
        BODY_PARSER.parse(Label(), location="json")


def test_a_body_without_escapes_is_taken_as_it_is():
    app = Flask(__name__)
    raw = '{"label": "Zoë ✓ \\\\ 1"}'.encode()
    with app.test_request_context("/", method="POST", data=raw,
                                  content_type="application/json"):
        assert BODY_PARSER.parse(Label(), location="json") == {"label": "Zoë ✓ \\ 1"}


def test_query_text_is_still_checked():
    app = Flask(__name__)
    with app.test_request_context("/?label=a%00b"), pytest.raises(Invalid):
        BODY_PARSER.parse(Label(), location="query")
