# FREE-MAD in a container: the `freemad` CLI, with git. Besides local use, it is a Docker
# alternative to the composite action (`docker run ... github action`, see docs/github.md), and the
# image the webhook bot runs from (bot/compose.yaml).
#
#   docker build -t freemad .
#   docker run --rm freemad --version
#
# The image holds the bundled mock agents only. For real agents, build on it and install their
# CLIs (claude, codex, gemini: docs/agents.md); their keys go in with `docker run -e`.
#
# The base image is pinned by tag, not by digest: no digest of the multi-platform python:3.12-slim
# index could be verified when this was written. To pin it, take the index digest from
# `docker buildx imagetools inspect python:3.12-slim` and write python:3.12-slim@sha256:<digest>
# in both FROM lines.

FROM python:3.12-slim AS build
WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY freemad ./freemad
# Package data of the wheel (pyproject.toml, force-include): example configs, examples, workflows.
COPY configs ./configs
COPY examples ./examples
COPY action ./action
RUN python -m pip wheel --no-cache-dir --disable-pip-version-check --no-deps --wheel-dir /wheels .

FROM python:3.12-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# git: tasks and evolve branch and commit with it, and the Action keeps its state on a branch.
# Debian's versions come with the base image's release, so they are not pinned here.
# safe.directory: the checkout this image works on is mounted in and is often owned by another uid.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends git ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && git config --system --add safe.directory '*'

# With the redis extra: the webhook bot's queue on Redis (FREEMAD_QUEUE_URL, bot/compose.yaml).
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    set -- /wheels/freemad-*.whl \
    && python -m pip install --no-cache-dir "$1[redis]"

RUN useradd --create-home --uid 10001 --user-group --shell /bin/bash freemad
USER freemad
WORKDIR /home/freemad

# Healthy when FREEMAD_HEALTH_URL (the bot's /healthz, say) answers 200, or, without it, when
# `freemad --version` runs.
HEALTHCHECK --interval=30s --timeout=10s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os, subprocess, sys, urllib.request; url = os.environ.get('FREEMAD_HEALTH_URL'); sys.exit(urllib.request.urlopen(url, timeout=5).status != 200 if url else subprocess.call(['freemad', '--version'], stdout=subprocess.DEVNULL))"]

ENTRYPOINT ["freemad"]
CMD ["--help"]
