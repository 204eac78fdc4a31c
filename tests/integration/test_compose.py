"""docker-compose.yml agrees with the code: services, health checks, variables, commands,
the proxy in front of the API replicas.

No Docker engine runs here, so the file is checked as data (PyYAML) against Settings and
the `loo` command itself, and by `docker compose config` (or docker-compose) where one is
installed.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from click.testing import CliRunner

from ledger.api.app import trusted_proxies
from ledger.api.limits import ENV_VARS as LIMIT_ENV_VARS
from ledger.bootstrap import ENV_VARS, Settings
from ledger.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
APP_SERVICES = ("api", "worker")
API_ONLY_VARS = ("LOO_TRUSTED_PROXIES", "LOO_MAX_BODY_BYTES", *LIMIT_ENV_VARS)
NGINX_CONF = ROOT / "deploy" / "nginx.conf"


# Compose's interpolation of the operator's environment (and .env): ${VAR}, ${VAR:-default},
# ${VAR-default}; $$ is a dollar.
INTERPOLATED = re.compile(r"\$\$|\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)"
                          r"(?:(?P<op>:?-)(?P<default>[^}]*))?\}")


def interpolate(value: Any, host: dict[str, str]) -> Any:
    """A compose value as docker compose gives it to the container, the host's environment
    being `host` (a variable unset there and without a default is empty, as compose has it)."""
    if not isinstance(value, str):
        return value

    def one(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name, op = m.group("name"), m.group("op")
        if op == ":-" and not host.get(name):
            return m.group("default")
        if op == "-" and name not in host:
            return m.group("default")
        return host.get(name, "")

    return INTERPOLATED.sub(one, value)


def compose_services(host: dict[str, str]) -> dict[str, Any]:
    """The services, each `environment` interpolated from the host's environment `host`."""
    found = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    for service in found.values():
        env = service.get("environment")
        if isinstance(env, dict):
            service["environment"] = {k: interpolate(v, host) for k, v in env.items()}
    return found


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    return compose_services({})


def test_compose_has_postgres_redis_api_proxy_and_worker(services: dict[str, Any]) -> None:
    assert set(services) == {"postgres", "redis", "api", "proxy", "worker"}
    assert services["postgres"]["image"].startswith("postgres:16")
    assert services["redis"]["image"].startswith("redis:7")


def _check(service: dict[str, Any]) -> str:
    test = service["healthcheck"]["test"]
    return " ".join(test[1:]) if isinstance(test, list) else test


def test_databases_and_api_have_health_checks(services: dict[str, Any]) -> None:
    assert "pg_isready" in _check(services["postgres"])
    assert "redis-cli ping" in _check(services["redis"])
    assert "/healthz" in _check(services["api"])


@pytest.mark.parametrize("name", APP_SERVICES)
def test_app_services_wait_for_healthy_databases(services: dict[str, Any], name: str) -> None:
    deps = services[name]["depends_on"]
    for db in ("postgres", "redis"):
        assert deps[db]["condition"] == "service_healthy"


@pytest.mark.parametrize("name", APP_SERVICES)
def test_app_services_set_only_variables_settings_reads(services: dict[str, Any],
                                                        name: str) -> None:
    env = services[name]["environment"]
    known = set(ENV_VARS) | (set(API_ONLY_VARS) if name == "api" else set())
    assert set(env) <= known, set(env) - known
    settings = Settings.from_env(env)  # the values pass the same validation
    assert settings.database_url.startswith("postgresql://")
    assert settings.redis_url is not None and settings.redis_url.startswith("redis://")


@pytest.mark.parametrize("name", APP_SERVICES)
def test_app_services_point_at_the_compose_databases(services: dict[str, Any],
                                                     name: str) -> None:
    env = services[name]["environment"]
    pg_env = services["postgres"]["environment"]
    db = urlsplit(env["DATABASE_URL"])
    assert (db.hostname, db.port or 5432) == ("postgres", 5432)
    assert (db.username, db.password, db.path.lstrip("/")) == (
        pg_env["POSTGRES_USER"], pg_env["POSTGRES_PASSWORD"], pg_env["POSTGRES_DB"])
    assert urlsplit(env["REDIS_URL"]).hostname == "redis"


def _command(service: dict[str, Any]) -> list[str]:
    command = service["command"]
    return command.split() if isinstance(command, str) else list(command)


@pytest.mark.parametrize("name", APP_SERVICES)
def test_app_commands_are_real_loo_subcommands(services: dict[str, Any], name: str) -> None:
    program, *args = _command(services[name])
    assert program == "loo"
    result = CliRunner().invoke(main, [*args, "--help"])
    assert result.exit_code == 0, result.output
    # The option values parse too (types and ranges), without running anything.
    sub = main.get_command(main.make_context("loo", list(args[:1])), args[0])
    assert sub is not None
    sub.make_context(args[0], list(args[1:]))


def test_api_replicas_run_gunicorn_behind_the_proxy(services: dict[str, Any]) -> None:
    api, proxy = services["api"], services["proxy"]
    args = _command(api)
    assert int(args[args.index("--workers") + 1]) > 1  # several processes: gunicorn
    assert args[args.index("--host") + 1] == "0.0.0.0"
    port = args[args.index("--port") + 1]
    assert api["deploy"]["replicas"] >= 2
    # Replicas publish no port (two could not share one); only the proxy does.
    assert "ports" not in api and "container_name" not in api
    assert [str(p) for p in api["expose"]] == [port]
    assert any(str(p).endswith(":8000") for p in proxy["ports"])
    assert proxy["depends_on"]["api"]["condition"] == "service_healthy"
    conf = NGINX_CONF.read_text()
    assert re.search(rf"server\s+api:{port}\s*;", conf)
    assert any(v.startswith("./deploy/nginx.conf:/etc/nginx/nginx.conf") for v in proxy["volumes"])


def test_the_api_trusts_exactly_the_proxy_in_front(services: dict[str, Any]) -> None:
    """One nginx appends the address it saw to X-Forwarded-For: the API trusts one proxy,
    so it keys on that entry and never on one a client wrote (tests/e2e/test_rate_limits)."""
    assert trusted_proxies(services["api"]["environment"]) == 1
    assert "LOO_TRUSTED_PROXIES" not in services["worker"]["environment"]
    conf = NGINX_CONF.read_text()
    forwarded = re.findall(r"proxy_set_header\s+X-Forwarded-For\s+(\S+);", conf)
    assert forwarded in (["$proxy_add_x_forwarded_for"], ["$remote_addr"])
    assert re.search(r"proxy_set_header\s+X-Forwarded-Proto\s+\$scheme;", conf)
    # The proxy's body cap is the API's (LOO_MAX_BODY_BYTES default, 8 MiB).
    assert re.search(r"client_max_body_size\s+8m;", conf)


# The services whose processes sign checkpoints or check them (serving, auditing, settling
# hands, `docker compose run --rm worker loo ...`).
CHECKPOINT_SERVICES = APP_SERVICES


@pytest.mark.parametrize("var", ["LOO_CHECKPOINT_RETIRED_KEYS", "LOO_CHECKPOINT_REVOKED_KEYS"])
@pytest.mark.parametrize("name", CHECKPOINT_SERVICES)
def test_checkpoint_retired_keys_pass_through_to_every_service_that_signs(name: str,
                                                                          var: str) -> None:
    """README "Rotating the checkpoint key" step 3: the operator sets
    LOO_CHECKPOINT_RETIRED_KEYS (and, for a key that leaked, LOO_CHECKPOINT_REVOKED_KEYS) in
    .env or the shell, and every process must get it; the compose file passed nothing, so
    after a rotation every table signed before failed its audit. Empty by default."""
    field = var.removeprefix("LOO_").lower()  # the Settings field
    raw = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"][name]
    assert "${" + var in str(raw["environment"].get(var)), raw["environment"]
    assert compose_services({})[name]["environment"][var] == ""
    assert getattr(Settings.from_env(compose_services({})[name]["environment"]), field) == ()
    key = "ab" * 32  # a public key (hex) a rotation printed
    env = compose_services({var: key})[name]["environment"]
    assert getattr(Settings.from_env(env), field) == (key,)


def test_compose_config_validates(tmp_path: Path) -> None:
    if shutil.which("docker") and subprocess.run(
            ["docker", "compose", "version"], capture_output=True, check=False).returncode == 0:
        argv = ["docker", "compose"]
    elif shutil.which("docker-compose"):
        argv = ["docker-compose"]
    else:
        pytest.skip("neither `docker compose` nor docker-compose is installed")
    done = subprocess.run([*argv, "-f", str(ROOT / "docker-compose.yml"), "config", "-q"],
                          capture_output=True, text=True, timeout=60, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr


def test_worker_can_be_scaled(services: dict[str, Any]) -> None:
    worker = services["worker"]
    assert "container_name" not in worker and "ports" not in worker  # both block --scale
    assert worker["deploy"]["replicas"] >= 1
    assert worker["image"] == services["api"]["image"]  # one image, two commands


def test_dockerfile_installs_the_package_on_python_311() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert "FROM python:3.11-slim" in text
    assert "pip install ." in text
    for needed in ("pyproject.toml", "README.md", "ledger", "workers", "schemas"):
        assert needed in text


def test_readme_documents_every_variable_and_compose() -> None:
    readme = (ROOT / "README.md").read_text()
    for var in ENV_VARS:
        assert f"`{var}`" in readme
    assert "docker compose up" in readme
