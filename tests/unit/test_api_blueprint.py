"""The API's Blueprint: schemas document responses; under TESTING they must match them."""

from __future__ import annotations

import pytest
from flask import Flask
from flask_smorest import Api
from marshmallow import Schema, fields

from ledger.api.blueprint import Blueprint


class Out(Schema):
    n = fields.String()


def make_app(value: object) -> Flask:
    app = Flask(__name__)
    app.config.update(API_TITLE="t", API_VERSION="v1", OPENAPI_VERSION="3.0.3", TESTING=True)
    api = Api(app)
    blp = Blueprint("b", __name__)

    @blp.route("/x")
    @blp.response(201, Out)
    def x() -> object:
        return {"n": value}

    api.register_blueprint(blp)
    return app


def test_response_passes_through_with_the_documented_status() -> None:
    resp = make_app("five").test_client().get("/x")
    assert resp.status_code == 201 and resp.get_json() == {"n": "five"}
    spec = make_app("five").extensions["flask-smorest"]["apis"][""]["ext_obj"].spec.to_dict()
    assert "201" in spec["paths"]["/x"]["get"]["responses"]


def test_a_response_its_schema_would_change_fails_under_testing() -> None:
    with pytest.raises(AssertionError, match="differs from its schema"):
        make_app(5).test_client().get("/x")  # String would dump 5 as "5"
