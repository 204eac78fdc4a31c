"""docker-compose.yml agrees with the code: services, health checks, variables, commands.

No Docker engine runs here, so the file is checked as data (PyYAML) against Settings and
the `loo` command itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from click.testing import CliRunner

from ledger.bootstrap import ENV_VARS, Settings
from ledger.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
APP_SERVICES = ("api", "worker")


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]


def test_compose_has_postgres_redis_api_and_worker(services: dict[str, Any]) -> None:
    assert set(services) == {"postgres", "redis", "api", "worker"}
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
    assert set(env) <= set(ENV_VARS), set(env) - set(ENV_VARS)
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


def test_api_runs_gunicorn_on_the_published_port(services: dict[str, Any]) -> None:
    args = _command(services["api"])
    assert int(args[args.index("--workers") + 1]) > 1  # several processes: gunicorn
    port = args[args.index("--port") + 1]
    assert any(str(p).endswith(f":{port}") for p in services["api"]["ports"])
    assert args[args.index("--host") + 1] == "0.0.0.0"


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
