"""Every blueprint of the v1 API, registered in one place."""

from __future__ import annotations

from flask_smorest import Api


def register(api: Api) -> None:
    from ledger.api import play, records, tables

    for module in (tables, play, records):
        api.register_blueprint(module.blp)
