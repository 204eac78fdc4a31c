"""The Flask application factory: config, OpenAPI, health, error handling, blueprints."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from inspect import iscoroutinefunction
from types import FunctionType
from typing import Any

import marshmallow as ma
from flask import Flask, Response, current_app, send_from_directory
from flask.views import MethodView
from flask_smorest import Api
from werkzeug.exceptions import NotFound, RequestEntityTooLarge, UnsupportedMediaType
from werkzeug.middleware.proxy_fix import ProxyFix

from ledger.api import errors
from ledger.api.blueprint import Blueprint
from ledger.api.context import current_request, flask_app
from ledger.api.jsonio import OrjsonProvider
from ledger.bootstrap import ENV_VARS, ConfigError, Container, Settings, bootstrap, one_line

log = logging.getLogger(__name__)

SWAGGER_UI_ASSETS = "/assets/swagger-ui/"  # the pinned flask-swagger-ui package's copy
API_CONFIG = {
    "API_TITLE": "Domino Loo ledger",
    "API_VERSION": "v1",
    "OPENAPI_VERSION": "3.0.3",
    "OPENAPI_URL_PREFIX": "/",
    "OPENAPI_JSON_PATH": "openapi.json",
    # /docs: Swagger UI, rendered by flask-smorest, its scripts and stylesheet served from
    # this process (nothing is fetched from elsewhere; no online validator badge).
    "OPENAPI_SWAGGER_UI_PATH": "docs",
    "OPENAPI_SWAGGER_UI_URL": SWAGGER_UI_ASSETS,
    "OPENAPI_SWAGGER_UI_CONFIG": {"validatorUrl": None, "deepLinking": True,
                                  "displayOperationId": True, "tryItOutEnabled": False},
}


class ProblemSchema(ma.Schema):
    """application/problem+json (RFC 9457) with the API's stable `code`."""

    class Meta:
        unknown = ma.INCLUDE  # problems may carry extra members (RFC 9457 §3.2)

    type = ma.fields.String(required=True, metadata={
        "description": "where this problem is explained: the rule it cites (/docs/rules#rule-6.3) "
                       "or its code's entry (/docs/http#problem-table_not_found); match on `code`"})
    title = ma.fields.String(required=True)
    status = ma.fields.Integer(required=True)
    detail = ma.fields.String(required=True)
    code = ma.fields.String(required=True, metadata={"description": "stable, for machines: "
                                                                   "match on it"})
    rule = ma.fields.String(metadata={"description": "the section of the rule book broken"})
    rule_url = ma.fields.String(metadata={"description": "where that rule reads, /docs/rules"})
    rule_text = ma.fields.String(metadata={"description": "the rule's own words"})
    errors = ma.fields.Dict()
    field = ma.fields.String(metadata={"description": "the request's field (or query "
                                                      "parameter) the problem is with"})
    expected_version = ma.fields.Integer(metadata={
        "description": "version_conflict: the expected_version sent"})
    version = ma.fields.Integer(metadata={
        "description": "version_conflict: the stream's version now (read it again)"})
    checks = ma.fields.Dict(metadata={"description": "/readyz: each dependency's state"})


class LooFlask(Flask):
    """Flask, asking once per function whether it is a coroutine function, not on every call.

    Flask passes every hook and view through ensure_sync on each request (13 times for a
    POST /actions), and each time inspect.iscoroutinefunction unwraps and inspects it:
    about 4% of the request's CPU under cProfile. The answer is a property of the function's
    code, so it is kept per plain function (a bound method by its function; anything else,
    such as a partial, is asked each time as before). Async views still run through
    async_to_sync, as Flask's own ensure_sync does."""

    SYNC_KNOWN_MAX = 4096  # distinct functions remembered (hooks and views are far fewer)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._plain_sync: dict[Callable[..., Any], bool] = {}

    def ensure_sync(self, func: Callable[..., Any]) -> Callable[..., Any]:
        # A plain function is its own key (asking it for __func__ would raise and format an
        # AttributeError inside getattr every time); a bound method is found by __func__.
        known = self._plain_sync.get(func)
        plain = func
        if known is None:
            plain = getattr(func, "__func__", func)
            known = self._plain_sync.get(plain)
        if known is None:
            if not isinstance(plain, FunctionType):
                return super().ensure_sync(func)
            known = not iscoroutinefunction(plain)  # what Flask's ensure_sync asks
            if len(self._plain_sync) < self.SYNC_KNOWN_MAX:
                self._plain_sync[plain] = known
        return func if known else super().ensure_sync(func)


class LooApi(Api):
    ERROR_SCHEMA = ProblemSchema


class HealthOut(ma.Schema):
    status = ma.fields.String()


class ReadyOut(ma.Schema):
    store = ma.fields.Dict()
    queue = ma.fields.Dict()


health = Blueprint("health", __name__, description="Liveness and readiness probes.")


@health.route("/healthz")
class Healthz(MethodView):
    @health.response(200, HealthOut)
    def get(self) -> Any:
        """The process is up (it touches neither the store nor the queue)."""
        return {"status": "ok"}


@health.route("/readyz")
class Readyz(MethodView):
    @health.response(200, ReadyOut)
    @health.alt_response(503, schema=ProblemSchema, description="The store or queue is down")
    def get(self) -> Any:
        """The store and the queue this process uses answer, and which they are; 503 with
        each dependency's state (`checks`) when one does not."""
        container: Container = current_app.extensions["loo_container"]
        out: dict[str, Any] = {}
        down: list[str] = []
        for name, ping in (("store", container.store.ping), ("queue", container.dispatcher.ping)):
            try:
                out[name] = ping()
            except Exception as err:  # any failure of a dependency means "not ready"
                log.warning("readiness: %s: %s", name, one_line(err))
                out[name] = {"error": one_line(err)}
                down.append(name)
        if down:
            return errors.problem(503, f"{down[0]}_unavailable", "Service unavailable",
                                  "; ".join(f"the {n} does not answer: {out[n]['error']}"
                                            for n in down),
                                  headers={"Retry-After": "2"},
                                  extra={"checks": {n: {"ok": n not in down, **v}
                                                    for n, v in out.items()}})
        return out


@health.route("/metrics")
class Metrics(MethodView):
    @health.doc(responses={"200": {
        "description": "Prometheus text exposition: HTTP requests by route and status, "
                       "latency histograms, events appended by type, the queue's depth and "
                       "jobs by state",
        "content": {"text/plain": {"schema": {"type": "string"}}}}})
    def get(self) -> Any:
        """Metrics for Prometheus (of every worker process of this server)."""
        from ledger.api.observability import metrics_view

        return metrics_view()


SWAGGER_UI_FILES = frozenset({"swagger-ui.css", "swagger-ui-bundle.js",
                              "swagger-ui-standalone-preset.js", "favicon-32x32.png"})


def swagger_ui_asset(filename: str) -> Response:
    """Swagger UI's files, as the pinned flask-swagger-ui package ships them (its dist/):
    only those the page loads."""
    import flask_swagger_ui

    if filename not in SWAGGER_UI_FILES:
        raise NotFound()
    folder = os.path.join(os.path.dirname(flask_swagger_ui.__file__), "dist")
    return send_from_directory(folder, filename, max_age=86400)


DEFAULT_MAX_BODY = 8 * 1024 * 1024  # a loo-hh import of a long table fits; LOO_MAX_BODY_BYTES


def require_json_body() -> None:
    """A body over the cap is refused on its announced length, before a byte of it is read
    (413); a write with a body that is not JSON is refused up front (415), not half-parsed."""
    req = current_request()  # one proxy lookup (ledger/api/context.py)
    limit = flask_app().config.get("MAX_CONTENT_LENGTH")
    # The request's own limit, the app's: Flask's Request.max_content_length otherwise
    # reads the app's config through current_app whenever the body is read.
    req.max_content_length = limit
    if limit is not None and (req.content_length or 0) > limit:
        raise RequestEntityTooLarge(
            f"the request body is {req.content_length} bytes; the limit is {limit}")
    ndjson = req.mimetype == "application/x-ndjson" and req.path.endswith(
        "/tables/import")  # loo-hh files, one a line (API.md Hand history)
    if req.method in {"POST", "PUT", "PATCH"} and req.content_length \
            and not req.is_json and not ndjson:
        raise UnsupportedMediaType("send the body as JSON, with Content-Type: application/json")


def register_blueprints(api: Api) -> None:
    """Registration point for the resources: ledger/api/routes.py lists every blueprint."""
    from ledger.api import routes

    routes.register(api)


def create_app(container: Container | None = None,
               test_config: Mapping[str, Any] | None = None) -> Flask:
    """A new app; without a container one is composed from the environment.

    `test_config` overrides Flask config, and its DATABASE_URL / REDIS_URL / LOO_* keys
    override the environment when the container is composed here.
    """
    # templates/: swagger_ui.html, flask-smorest's page for /docs with the site's header
    # (the application's templates come before those of flask-smorest's blueprint).
    app = LooFlask("ledger", template_folder="api/templates")
    app.json = OrjsonProvider(app)
    app.config.from_mapping(API_CONFIG)
    # Werkzeug refuses a longer body (413) also when no length was announced (chunked).
    app.config["MAX_CONTENT_LENGTH"] = max_body_bytes(os.environ)
    app.config.from_mapping(test_config or {})
    if container is None:
        overrides = {k: str(v) for k, v in (test_config or {}).items() if k in ENV_VARS}
        container = bootstrap(Settings.from_env({**os.environ, **overrides}))
    app.extensions["loo_container"] = container
    app.extensions["loo_ledger"] = container.ledger
    from ledger.api.feeds import feed_config

    app.extensions["loo_feed_config"] = feed_config({**os.environ, **{
        k: str(v) for k, v in (test_config or {}).items() if k.startswith(("LOO_SSE_",
                                                                          "LOO_FEED_"))}})
    api = LooApi(app)
    app.extensions["loo_api"] = api
    errors.register(app)  # after Api(app): replaces flask-smorest's JSON error handler
    api.register_blueprint(health)
    register_blueprints(api)
    from ledger.api import query

    query.install(app, api.spec._paths)  # noqa: SLF001 - the operations' declared queries
    app.add_url_rule(SWAGGER_UI_ASSETS + "<path:filename>", "swagger_ui_asset",
                     swagger_ui_asset)
    from ledger.web import register as register_web

    register_web(app)  # the pages: ledger/web (templates, static, scripts on the public API)
    from ledger.api import limits, observability

    observability.install(app)  # first: requests refused by the limiter are counted too
    limit_env = {**os.environ, **{k: str(v) for k, v in (test_config or {}).items()
                                  if k in limits.ENV_VARS}}
    limits.install(app, limit_env, container.settings.redis_url, container.settings.queue_name)
    app.before_request(require_json_body)  # after the limiter's: a 429 reads no body
    app.after_request(final_headers)
    proxies = trusted_proxies({**os.environ, **{k: str(v) for k, v in (test_config or {}).items()
                                                if k == "LOO_TRUSTED_PROXIES"}})
    if proxies:
        # The client's address (request.remote_addr: rate limits, logs) is the one the
        # nearest `proxies` proxies appended to X-Forwarded-For; anything further left was
        # written by the client and is ignored. Without the variable the header is ignored.
        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=proxies, x_proto=proxies)  # type: ignore[method-assign]
    return app


def trusted_proxies(environ: Mapping[str, str]) -> int:
    """LOO_TRUSTED_PROXIES: how many proxies in front of the API set X-Forwarded-For."""
    raw = environ.get("LOO_TRUSTED_PROXIES", "").strip()
    if not raw:
        return 0
    if not raw.isdigit() or int(raw) > 10:
        raise ConfigError(f"LOO_TRUSTED_PROXIES: {raw!r} is not a number of proxies (0-10)")
    return int(raw)


def max_body_bytes(environ: Mapping[str, str]) -> int:
    raw = environ.get("LOO_MAX_BODY_BYTES", "").strip()
    if not raw:
        return DEFAULT_MAX_BODY
    if not raw.isdigit() or int(raw) < 1024:
        raise ConfigError(f"LOO_MAX_BODY_BYTES: {raw!r} is not a whole number of bytes >= 1024")
    return int(raw)


def final_headers(resp: Response) -> Response:
    """After a 413 the unread body is not drained (it may be gigabytes): the connection
    closes instead of being kept alive for the next request. The API's answers are never
    kept by a cache (Cache-Control: no-store, unless the route said otherwise, as the feeds
    do): they carry tokens shown once (a new table's, a club's), tiles only one seat may
    see, and state that changes with every move."""
    if resp.status_code == 413:
        resp.headers["Connection"] = "close"
    headers = resp.headers
    if "Cache-Control" not in headers and current_request().path.startswith("/v1/"):
        headers["Cache-Control"] = "no-store"
    return resp
