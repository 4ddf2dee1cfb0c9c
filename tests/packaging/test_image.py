"""The container image's recipe, read without building it: the base is an argument, the user is a
number, secrets only come in as build secrets, hadolint passes, and `make image-test` is wired in.

Building and running the image is `make image-test` (scripts/image_test.py), minutes long and in
need of root, so it is not part of pytest.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = (ROOT / "Dockerfile").read_text(encoding="utf-8")
LINES = DOCKERFILE.splitlines()
HADOLINT = ROOT / ".cache" / "hadolint" / "bin" / "hadolint"


def instructions(name: str) -> list[str]:
    return [line.split(None, 1)[1] for line in LINES if line.startswith(f"{name} ")]


def test_the_base_is_a_build_argument_used_by_both_stages() -> None:
    first_from = next(i for i, line in enumerate(LINES) if line.startswith("FROM "))
    assert "ARG BASE_IMAGE=python:3.12-slim" in LINES[:first_from]
    assert [f.split()[0] for f in instructions("FROM")] == ["${BASE_IMAGE}", "${BASE_IMAGE}"]


def test_it_runs_as_the_numeric_user_the_docs_and_compose_name() -> None:
    """hadolint DL3066; Kubernetes' runAsNonRoot can only check a number."""
    [user] = instructions("USER")
    assert re.fullmatch(r"[1-9][0-9]*:[0-9]+", user), user
    uid = user.split(":")[0]
    assert f"--uid {uid} " in DOCKERFILE
    assert f"uid {uid}" in (ROOT / "docs" / "bot.md").read_text(encoding="utf-8")
    assert f"-o {uid} -g {uid}" in (ROOT / "bot" / "compose.yaml").read_text(encoding="utf-8")


def test_secrets_reach_the_build_as_build_secrets_only() -> None:
    """An ARG or ENV would be kept in the image's history; a secret mount is not."""
    for name in ("ARG", "ENV"):
        for value in instructions(name):
            assert not re.search(r"CERT|INDEX_URL|TOKEN|PASSWORD|SECRET", value), value
    mounted = set(re.findall(r"--mount=type=secret,id=([\w-]+)", DOCKERFILE))
    passed = set(
        re.findall(r"--secret \"id=([\w-]+),", (ROOT / "scripts" / "image.sh").read_text())
    )
    assert mounted == passed == {"ca", "pip_index_url"}


def test_every_ignored_hadolint_rule_says_why() -> None:
    for i, line in enumerate(LINES):
        if line.startswith("# hadolint ignore="):
            reason = LINES[i - 1]
            assert reason.startswith("# ") and "hadolint" not in reason, f"line {i + 1}: no reason"


@pytest.mark.skipif(
    not HADOLINT.exists(), reason="no hadolint in .cache (make image-test installs it)"
)
def test_hadolint_passes() -> None:
    done = subprocess.run(
        [str(HADOLINT), "Dockerfile"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_make_image_test_is_a_target_ci_runs_and_the_docs_describe() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^image:\n\tbash scripts/image\.sh$", makefile, re.M)
    assert re.search(r"^image-test:\n\t.*bash scripts/image-test\.sh$", makefile, re.M)
    assert re.search(r"^make image-test$", (ROOT / ".ci" / "run").read_text(), re.M)
    docs = (ROOT / "docs" / "bot.md").read_text(encoding="utf-8")
    assert "#### What `make image-test` checks" in docs
    assert "scripts/image_test.py" in docs
