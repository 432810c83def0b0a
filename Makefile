# Two commands for a new user: `make demo` and `make test` (see README.md). Both work from a fresh clone.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
STAMP := $(VENV)/.installed
TEST_DATABASE_URL ?= postgres://postgres@127.0.0.1:5432/test
TEST_REDIS_URL ?= redis://127.0.0.1:6379/0

.PHONY: demo test test-fast install lint guidellm

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Reinstall only when the project's dependencies change.
$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev,official,tokenizer-llama3]'
	touch $(STAMP)

install: $(STAMP)

# GuideLLM 0.8.1 in a venv of its own (its dependencies are not the portal's): the spot-check's load generator and
# the mock endpoint of its tests and benchmark (docs/remeasurement.md). PORTAL_GUIDELLM_BIN points at it.
GUIDELLM_VENV := .venv-guidellm
$(GUIDELLM_VENV)/.installed:
	$(PYTHON) -m venv $(GUIDELLM_VENV)
	$(GUIDELLM_VENV)/bin/python -m pip install --quiet guidellm==0.8.1
	touch $@

guidellm: $(GUIDELLM_VENV)/.installed

# Zero-config demo: SQLite + local files under ./var/, tasks in-process, plain http on loopback. Run again, it reuses
# the seeded demo database (DEMO_RESET=1 rebuilds it); links it prints carry PORT. NimbusCloud's NB-2 declares the
# endpoint http://127.0.0.1:18110: the demo serves it with `guidellm mock-server` at the settings its c2 point was
# recorded against (bench/spotcheck_demo_fixture.py), so an auditor's re-measurement runs end to end (the egress
# guard lets loopback through in the demo only).
DEMO_ENV := env -u DATABASE_URL -u REDIS_URL PORTAL_SITE_URL=http://127.0.0.1:$(PORT)
DEMO_ENDPOINT_PORT := 18110
DEMO_MOCK_ARGS := --host 127.0.0.1 --port $(DEMO_ENDPOINT_PORT) --model meta-llama/Llama-3.1-8B-Instruct \
	--ttft-ms 94 --ttft-ms-std 23.5 --itl-ms 11.2 --itl-ms-std 2.8 --output-tokens 120 --output-tokens-std 30
demo: install guidellm
	@$(DEMO_ENV) $(BIN)/python manage.py demo_database_check
	@$(DEMO_ENV) $(BIN)/python manage.py migrate --noinput --verbosity 0
	@$(DEMO_ENV) $(BIN)/python manage.py collectstatic --noinput --verbosity 0
	@$(DEMO_ENV) $(BIN)/python manage.py seed_demo $(if $(DEMO_RESET),--reset,)
	@echo "Endpoints Portal demo on http://127.0.0.1:$(PORT)/  (Ctrl-C to stop)"
	@$(GUIDELLM_VENV)/bin/guidellm mock-server $(DEMO_MOCK_ARGS) >var/demo-endpoint.log 2>&1 & mock=$$!; \
	trap 'kill $$mock 2>/dev/null' EXIT INT TERM; \
	$(DEMO_ENV) PORTAL_SECURE_COOKIES=0 PORTAL_EGRESS_ALLOW_LOOPBACK=1 $(BIN)/python manage.py runserver 127.0.0.1:$(PORT)

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy checker
	$(BIN)/lint-imports
	$(BIN)/python manage.py layout_doc

# Full suite against PostgreSQL + Redis (DATABASE_URL / REDIS_URL, defaulting to the local services); GuideLLM for
# the spot-check tests (tests/spotchecks: a real worker runs it against `guidellm mock-server`).
test: install guidellm
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy checker
	$(BIN)/lint-imports
	DATABASE_URL="$${DATABASE_URL:-$(TEST_DATABASE_URL)}" REDIS_URL="$${REDIS_URL:-$(TEST_REDIS_URL)}" \
		$(BIN)/python manage.py makemigrations --check --dry-run
	DATABASE_URL="$${DATABASE_URL:-$(TEST_DATABASE_URL)}" REDIS_URL="$${REDIS_URL:-$(TEST_REDIS_URL)}" \
		$(BIN)/python -m pytest

# The developer's loop: lint and every test that starts nothing of its own (no browser, worker, S3 server or
# server process; tests/conftest.py marks those from the fixtures they use) and is not a sweep (marker slow: the whole
# demo seeded, the permission matrix's cells, every route or field with hostile values), in two processes (TEST_PROCESSES), a module per process at a
# time. `make test` still runs everything, in one process.
FAST := not (browser or worker or s3 or server or slow)
test-fast: install
	$(BIN)/ruff check .
	DATABASE_URL="$${DATABASE_URL:-$(TEST_DATABASE_URL)}" REDIS_URL="$${REDIS_URL:-$(TEST_REDIS_URL)}" \
		$(BIN)/python -m pytest -q -m "$(FAST)" -n $${TEST_PROCESSES:-2} --dist loadfile
