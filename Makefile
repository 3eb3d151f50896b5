# latlab: two commands matter.
#   make run   build, then run the default experiment (results + figure in out/default)
#   make test  build, then every Rust and Python test (the slow real-network ones when CI=true)
#   make lint  rustfmt, clippy (warnings are errors) and ruff (lint and format), all checks, no edits
# Only the Rust toolchain and Python 3.11 are assumed; everything else comes
# from the package registries into .venv.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
PY     := $(VENV)/bin/python
DEPS   := $(VENV)/.deps-installed
DOCS_DEPS := $(VENV)/.docs-deps-installed
export VIRTUAL_ENV := $(abspath $(VENV))
export PIP_QUIET := 1
export PATH := $(abspath $(VENV))/bin:$(PATH)

.PHONY: all build run test test-rust test-python lint bench fuzz fmt clean

all: build

$(PY):
	$(PYTHON) -m venv $(VENV)

# ruff is pinned to a minor version: its formatter's style may change between minor versions.
$(DEPS): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "maturin>=1.5,<2" "numpy>=1.26" "pandas>=2.1" "pyarrow>=14" \
		"click>=8.1" "rich>=13" "matplotlib>=3.8" "tomli-w>=1.0" "pytest>=8" "pytest-xdist>=3.6" \
		"dask[distributed]>=2024.1" "ruff>=0.17,<0.18"
	touch $@

build: $(DEPS)
	$(VENV)/bin/maturin develop --release --quiet
	cargo build --release --quiet --bin latlab-sim --bin latlab-net

run: build
	$(VENV)/bin/latlab run --default -o out/default

# `make test` builds everything once, in the release-tests profile (Cargo.toml: release without
# LTO): the Rust tests, the binaries and the Python extension share one compilation. Two release
# builds (the extension, then the binaries) would come on top of it: 2.5 minutes on the 2-core CI
# machine. The Python tests run the release-tests latlab-net and extension; `make build` (and
# `make run`, `make bench`) put the release extension back, and `latlab bench` warns on another build.
TEST_PROFILE := release-tests
NET_BIN ?= $(abspath target/release)/latlab-net
test: $(DEPS)
	$(MAKE) --no-print-directory test-rust
	$(VENV)/bin/maturin develop --profile $(TEST_PROFILE) --quiet
	$(MAKE) --no-print-directory test-python NET_BIN=$(abspath target/$(TEST_PROFILE))/latlab-net

# Includes the fuzzer's smoke run (crates/fuzz/tests/smoke.rs: 10^4 scenarios, 10^5 datagrams, 10^4 traces).
test-rust:
	cargo test --profile $(TEST_PROFILE) --workspace --exclude latlab-py

# Tests marked slow (real networks, minutes each) run only where CI=true, as .ci/run sets it.
# First one pytest-xdist worker per CPU, a test file per worker at a time (a module-scoped fixture
# is set up once); then the tests marked realtime (real network), two files at a time: each run has
# its own namespaces, and two at once keep the 2-core CI machine within its CPUs (the real-time
# tests skip, saying so, when the machine rather than the path set their timing); last, the tests
# marked alone (real flows' shares over minutes) by themselves.
NOT_SLOW := $(if $(filter true,$(CI)),,and not slow)
test-python:
	LATLAB_NET_BIN=$(NET_BIN) $(PY) -m pytest -q -rs -n logical --dist loadfile -m "not realtime $(NOT_SLOW)" tests/python
	LATLAB_NET_BIN=$(NET_BIN) $(PY) -m pytest -q -rs -n 2 --dist loadfile -m "realtime and not alone $(NOT_SLOW)" tests/python
	LATLAB_NET_BIN=$(NET_BIN) $(PY) -m pytest -q -rs -m "realtime and alone $(NOT_SLOW)" tests/python

PY_SOURCES := python tests benches

lint: $(DEPS)
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --quiet -- -D warnings
	RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace --quiet
	$(VENV)/bin/ruff check $(PY_SOURCES)
	$(VENV)/bin/ruff format --check $(PY_SOURCES)

bench: build
	$(VENV)/bin/latlab bench

# The documented fuzz runs (benches/README.md); defects land in fuzz-findings/.
fuzz:
	cargo build --release --quiet -p latlab-fuzz
	nice target/release/latlab-fuzz scenarios --inputs 1000000 --seed 1
	nice target/release/latlab-fuzz wire --inputs 10000000 --seed 1
	nice target/release/latlab-fuzz traces --inputs 10000000 --seed 1

fmt: $(DEPS)
	cargo fmt --all
	$(VENV)/bin/ruff format $(PY_SOURCES)

# The documentation site (mkdocs.yml): docs/ into site/, strict, so a broken
# link or a missing page fails. Its tools get their own stamp, so `make test`
# never installs them. The CLI and API pages import latlab from python/
# (no build needed: neither imports the compiled core).
$(DOCS_DEPS): | $(PY)
	$(PY) -m pip install --quiet "mkdocs>=1.6,<2" "mkdocs-material>=9.5,<10" "mkdocs-click>=0.8" \
		"mkdocstrings[python]>=0.26" "click>=8.1"
	touch $@

.PHONY: docs
docs: $(DOCS_DEPS)
	PYTHONPATH=python NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

clean:
	cargo clean
	rm -rf $(VENV) out site
