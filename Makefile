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

.PHONY: run test build lint rust-test py-test wheels wheel-test py-versions py-versions-prepare fuzz-prepare fuzz-ci bench clean docs-settings

# The frameworks and clients the hosted-app tests serve and drive (tests/hosted/):
# real ASGI apps, independent clients, and uvicorn and gunicorn as the differential oracles.
HOSTED_TEST_DEPS := "fastapi>=0.115" "starlette>=0.40" "python-multipart>=0.0.18" "httpx[http2]>=0.27" "h2>=4.1" "hypercorn>=0.17" \
	"uvicorn>=0.30" "httptools>=0.6" "gunicorn>=23" "flask>=3" "django>=5" "litestar>=2.12" "quart>=0.19"

# Other supported Pythons the tests also run on: pyenv's or on PATH, else (3.14, 3.15)
# unpacked from Debian sid's packages (scripts/find-python.sh, install-python.sh).
EXTRA_PYTHONS ?= 3.12 3.13 3.14 3.15
# The extra Pythons whose release wheel is also installed and served as a user would.
WHEEL_TEST_PYTHONS ?= 3.14

$(VENV)/.installed: pyproject.toml Makefile tests/websockets/autobahn/requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	bash scripts/install-services.sh
	bash scripts/install-h2spec.sh
	bash tests/websockets/autobahn/install.sh
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "maturin>=1.7,<2" "uvloop>=0.21" "orjson>=3.10" "click>=8.1" "watchfiles>=0.21" \
		"pytest>=8" "pytest-timeout>=2.3" "pytest-asyncio>=0.24" "anyio>=4" "h11>=0.14" "hypothesis>=6.100" "prometheus-client>=0.20" "websockets>=13" "kubernetes-validate>=1.37" "mypy>=1.13" "ruff>=0.8" \
		"asyncpg>=0.29" "redis[hiredis]>=5" "asyncmy>=0.2.9" "aiohttp>=3.10" "aiodns>=3.2" "py-spy>=0.3.14" \
		"brotli>=1.1" "zstandard>=0.23" "msgspec>=0.18" "pydantic>=2.7" "openapi-spec-validator>=0.7" "swagger-ui-py>=25" "schemathesis>=4.3" $(HOSTED_TEST_DEPS)
	touch $@

build: $(VENV)/.installed
	$(VENV)/bin/maturin develop --release --quiet --extras dev

# What serving the example needs, and nothing else: no test services, no Autobahn.
$(VENV)/.run-installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "maturin>=1.7,<2"
	touch $@

run: $(VENV)/.run-installed
	$(VENV)/bin/maturin develop --release --quiet
	$(PY) -m veter run examples.hello:app --host 127.0.0.1 --port 8000

# Release wheels, one per supported Python found here (docs/deploy.md, "Installing"),
# into dist/.
wheels: $(VENV)/.run-installed
	@pys=""; for v in 3.11 $(EXTRA_PYTHONS); do \
		exe=$$(bash scripts/find-python.sh $$v) || exit 1; \
		pys="$$pys -i $$exe"; \
	done; \
	$(VENV)/bin/maturin build --release --out dist $$pys

# The built wheel installed into a fresh venv without Rust serves the example.
wheel-test: build
	@echo "== [$$(date +%T)] $@"
	bash scripts/test-wheel.sh $(PY)

rust-test: $(VENV)/.installed
	@echo "== [$$(date +%T)] $@"
	cargo test --quiet

lint: build
	@echo "== [$$(date +%T)] $@"
	cargo fmt --check
	cargo clippy --all-targets --quiet -- -D warnings
	$(VENV)/bin/ruff check python tests examples benchmarks
	$(VENV)/bin/ruff format --check python tests examples
	$(VENV)/bin/mypy
	$(PY) -m mypy.stubtest veter._core

py-test: build
	@echo "== [$$(date +%T)] $@"
	$(PY) -m pytest -q --durations=15

# docs/settings.md is made from the settings' declarations (tests/test_options.py checks it).
docs-settings: build
	$(PY) -c "from veter.cli import settings_page; print(settings_page(), end='')" > docs/settings.md

# Each extra Python gets its own venv and target dir, so switching costs no rebuild.
# Tests marked slow (deploy behind nginx, Autobahn) run on the first Python only.
PY_VERSION_DEPS := "maturin>=1.7,<2" "uvloop>=0.21" "orjson>=3.10" "click>=8.1" "watchfiles>=0.21" \
	"pytest>=8" "pytest-timeout>=2.3" "pytest-asyncio>=0.24" "anyio>=4" "h11>=0.14" "hypothesis>=6.100" "prometheus-client>=0.20" "websockets>=13" "playwright>=1.48" "kubernetes-validate>=1.37" "asyncpg>=0.29" "redis[hiredis]>=5" "asyncmy>=0.2.9" "aiohttp>=3.10" "aiodns>=3.2" "py-spy>=0.3.14" \
	"brotli>=1.1" "zstandard>=0.23" "msgspec>=0.18" "pydantic>=2.7" "openapi-spec-validator>=0.7" "swagger-ui-py>=25" $(HOSTED_TEST_DEPS)

# The extra Pythons' venvs and builds (.ci/run starts this in the background while
# the first Python's tests run; a lock makes py-versions wait for it).
py-versions-prepare:
	@for v in $(EXTRA_PYTHONS); do \
		echo "== [$$(date +%T)] preparing Python $$v"; \
		bash scripts/prepare-python.sh $$v $(PY_VERSION_DEPS) || exit 1; \
	done

py-versions: py-versions-prepare
	@echo "== [$$(date +%T)] $@"
	@for v in $(EXTRA_PYTHONS); do \
		echo "== [$$(date +%T)] pytest on Python $$v"; \
		.venv-$$v/bin/python -m pytest -q -p no:cacheprovider -m "not slow" --durations=10 || exit 1; \
	done
	@for v in $(WHEEL_TEST_PYTHONS); do \
		echo "== [$$(date +%T)] wheel test on Python $$v"; \
		CARGO_TARGET_DIR=target/py$$v bash scripts/test-wheel.sh .venv-$$v/bin/python || exit 1; \
	done

# Fuzzing (docs/security.md): the cargo-fuzz targets, seeded from the request
# corpus, FUZZ_SECONDS each, side by side. Stable Rust is enough:
# RUSTC_BOOTSTRAP=1 lets cargo-fuzz pass its flags, and with no `unsafe` code in the
# crate no sanitizer is needed (-s none). A crash leaves its input in fuzz/artifacts.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS := parse_head chunked connection hpack h2_connection
CARGO_FUZZ_VERSION := 0.13.2
# cargo-fuzz and the fuzz targets built (.ci/run starts this in the background too;
# cargo's own locks make a second build wait for the first).
fuzz-prepare:
	command -v cargo-fuzz >/dev/null || cargo install --locked --quiet cargo-fuzz@$(CARGO_FUZZ_VERSION)
	cd fuzz && RUSTC_BOOTSTRAP=1 cargo fuzz build -O -a -s none

fuzz-ci: $(VENV)/.installed fuzz-prepare
	@echo "== [$$(date +%T)] $@"
	$(PY) fuzz/seeds.py
	cd fuzz && pids=; for t in $(FUZZ_TARGETS); do \
		RUSTC_BOOTSTRAP=1 cargo fuzz run -O -a -s none $$t -- -max_total_time=$(FUZZ_SECONDS) \
			-dict=http.dict -max_len=8192 -print_final_stats=1 > target/$$t.log 2>&1 & pids="$$pids $$!"; \
	done; \
	failed=0; for pid in $$pids; do wait $$pid || failed=1; done; \
	for t in $(FUZZ_TARGETS); do echo "== fuzz $$t"; grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb)|^#[0-9]+ +DONE|panicked|ERROR|Test unit written" target/$$t.log; done; \
	exit $$failed

test: rust-test lint py-test wheel-test py-versions fuzz-ci

bench: build
	$(MAKE) -C benchmarks bench SCENARIO=$(SCENARIO) QUICK=$(QUICK) SERVERS=$(SERVERS)

clean:
	rm -rf $(VENV) target
