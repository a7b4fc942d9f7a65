# Two commands a new machine needs (Python >= 3.10, Node/npm and Java 17 for DynamoDB Local):
#   make demo   the main job: every strategy on an embedded server (or $AWS_ENDPOINT_URL), checked
#   make test   the test suite, on the serialized moto server and on Amazon DynamoDB Local
# Each installs what it needs into .venv/ and .cache/ first.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# CI must not let the DynamoDB Local tests skip; elsewhere they skip with a reason if they can't run.
AIOSEQ_REQUIRE_DYNAMODB_LOCAL ?= $(if $(CI),1,0)
export AIOSEQ_REQUIRE_DYNAMODB_LOCAL

.PHONY: demo test test-unit test-integration lint dist docs docs-serve bench bench-defaults bench-guard bench-keys soak clean

demo: $(VENV)/.installed-server
	$(BIN)/aioseq demo $(ARGS)

# pytest-xdist workers (each starts its own moto server and DynamoDB Local); 0 runs serially.
TEST_WORKERS ?= auto

test: $(VENV)/.installed-dev .cache/dynamodb-local/.installed
	AIOSEQ_TEST_BACKENDS=moto,dynamodb-local scripts/in-loopback-netns $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal $(ARGS)

# The half with no server (pure logic: the coalescer, the token ring, the checker, the house): seconds.
test-unit: $(VENV)/.installed-dev
	$(BIN)/python -m pytest tests/unit $(ARGS)

# The half against the servers: the serialized moto server and Amazon DynamoDB Local.
test-integration: $(VENV)/.installed-dev .cache/dynamodb-local/.installed
	AIOSEQ_TEST_BACKENDS=moto,dynamodb-local scripts/in-loopback-netns $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist worksteal tests/integration $(ARGS)

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check aioseq verification tests benchmarks examples
	$(BIN)/ruff format --check aioseq verification tests benchmarks examples
	$(BIN)/mypy aioseq verification tests benchmarks examples

# The sdist and the wheel, twine-checked; the wheel installed in a fresh venv runs `aioseq --version`.
dist: $(VENV)/.installed-dev
	PYTHON=$(BIN)/python scripts/check-dist

# The documentation site (mkdocs-material + mkdocstrings), built with warnings as errors into site/.
docs: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-serve: $(VENV)/.installed-docs
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed-server: pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install -q -e '.[server]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $@ $(VENV)/.installed-server

$(VENV)/.installed-docs: pyproject.toml | $(VENV)/bin/python
	$(BIN)/python -m pip install -q -e '.[docs]'
	touch $@

.cache/dynamodb-local/.installed: scripts/install-dynamodb-local
	scripts/install-dynamodb-local
	touch $@

bench: $(VENV)/.installed-dev .cache/dynamodb-local/.installed
	scripts/in-loopback-netns $(BIN)/python -m benchmarks --server dynamodb-local $(ARGS)

# The defaults of group commit and exactly once against their targets (~7 minutes; docs/performance/defaults.md).
bench-defaults: $(VENV)/.installed-dev .cache/dynamodb-local/.installed
	scripts/in-loopback-netns $(BIN)/python -m benchmarks.defaults --server dynamodb-local $(ARGS)

# The hot path's regression guard (~1 minute; no server: botocore does its work and a hook
# answers in the process): allocator next() vs a bare coroutine, atomic next() vs the seed's
# raw request, the Python calls next() adds; exits 1 when one is past its guard
# (docs/benchmarks.md). CI runs it. Figures against DynamoDB Local, each part of the request
# priced: scripts/in-loopback-netns .venv/bin/python -m benchmarks.guard --server dynamodb-local --parts
bench-guard: $(VENV)/.installed-dev
	$(BIN)/python -m benchmarks.guard $(ARGS)

# Many keys and per-request code: factories per call against held objects, 100,000 keys touched
# once and dropped idle, against the issue's targets (~15 minutes; docs/benchmarks.md).
bench-keys: $(VENV)/.installed-dev .cache/dynamodb-local/.installed
	scripts/in-loopback-netns $(BIN)/python -m benchmarks.many_keys --server dynamodb-local $(ARGS)

# Every strategy, 4 processes x 200 tasks x 20,000 numbers, 10% faults (5.5% answers lost after
# the write applied), one process SIGKILLed mid-run, 1% of calls cancelled; all checked.
soak: $(VENV)/.installed-dev .cache/dynamodb-local/.installed
	scripts/in-loopback-netns $(BIN)/python -m verification.soak --server dynamodb-local $(ARGS)

clean:
	rm -rf $(VENV) .cache .pytest_cache .mypy_cache .ruff_cache *.egg-info dist site
