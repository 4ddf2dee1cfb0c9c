#!/usr/bin/env bash
# Builds the container image (Dockerfile) with docker where a daemon answers, else podman, else
# buildah. `make image`; `make image-test` builds through it on a Debian base made locally.
#
#   IMAGE       the tag (default freemad:local)
#   BASE_IMAGE  the Dockerfile's base (default: the Dockerfile's, the official python image)
#   ENGINE      docker, podman or buildah, to choose instead of the first found
#   BUILDAH_ISOLATION  podman's and buildah's isolation for RUN steps (default chroot, which
#               runs where a container runtime cannot: no cgroups, no user namespaces needed)
#
# The machine's certificate bundle (PIP_CERT, else SSL_CERT_FILE, REQUESTS_CA_BUNDLE, else
# Debian's) and PIP_INDEX_URL, where set, go in as build secrets: pip reads them in the one step
# that installs, and no layer keeps them (scripts/image_test.py checks).
set -euo pipefail
cd "$(dirname "$0")/.."

image=${IMAGE:-freemad:local}
engine=${ENGINE:-}
if [ -z "$engine" ]; then
  if command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then
    engine=docker
  elif command -v podman >/dev/null 2>&1; then
    engine=podman
  elif command -v buildah >/dev/null 2>&1; then
    engine=buildah
  else
    echo "image: no docker daemon, podman or buildah here (Debian: apt-get install podman buildah)" >&2
    exit 1
  fi
fi

secrets=()
for bundle in "${PIP_CERT:-}" "${SSL_CERT_FILE:-}" "${REQUESTS_CA_BUNDLE:-}" /etc/ssl/certs/ca-certificates.crt; do
  if [ -n "$bundle" ] && [ -s "$bundle" ]; then
    secrets+=(--secret "id=ca,src=$bundle")
    break
  fi
done
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
if [ -n "${PIP_INDEX_URL:-}" ]; then
  # A file, not a build argument: build arguments are kept in the image's history.
  (umask 077 && printf '%s' "$PIP_INDEX_URL" >"$scratch/pip_index_url")
  secrets+=(--secret "id=pip_index_url,src=$scratch/pip_index_url")
fi
build_args=()
if [ -n "${BASE_IMAGE:-}" ]; then
  build_args+=(--build-arg "BASE_IMAGE=$BASE_IMAGE")
fi

echo "image: building $image with $engine${BASE_IMAGE:+ on $BASE_IMAGE}"
case "$engine" in
  docker)
    DOCKER_BUILDKIT=1 docker build "${build_args[@]}" "${secrets[@]}" -t "$image" .
    ;;
  podman | buildah)
    # --format docker: the OCI format has no HEALTHCHECK and would drop it.
    "$engine" build --format docker --layers --isolation "${BUILDAH_ISOLATION:-chroot}" \
      "${build_args[@]}" "${secrets[@]}" -t "$image" .
    ;;
  *)
    echo "image: ENGINE must be docker, podman or buildah, not $engine" >&2
    exit 2
    ;;
esac
