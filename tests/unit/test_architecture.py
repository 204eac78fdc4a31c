"""The rooms of the house (docs/architecture.md): each imports only what its room may.

- ledger/core: the rules and the event vocabulary, stdlib only, nothing outside ledger.core;
- ledger/store: game-agnostic: never the rules, the application or the API;
- ledger/api and ledger/web: the application layer's offer, never the store directly.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STDLIB = set(sys.stdlib_module_names) | {"__future__"}


def imports(path: Path) -> list[str]:
    """Every module a file imports, at any depth (function-level imports included)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append(node.module)
    return found


def files(room: str) -> list[Path]:
    return sorted((ROOT / room).rglob("*.py"))


@pytest.mark.parametrize("path", files("ledger/core"), ids=str)
def test_core_imports_only_the_core_and_the_standard_library(path: Path):
    bad = [m for m in imports(path)
           if not (m == "ledger.core" or m.startswith("ledger.core.")
                   or m.split(".")[0] in STDLIB)]
    assert bad == [], f"{path.relative_to(ROOT)} imports {bad}"


@pytest.mark.parametrize("path", files("ledger/store"), ids=str)
def test_the_store_knows_no_game_application_or_api(path: Path):
    bad = [m for m in imports(path) if m.startswith(("ledger.core", "ledger.app", "ledger.api",
                                                      "ledger.web", "workers", "schemas"))]
    assert bad == [], f"{path.relative_to(ROOT)} imports {bad}"


@pytest.mark.parametrize("path", files("ledger/api") + files("ledger/web"), ids=str)
def test_the_api_never_imports_the_store(path: Path):
    bad = [m for m in imports(path) if m.startswith("ledger.store")]
    assert bad == [], f"{path.relative_to(ROOT)} imports {bad}"


def test_the_checks_see_every_room():
    assert files("ledger/core") and files("ledger/store") and files("ledger/api")
    assert "ledger.core.rules.tiles" in imports(ROOT / "ledger/core/events.py")


@pytest.mark.parametrize("path", files("ledger/api") + files("ledger/web"), ids=str)
def test_the_api_reads_through_the_application_never_the_store(path: Path):
    # The ledger offers every read the API needs (events, versions, the global order,
    # idempotent results, first answers); only the readiness probe asks the container's
    # store whether it is up.
    tree = ast.parse(path.read_text())
    bad = [node.lineno for node in ast.walk(tree)
           if isinstance(node, ast.Attribute) and node.attr == "store"
           and not (isinstance(node.value, ast.Name) and node.value.id == "container")]
    assert bad == [], f"{path.relative_to(ROOT)} reaches the store at lines {bad}"
