#!/usr/bin/env bash
# Install the real agent CLIs into a prefix, for the preset tests (tests/agents/test_real_clis*.py):
# claude, codex, gemini, copilot, opencode and qwen from the npm registry, and aider and llm from
# PyPI (each in a virtualenv of its own under PREFIX/python, linked into the bin folder).
# Prints the folder holding all their executables.
#
# Usage: scripts/install-agent-clis.sh [PREFIX]        (default: <repo>/.cache/agent-clis)
# The versions are the ones docs/agents.md was checked against; set FREEMAD_AGENT_CLI_PACKAGES
# (space-separated npm specs) or FREEMAD_AGENT_PY_PACKAGES (space-separated pip specs, each a
# CLI named as its package before the "==", aider-chat giving aider; empty: none) to try others.
# Progress goes to stderr; stdout gets only the bin folder, so `BIN=$(scripts/install-agent-clis.sh)`.
set -euo pipefail

say() { printf 'install-agent-clis: %s\n' "$*" >&2; }

if ! command -v npm >/dev/null 2>&1; then
  say "npm not found; skipping (the npm_agents tests will be skipped)"
  exit 0
fi

script="${BASH_SOURCE[0]}"
[[ "$script" == */* ]] || script="./$script"
repo="$(cd "${script%/*}/.." && pwd)"
prefix="${1:-$repo/.cache/agent-clis}"
packages="${FREEMAD_AGENT_CLI_PACKAGES:-@anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0 @google/gemini-cli@0.61.0 @github/copilot@1.0.102 opencode-ai@1.18.33 @qwen-code/qwen-code@0.24.4}"
clis=(claude codex gemini copilot opencode qwen)
py_packages="${FREEMAD_AGENT_PY_PACKAGES-aider-chat==0.86.2 llm==0.36}"

mkdir -p "$prefix"
prefix="$(cd "$prefix" && pwd)"
bin="$prefix/node_modules/.bin"

# gemini writes under HOME even for --version: give the checks a throw-away one.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

answers_version() {
  [ -x "$bin/$1" ] &&
    HOME="$scratch" timeout 60 "$bin/$1" --version </dev/null >"$scratch/$1.version" 2>"$scratch/$1.err"
}

all_answer() {
  local cli
  for cli in "${clis[@]}"; do
    answers_version "$cli" || return 1
  done
}

# The PyPI CLIs: one virtualenv each (aider pins its dependencies exactly), linked into $bin.
install_python_clis() {
  local spec package cli python
  python="$(command -v python3 || true)"
  if [ -z "$python" ]; then
    say "python3 not found; skipping $py_packages"
    return 0
  fi
  for spec in $py_packages; do
    package="${spec%%[=<>]*}"
    cli="${package%-chat}"
    if answers_version "$cli"; then
      continue
    fi
    say "installing $spec into $prefix/python/$cli"
    "$python" -m venv "$prefix/python/$cli" >&2
    "$prefix/python/$cli/bin/python" -m pip install --quiet "$spec" >&2
    mkdir -p "$bin"
    ln -sf "$prefix/python/$cli/bin/$cli" "$bin/$cli"
    if answers_version "$cli"; then
      say "$cli: $(head -n1 "$scratch/$cli.version")"
    else
      say "$cli --version does not work after install:"
      cat "$scratch/$cli.err" >&2 2>/dev/null || true
      return 1
    fi
  done
}

if all_answer; then
  say "already installed in $prefix ($(head -n1 "$scratch/claude.version"), $(head -n1 "$scratch/codex.version"), gemini $(head -n1 "$scratch/gemini.version"), ...)"
  install_python_clis
  printf '%s\n' "$bin"
  exit 0
fi

say "installing $packages into $prefix"
# shellcheck disable=SC2086  # the package list is meant to split into words
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error $packages >&2

# claude's postinstall puts its native binary in place; without it `claude --version` fails with
# "claude native binary not installed" (npm run with --ignore-scripts, or a future npm that skips them).
if ! answers_version claude; then
  say "claude --version failed; running its install.cjs"
  (cd "$prefix" && node node_modules/@anthropic-ai/claude-code/install.cjs) >&2
fi

failed=0
for cli in "${clis[@]}"; do
  if answers_version "$cli"; then
    say "$cli: $(head -n1 "$scratch/$cli.version")"
  else
    say "$cli --version does not work after install:"
    cat "$scratch/$cli.err" >&2 2>/dev/null || true
    failed=1
  fi
done
if [ "$failed" -ne 0 ]; then
  exit 1
fi
install_python_clis
printf '%s\n' "$bin"
