# Two commands on a fresh machine with Python 3.11, pip, make and apt:
#   make run    install what the app needs (Debian chromium for figure downloads included; PDF=1 adds Playwright for PDF reports) and start it on http://localhost:8501
#   make test   install what the tests need (Debian chromium, a headless JRE for Spark and PostgreSQL for the ledger tests included) and run the whole suite
# While editing: make test-fast (ruff + pytest without the browser tests and the tests marked slow, under 45 s).
PY ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8501
ADDRESS ?= 127.0.0.1  # this machine only: another address needs sign-in (docs/deployment.md)

.PHONY: run test test-fast lint docs bench bench-app chromium java postgres clean

# Debian's python3.11 needs its -venv package for ensurepip: install it with apt when venv fails.
$(BIN)/python:
	@$(PY) -m venv $(VENV) 2>/dev/null || { rm -rf $(VENV); \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  echo "python -m venv failed: installing Debian's venv package with apt"; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq python3-venv \
	    "python$$($(PY) -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')-venv" >/dev/null; \
	  $(PY) -m venv $(VENV); }
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.app-installed: requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev-installed: requirements.txt requirements-pdf.txt requirements-dev.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $(VENV)/.app-installed $@

# the app's runtime has no Spark and no Playwright: PDF=1 make run adds Playwright for the PDF report downloads
run: $(VENV)/.app-installed chromium
	$(if $(PDF),$(BIN)/pip install --quiet -r requirements-pdf.txt)
	$(BIN)/python -m dpsurv_app.serving $(ADDRESS)
	$(BIN)/python -m streamlit run dpsurv_app/app.py --server.headless true --server.address $(ADDRESS) --server.port $(PORT) --browser.gatherUsageStats false

# Debian's chromium for the app's PNG/SVG/PDF downloads and the browser tests (playwright cannot download browsers here).
chromium:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  echo "installing Debian chromium (figure and PDF downloads, browser tests)"; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null \
	    || echo "chromium could not be installed: figure and PDF downloads are off and browser tests will be skipped"; \
	else echo "apt-get is unavailable: browser tests will be skipped (they need Debian chromium)"; fi

# Debian's headless Java runtime for the Spark engine tests (PySpark itself comes from requirements-dev.txt).
java:
	@if command -v java >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  echo "installing Debian's headless JRE for the Spark engine tests"; \
	  $$SUDO apt-get update -qq && { DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null \
	    || DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq default-jre-headless >/dev/null; } \
	    || echo "Java could not be installed: the Spark engine tests will be skipped"; \
	else echo "apt-get is unavailable: the Spark engine tests will be skipped (they need Java)"; fi

# Debian's PostgreSQL server binaries for the PostgreSQL ledger tests (each session starts a throw-away cluster).
postgres:
	@if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1; then \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  echo "installing Debian's postgresql for the PostgreSQL ledger tests"; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq postgresql >/dev/null \
	    || echo "PostgreSQL could not be installed: the PostgreSQL ledger tests will be skipped"; \
	else echo "apt-get is unavailable: the PostgreSQL ledger tests will be skipped (they need Debian's postgresql)"; fi

# Tests run in as many processes as the machine has cores (pytest-xdist; each test file stays in one process, so
# its module fixtures are built once); the 20 slowest are listed at the end.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
# pytest keeps its assertion-rewritten test modules in __pycache__ (git ignores it); with PYTHONDONTWRITEBYTECODE set
# (as on this machine) every test process re-parses and rewrites all ~180 test files at each run, ~8 CPU s apiece
PYTEST := PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest
test: $(VENV)/.dev-installed chromium java postgres
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(PYTEST) -q -p no:cacheprovider -n $(JOBS) --dist loadfile --durations=20

# No browser (marker browser, folder tests/e2e) and no tests marked slow; make test still runs them all.
FAST_MARKERS ?= not browser and not slow
test-fast: $(VENV)/.dev-installed
	$(BIN)/ruff check .
	$(PYTEST) -q -p no:cacheprovider -n $(JOBS) --dist loadfile -m "$(FAST_MARKERS)" --ignore=tests/e2e

# The documentation site (MkDocs, API reference from the docstrings) into build/site; make test builds it strict too.
docs: $(VENV)/.dev-installed
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

lint: $(VENV)/.dev-installed
	$(BIN)/ruff check .

# perf: ratios against lifelines; timings: the speed targets that used to be assertions in the tests
bench: $(VENV)/.dev-installed
	$(BIN)/python -m benchmarks
	$(BIN)/python -m benchmarks timings

# the app's page timings in Debian chromium (not part of CI)
bench-app: $(VENV)/.dev-installed chromium
	$(BIN)/python -m benchmarks app

clean:
	rm -rf $(VENV) tests/artifacts .pytest_cache .hypothesis .mypy_cache
