#!/usr/bin/env bash
# A Debian base image made from Debian's packages alone (no container registry): debootstrap of
# the machine's own Debian release from the mirror its apt sources name, with python3 and its
# venv module, imported as localhost/freemad-base:<suite>. Prints the image's name.
#
# The root file system is kept as .cache/image-base/<suite>.tar, so a second run on the same
# machine imports it instead of bootstrapping again (IMAGE_BASE_REFRESH=1 makes a new one).
# Needs root, debootstrap and podman or buildah (Debian: apt-get install debootstrap podman buildah).
set -euo pipefail
cd "$(dirname "$0")/.."

# shellcheck disable=SC1091  # the machine's, not ours
suite=$(. /etc/os-release && printf '%s' "${VERSION_CODENAME:-}")
if [ -z "$suite" ]; then
  echo "image-base: /etc/os-release names no Debian release (VERSION_CODENAME)" >&2
  exit 1
fi

# The mirror that serves `$suite` itself (not -updates or -security): one-line and deb822 sources.
mirror=$(
  { cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } |
    awk -v suite="$suite" '
      /^deb / { for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i ~ /:\/\//) { if ($(i + 1) == suite) { print $i; exit } ; break } }
      /^URIs:/ { uri = $2 }
      /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite && uri != "") { print uri; exit } }
      /^$/ { uri = "" }
    '
)
if [ -z "$mirror" ]; then
  echo "image-base: no apt source for $suite in /etc/apt/sources.list*" >&2
  exit 1
fi

image="localhost/freemad-base:$suite"
cache=.cache/image-base
tarball="$cache/$suite.tar"
if command -v podman >/dev/null 2>&1; then
  tool=podman
else
  tool=buildah
fi

if [ -z "${IMAGE_BASE_REFRESH:-}" ] && "$tool" inspect --type image "$image" >/dev/null 2>&1; then
  echo "$image"
  exit 0
fi
if [ -n "${IMAGE_BASE_REFRESH:-}" ] || [ ! -s "$tarball" ]; then
  mkdir -p "$cache"
  root=$(mktemp -d "$cache/root.XXXXXX")
  trap 'rm -rf "$root"' EXIT
  echo "image-base: debootstrap $suite from $mirror" >&2
  debootstrap --variant=minbase --include=python3,python3-venv "$suite" "$root" "$mirror" >"$cache/debootstrap.log" 2>&1 ||
    {
      tail -20 "$cache/debootstrap.log" >&2
      exit 1
    }
  # What an official image leaves out too: downloaded packages and the package lists.
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar --numeric-owner -C "$root" -cf "$tarball.part" .
  mv "$tarball.part" "$tarball"
fi
if [ "$tool" = podman ]; then
  podman import --quiet "$tarball" "$image" >/dev/null
else
  buildah rmi "$image" >/dev/null 2>&1 || true
  container=$(buildah from scratch)
  buildah add --quiet "$container" "$tarball" / >/dev/null # `add` unpacks a local tar
  buildah commit --quiet --rm "$container" "$image" >/dev/null
fi
echo "$image"
