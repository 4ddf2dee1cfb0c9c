# FREE-MAD in a container: the `freemad` CLI, with git. Besides local use, it is a Docker
# alternative to the composite action (`docker run ... github action`, see docs/github.md), and the
# image the webhook bot runs from (bot/compose.yaml).
#
#   make image                  # docker, else podman, else buildah (scripts/image.sh)
#   docker build -t freemad .   # the same by hand
#   docker run --rm freemad --version
#
# `make image-test` builds it on a Debian base made locally and runs it (scripts/image_test.py,
# docs/bot.md "Run it with Docker").
#
# The image holds the bundled mock agents only. For real agents, build on it and install their
# CLIs (claude, codex, gemini: docs/agents.md); their keys go in with `docker run -e`.
#
# BASE_IMAGE: any Debian-based image with python3 >= 3.10 and its venv module. The default is the
# official python image; `make image-test` uses a debootstrap of Debian (python3, python3-venv).
# It is pinned by tag, not by digest: no digest of the multi-platform python:3.12-slim index could
# be verified when this was written. To pin it, take the index digest from
# `docker buildx imagetools inspect python:3.12-slim` and pass python:3.12-slim@sha256:<digest>.
ARG BASE_IMAGE=python:3.12-slim

FROM ${BASE_IMAGE} AS build
# Two virtual environments: /opt/build holds pip (and builds the wheel), /opt/freemad holds only
# FREE-MAD and its dependencies and is all the final stage copies, so the image carries no pip.
RUN python3 -m venv /opt/build \
    && python3 -m venv --without-pip /opt/freemad
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY freemad ./freemad
# Package data of the wheel (pyproject.toml, force-include): example configs, examples, workflows.
COPY configs ./configs
COPY examples ./examples
COPY action ./action
# The secret `ca` (optional) is a certificate bundle for reaching PyPI through a TLS-inspecting
# proxy; `pip_index_url` (optional) a mirror, which may carry a token. Both are mounted for this
# step only and never written to a layer (scripts/image.sh passes them; docs/bot.md).
# With the redis extra: the webhook bot's queue on Redis (FREEMAD_QUEUE_URL, bot/compose.yaml).
RUN --mount=type=secret,id=ca --mount=type=secret,id=pip_index_url \
    if [ -s /run/secrets/ca ]; then export PIP_CERT=/run/secrets/ca; fi \
    && if [ -s /run/secrets/pip_index_url ]; then PIP_INDEX_URL=$(cat /run/secrets/pip_index_url) && export PIP_INDEX_URL; fi \
    && /opt/build/bin/python -m pip wheel --no-cache-dir --disable-pip-version-check --no-deps --wheel-dir /wheels . \
    && set -- /wheels/freemad-*.whl \
    && /opt/build/bin/python -m pip --python /opt/freemad/bin/python install --no-cache-dir \
        --disable-pip-version-check "$1[redis]"

FROM ${BASE_IMAGE}
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/freemad/bin:$PATH

# git: tasks and evolve branch and commit with it, and the Action keeps its state on a branch.
# Debian's versions come with the base image's release, so they are not pinned here.
# apt-get clean: a base without the official images' docker-clean hook keeps the .deb files.
# safe.directory: the checkout this image works on is mounted in and is often owned by another uid.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git ca-certificates \
    && apt-get clean \
    && rm -rf /var/lib/apt/lists/* \
    && git config --system --add safe.directory '*'

# The same base in both stages, so the venv's python symlink points at the same interpreter.
COPY --from=build /opt/freemad /opt/freemad

# A numeric USER (hadolint DL3066): Kubernetes' runAsNonRoot can only check a number.
RUN useradd --create-home --uid 10001 --user-group --shell /bin/bash freemad
USER 10001:10001
WORKDIR /home/freemad

# Healthy when FREEMAD_HEALTH_URL (the bot's /healthz, say) answers 200, or, without it, when
# `freemad --version` runs. Kept only in the docker image format (podman/buildah: --format docker).
HEALTHCHECK --interval=30s --timeout=10s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, subprocess, sys, urllib.request; url = os.environ.get('FREEMAD_HEALTH_URL'); sys.exit(urllib.request.urlopen(url, timeout=5).status != 200 if url else subprocess.call(['freemad', '--version'], stdout=subprocess.DEVNULL))"]

ENTRYPOINT ["freemad"]
CMD ["--help"]
