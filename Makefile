# crosstrace — `make help` lists every target. Everything runs from the repository's .venv.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.DEFAULT_GOAL := help

.PHONY: help ## list the targets
help:
	@grep -hE '^\.PHONY: [a-zA-Z_-]+ ## ' $(MAKEFILE_LIST) | awk '{t=$$2; sub(/^[^#]*## /, ""); printf "  %-14s %s\n", t, $$0}'

$(VENV)/.installed: pyproject.toml trace_parsers/_core/Cargo.toml
	@command -v cargo >/dev/null || { echo "cargo is required (https://rustup.rs)"; exit 1; }
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,zephyr]'
	touch $@

.PHONY: setup ## create .venv and install crosstrace with its dev tools (and Debian packages when root)
setup: $(VENV)/.installed
	@bash tools/install-system-deps.sh

.PHONY: build ## (re)build the Rust core into the editable install (release profile)
build: $(VENV)/.installed
	VIRTUAL_ENV=$(CURDIR)/$(VENV) $(VENV)/bin/maturin develop --release -q

.PHONY: demo ## the main job: analyze every capture in captures/ and write out/report.html
demo: setup build
	$(VENV)/bin/crosstrace analyze captures -o out/campaign
	$(VENV)/bin/crosstrace report out/campaign -o out/report.html
	@echo "open out/report.html"

#: pytest workers (the machine's 2 cores), firmware tests included (each builds in its own temporary folder)
PYTEST_JOBS ?= 2

.PHONY: test ## the test suite (pytest + cargo test); fails if no test ran
test: setup build
	cargo test -q --manifest-path trace_parsers/_core/Cargo.toml --no-default-features
	PY=$(PY) bash tools/run-pytest.sh $(PYTEST_JOBS) $(PYTEST_ARGS)

.PHONY: test-all ## the test suite including slow tests (large captures, QEMU runs)
test-all: PYTEST_ARGS += --runslow --durations=25
test-all: test

.PHONY: golden ## regenerate tests/golden/<capture-id>/metrics.json from captures/ (review the diff)
golden: $(VENV)/.installed
	UPDATE_GOLDEN=1 $(PY) -m pytest -q --runslow tests/analyzers/test_golden.py

.PHONY: lint ## ruff on Python, rustfmt on the core
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check trace_parsers analyzers tests tools bench
	cargo fmt --manifest-path trace_parsers/_core/Cargo.toml --check

.PHONY: format ## apply formatters
format: $(VENV)/.installed
	$(VENV)/bin/ruff check --fix trace_parsers analyzers tests tools bench || true
	cargo fmt --manifest-path trace_parsers/_core/Cargo.toml

.PHONY: docs ## regenerate docs/schema.md from trace_parsers/model.py
docs: $(VENV)/.installed
	$(PY) tools/gen_schema.py

.PHONY: docs-check ## fail if docs/schema.md is stale
docs-check: $(VENV)/.installed
	$(PY) tools/gen_schema.py --check

.PHONY: notebooks ## execute notebooks/*.ipynb headless against captures/ (executed copies in out/notebooks)
notebooks: $(VENV)/.installed
	CROSSTRACE_NB_KEEP=$(CURDIR)/out/notebooks $(PY) -m pytest -q -p no:cacheprovider tests/test_notebooks.py

.PHONY: bench ## benchmarks, printed as ratios against the named peers (not part of `test`)
bench: build
	$(PY) -m bench

.PHONY: ci ## what .ci/run calls: setup, lint, docs check, every firmware image (fw-ci, fw-ci-zephyr, fw-ci-riot), all tests (firmware included)
ci: setup lint docs-check fw-ci fw-ci-zephyr fw-ci-riot fw-ci-ucos test-all fuzz-ci

.PHONY: clean ## remove build outputs
clean:
	rm -rf out build dist firmware/build trace_parsers/_core/target trace_parsers/_core*.so .pytest_cache .hypothesis

# ---- firmware, virtual lab and captures (firmware/README.md, captures/README.md) -------------------
-include firmware/firmware.mk
-include firmware/zephyr/zephyr.mk
-include firmware/ports/riot/riot.mk
-include firmware/tools/vla/vla.mk
-include tools/fuzz/fuzz.mk
