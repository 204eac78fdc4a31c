"""flask-smorest's Blueprint, with responses documented by schema but not re-serialised.

The views (ledger/views.py) already build plain JSON-ready dicts in the documented
shapes, and the response schemas keep every extra field, so `schema.dump` is an
identity that costs about a millisecond per action response. Here the schema only
documents the response; under TESTING every response is still dumped through its schema
and must come out unchanged, so the spec and the views cannot drift apart unnoticed.
Request schemas are instantiated once, not per request.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

import flask_smorest
from flask import Response
from flask_smorest.utils import unpack_tuple_response
from marshmallow import Schema

from ledger.api.context import flask_app


def _instance(schema: Any) -> Any:
    return schema() if isinstance(schema, type) and issubclass(schema, Schema) else schema


class Blueprint(flask_smorest.Blueprint):
    def arguments(self, schema: Any, *args: Any, **kwargs: Any) -> Callable[..., Any]:
        return super().arguments(_instance(schema), *args, **kwargs)

    def response(self, status_code: int | str, schema: Any = None,
                 **kwargs: Any) -> Callable[..., Any]:
        documented = super().response(status_code, schema, **kwargs)
        checker = _instance(schema)

        def decorator(func: Callable[..., Any]) -> Callable[..., Any]:
            @wraps(func)
            def as_json(*args: Any, **kw: Any) -> Any:
                result = func(*args, **kw)
                if isinstance(result, Response):
                    return result
                body, status, headers = unpack_tuple_response(result)
                app = flask_app()
                if checker is not None and app.testing:
                    dumped = checker.dump(body)
                    if dumped != body:
                        raise AssertionError(f"response differs from its schema "
                                             f"{type(checker).__name__}: {dumped!r} != {body!r}")
                resp = app.json.response(body)  # flask.jsonify, without its proxy read
                resp.status_code = int(status) if status is not None else int(status_code)
                if headers:
                    resp.headers.extend(headers)
                return resp

            return documented(as_json)

        return decorator
