# The commands the README gives a new user. Everything installs itself:
#   make run    build veter and serve examples/hello.py on http://127.0.0.1:8000
#   make test   build veter, then run cargo test, the linters and pytest
#   make bench  the benchmark suite (see benchmarks/README.md)

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
export PATH := $(HOME)/.cargo/bin:$(PATH)
export PYO3_PYTHON := $(abspath $(PY))
export VIRTUAL_ENV := $(abspath $(VENV))

.PHONY: run test build lint rust-test py-test bench clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "maturin>=1.7,<2" "uvloop>=0.21" "orjson>=3.10" "click>=8.1" \
		"pytest>=8" "pytest-timeout>=2.3" "pytest-asyncio>=0.24" "h11>=0.14" "mypy>=1.13" "ruff>=0.8"
	touch $@

build: $(VENV)/.installed
	$(VENV)/bin/maturin develop --release --quiet --extras dev

run: build
	$(PY) -m veter run examples.hello:app --host 127.0.0.1 --port 8000

rust-test: $(VENV)/.installed
	cargo test --quiet

lint: build
	cargo fmt --check
	cargo clippy --all-targets --quiet -- -D warnings
	$(VENV)/bin/ruff check python tests examples benchmarks
	$(VENV)/bin/ruff format --check python tests examples
	$(VENV)/bin/mypy
	$(PY) -m mypy.stubtest veter._core

py-test: build
	$(PY) -m pytest -q

test: rust-test lint py-test

bench: build
	$(MAKE) -C benchmarks bench SCENARIO=$(SCENARIO) QUICK=$(QUICK)

clean:
	rm -rf $(VENV) target
