#!/usr/bin/env bash
# Install the real agent CLIs (claude, codex, gemini) from the npm registry into a prefix, for the
# preset tests (tests/agents/test_real_clis.py). Prints the folder holding their executables.
#
# Usage: scripts/install-agent-clis.sh [PREFIX]        (default: <repo>/.cache/agent-clis)
# The versions are the ones docs/agents.md was checked against; set FREEMAD_AGENT_CLI_PACKAGES
# (space-separated npm specs) to try others, e.g. "@anthropic-ai/claude-code@latest ...".
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
packages="${FREEMAD_AGENT_CLI_PACKAGES:-@anthropic-ai/claude-code@2.1.197 @openai/codex@0.171.0 @google/gemini-cli@0.61.0}"
clis=(claude codex gemini)

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

if all_answer; then
  say "already installed in $prefix ($(head -n1 "$scratch/claude.version"), $(head -n1 "$scratch/codex.version"), gemini $(head -n1 "$scratch/gemini.version"))"
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
printf '%s\n' "$bin"
