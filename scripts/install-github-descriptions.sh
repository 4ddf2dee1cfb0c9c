#!/usr/bin/env bash
# Install GitHub's published API descriptions from the npm registry, for the contract tests:
# @octokit/openapi (the REST API's OpenAPI description: every operation's path, parameters,
# request body and responses) and @octokit/openapi-webhooks (every webhook payload's JSON Schema).
# Tests find them in .cache/octokit; without npm they are skipped, saying so. Only the
# descriptions the tests read are kept: api.github.com and the newest GHES, unresolved ($ref)
# form; the dereferenced and GHEC copies (about 350 MB) are deleted after install. With them,
# @actions/expressions: GitHub's own evaluator of workflow expressions, which the tests run the
# workflows' `if:` conditions through (scripts/evaluate-expression.mjs).
#
# Usage: scripts/install-github-descriptions.sh [PREFIX]     (default: <repo>/.cache/octokit)
# FREEMAD_OCTOKIT_PACKAGES (space-separated npm specs) overrides the pinned versions.
set -euo pipefail

say() { printf 'install-github-descriptions: %s\n' "$*" >&2; }

if ! command -v npm >/dev/null 2>&1; then
  say "npm not found; skipping (the GitHub contract tests will be skipped)"
  exit 0
fi

script="${BASH_SOURCE[0]}"
[[ "$script" == */* ]] || script="./$script"
repo="$(cd "${script%/*}/.." && pwd)"
prefix="${1:-$repo/.cache/octokit}"
packages="${FREEMAD_OCTOKIT_PACKAGES:-@octokit/openapi@23.0.2 @octokit/openapi-webhooks@12.1.0 @actions/expressions@0.3.61}"
stamp="$prefix/.installed"

mkdir -p "$prefix"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$packages" ]; then
  say "already installed in $prefix ($packages)"
  exit 0
fi
say "installing $packages into $prefix"
# shellcheck disable=SC2086  # the package list is meant to split into words
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error $packages >&2
generated="$prefix/node_modules/@octokit/openapi/generated"
if [ -d "$generated" ]; then
  find "$generated" -name '*.json' ! -name 'api.github.com.json' ! -name 'ghes-3.19.json' -delete
fi
printf '%s\n' "$packages" >"$stamp"
