"""What the service publishes for anyone to check its records offline: the checkpoint key and
the loo-hh JSON Schema (API.md "Checkpoints", "Hand history")."""

from __future__ import annotations

from typing import Any

from flask import Response
from flask.views import MethodView

from ledger.api import lists
from ledger.api.auth import ledger
from ledger.api.blueprint import Blueprint
from ledger.app.history import schema_text
from ledger.core.rules.bots import DESCRIPTIONS, POLICIES
from schemas.responses import BotsOut, CheckpointKeyOut

blp = Blueprint("published", __name__, url_prefix="/v1",
                description="Public material: the bot policies, and what verifies records "
                            "offline (the checkpoint key, the loo-hh JSON Schema).")


@blp.route("/bots")
class Bots(MethodView):
    @blp.doc(parameters=lists.params())
    @blp.response(200, BotsOut)
    def get(self) -> Any:
        """The bot policies a seat may name ("bot": name), each with its version."""
        _, limit, offset = lists.query({})
        return lists.page([{"name": name, "version": version, "description": DESCRIPTIONS.get(
            name, "")} for name, (_policy, version) in sorted(POLICIES.items())], limit, offset)


@blp.route("/checkpoints/key")
class CheckpointKey(MethodView):
    @blp.response(200, CheckpointKeyOut)
    def get(self) -> Any:
        """The public key that checkpoint signatures verify with (Ed25519, base64), and in
        `keys` every key a checkpoint of this service may carry: the current one and those
        retired by a rotation (LOO_CHECKPOINT_RETIRED_KEYS), each by its key_id; in
        `revoked` the keys it no longer trusts (LOO_CHECKPOINT_REVOKED_KEYS: leaked), whose
        checkpoints fail the audit and `loo verify --keys`."""
        return ledger().signer.public()


@blp.route("/schemas/loo-hh-1.0.json")
class HandHistorySchema(MethodView):
    @blp.response(200, {"type": "object", "description": "A JSON Schema (draft 2020-12)"},
                  description="The loo-hh 1.0 JSON Schema (draft 2020-12)",
                  content_type="application/schema+json")
    def get(self) -> Any:
        """The JSON Schema of a loo-hh 1.0 hand-history file."""
        return Response(schema_text(), mimetype="application/schema+json")
