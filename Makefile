# evalconsole — `make up` to run it, `make test` to test it, `make lint` to lint it.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 8000
DEMO_AGENT_PORT ?= 8001
PYTEST_ARGS ?=

.PHONY: up test install migrate demo serve worker clean lint check-migrations

# Pick an interpreter >= 3.12 (Django 6 needs it): the committed .python-version, then common names.
PYTHON_FOR_VENV := $(shell for c in python3.13 python3.12 python3 python; do \
	if command -v $$c >/dev/null 2>&1 && $$c -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then \
	echo $$c; break; fi; done)

$(PY):
	@if [ -z "$(PYTHON_FOR_VENV)" ]; then \
	  echo "evalconsole needs Python 3.12 or newer (Django 6). Install it (e.g. pyenv install 3.12) and retry." >&2; exit 1; fi
	$(PYTHON_FOR_VENV) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test]'
	@touch $@

install: $(VENV)/.installed

migrate: install
	$(PY) manage.py migrate --no-input -v 0

demo: migrate
	$(PY) manage.py load_demo --agent-url http://127.0.0.1:$(DEMO_AGENT_PORT)/

# Web server, worker and the demo agent in the foreground; Ctrl-C (or SIGTERM to make) stops all three.
up: demo
	@$(PY) manage.py collectstatic --no-input -v 0 >/dev/null 2>&1 || true
	@PY=$(PY) PORT=$(PORT) DEMO_AGENT_PORT=$(DEMO_AGENT_PORT) bash scripts/up.sh

# The whole suite, browser tests included, in one run of two processes (Playwright is started per browser test
# module, and once for tests/browser/, so its event loop never outlives them). Bytecode is written even where
# PYTHONDONTWRITEBYTECODE is set: every pytest process would otherwise rewrite and compile each test module
# again, and each of the hundreds of CLI, manage.py and worker subprocesses compile the project again.
test: install
	env -u PYTHONDONTWRITEBYTECODE $(PY) -m pytest -q -n 2 $(PYTEST_ARGS)

# The house ruff rules (pyproject.toml; adapters/python has its own for Python 3.9), with the pinned ruff.
lint: install
	$(VENV)/bin/ruff check .

check-migrations: install
	$(PY) manage.py makemigrations --check --dry-run

clean:
	rm -rf $(VENV) var/test_*.sqlite3*
