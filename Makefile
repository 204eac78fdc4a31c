# The common tasks. `make run` and `make test` work from a fresh clone: each creates
# .venv and installs the project on first use (again only when pyproject.toml changes).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
PIP    := PYTHONWARNINGS=ignore $(BIN)/python -m pip install --quiet --disable-pip-version-check
ARGS   ?=
# `make bench` measures against these (override on the command line). The store, workers
# and api benches each work in a scratch schema of that database and drop it at the end.
BENCH_DATABASE_URL ?= postgresql://postgres@127.0.0.1:5432/test
BENCH_REDIS_URL    ?= redis://127.0.0.1:6379/15

.PHONY: run test lint bench install

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(PIP) -e '.[test]'
	@touch $@

$(VENV)/.installed-bench: pyproject.toml $(VENV)/.installed-test
	$(PIP) -e '.[test,bench]'
	@touch $@

install: $(VENV)/.installed-test

run: install
	$(BIN)/loo serve $(ARGS)

# Two xdist workers: each has its own PostgreSQL database and Redis db (tests/conftest.py).
test: install
	$(BIN)/pytest -n 2 $(ARGS)

lint: install
	$(BIN)/ruff check .

bench: $(VENV)/.installed-bench
	$(BIN)/loo bench engine
	$(BIN)/loo bench store --database-url '$(BENCH_DATABASE_URL)'
	$(BIN)/loo bench workers --database-url '$(BENCH_DATABASE_URL)' --redis-url '$(BENCH_REDIS_URL)'
	$(BIN)/loo bench api --database-url '$(BENCH_DATABASE_URL)'
	$(BIN)/loo bench standings --database-url '$(BENCH_DATABASE_URL)'
