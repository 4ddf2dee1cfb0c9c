"""Releases: action.yml's Marketplace metadata against SchemaStore's action schema, the release
workflow's least-privilege shape, its shell steps run for real against local repositories, and
a CHANGELOG that claims no release the package has not made."""

from __future__ import annotations

import copy
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from freemad import __version__
from tests.gittools import git, isolated_git  # noqa: F401  (autouse)
from tests.schemastore import errors, load_yaml

ROOT = Path(__file__).resolve().parents[2]
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
# GitHub Marketplace cuts an action's description at 125 characters.
MARKETPLACE_DESCRIPTION = 125


def release() -> dict[str, Any]:
    data: dict[str, Any] = load_yaml(RELEASE)
    return data


def step(job: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(
        s for s in release()["jobs"][job]["steps"] if s.get("name", "").startswith(name)
    )
    return found


def run_step(
    script: str, env: dict[str, str], cwd: Path, tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    """A `run:` step as the runner runs it: bash -e with pipefail, GITHUB_OUTPUT a file."""
    full = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(tmp_path),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        **env,
    }
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env=full,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


# --- action.yml for the Marketplace ------------------------------------------------------------


def test_the_action_metadata_is_valid_against_schemastore() -> None:
    action = load_yaml(ROOT / "action.yml")
    assert errors(action, "github-actions") == []
    assert action["name"] and action["author"]
    assert 0 < len(action["description"]) <= MARKETPLACE_DESCRIPTION
    # The schema holds GitHub's lists: Feather icons and the badge colours.
    assert set(action["branding"]) == {"icon", "color"}


@pytest.mark.parametrize(
    ("field", "value"),
    [("icon", "robot"), ("color", "pink")],
)
def test_the_schema_check_rejects_branding_github_does_not_offer(field: str, value: str) -> None:
    action = copy.deepcopy(load_yaml(ROOT / "action.yml"))
    action["branding"][field] = value
    assert errors(action, "github-actions")


# --- release.yml: triggers and least privilege -------------------------------------------------


def test_a_version_tag_or_a_hand_starts_a_release() -> None:
    on = release()["on"]
    assert set(on) == {"push", "workflow_dispatch"}
    assert on["push"] == {"tags": ["v*.*.*"]}  # tags only: a push to a branch releases nothing


def test_each_job_gets_only_the_permission_its_step_needs() -> None:
    workflow = release()
    assert workflow["permissions"] == {}
    jobs = workflow["jobs"]
    granted = {name: job["permissions"] for name, job in jobs.items()}
    assert granted == {
        "build": {"contents": "read"},
        "pypi": {"id-token": "write"},
        "image": {"contents": "read", "packages": "write"},
        "major-tag": {"contents": "write"},
    }
    for name, job in jobs.items():
        assert isinstance(job["timeout-minutes"], int), name


def test_pypi_is_reached_by_trusted_publishing_from_its_own_environment() -> None:
    job = release()["jobs"]["pypi"]
    assert job["environment"]["name"] == "pypi"
    assert job["needs"] == "build"
    # The job holding the OIDC token runs no code of ours: it downloads and uploads, no more.
    used = [s["uses"].split("@")[0] for s in job["steps"]]
    assert used == ["actions/download-artifact", "pypa/gh-action-pypi-publish"]
    assert all("run" not in s for s in job["steps"])
    assert "password" not in str(job)  # no API token: PyPI trusts the workflow


def test_the_image_is_built_from_the_dockerfile_and_pushed_to_ghcr() -> None:
    job = release()["jobs"]["image"]
    used = [s["uses"].split("@")[0] for s in job["steps"] if "uses" in s]
    assert used == [
        "actions/checkout",
        "docker/setup-buildx-action",
        "docker/login-action",
        "docker/build-push-action",
    ]
    login = next(s for s in job["steps"] if s.get("uses", "").startswith("docker/login-action@"))
    assert login["with"]["registry"] == "ghcr.io"
    push = next(s for s in job["steps"] if s.get("uses", "").startswith("docker/build-push"))
    assert push["with"]["context"] == "."
    assert push["with"]["push"] is True
    assert push["with"]["tags"] == "${{ steps.tags.outputs.tags }}"
    assert (ROOT / "Dockerfile").exists()


def test_only_a_tag_publishes_and_the_major_tag_moves_last() -> None:
    jobs = release()["jobs"]
    assert "if" not in jobs["build"]  # a dispatch on a branch builds and checks, no more
    for name in ("pypi", "image", "major-tag"):
        assert jobs[name]["if"] == "github.ref_type == 'tag'", name
    assert jobs["major-tag"]["needs"] == ["pypi", "image"]


# --- release.yml's shell steps, run -------------------------------------------------------------


def built(folder: Path, version: str) -> Path:
    dist = folder / "dist"
    dist.mkdir(parents=True)
    (dist / f"freemad-{version}-py3-none-any.whl").write_bytes(b"wheel")
    (dist / f"freemad-{version}.tar.gz").write_bytes(b"sdist")
    return folder


def test_the_version_check_passes_the_package_version_and_stops_another(tmp_path: Path) -> None:
    check = step("build", "Check the packages carry")
    assert check["env"] == {"TAG": "${{ github.ref_name }}"}
    folder = built(tmp_path / "same", __version__)
    ok = run_step(check["run"], {"TAG": f"v{__version__}"}, folder, tmp_path)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    other = run_step(check["run"], {"TAG": "v99.0.0"}, folder, tmp_path)
    assert other.returncode == 1
    assert "::error title=Release::the tag is v99.0.0" in other.stdout


def image_tags(tag: str, tmp_path: Path) -> list[str]:
    name = step("image", "Name the image")
    output = tmp_path / "output"
    output.unlink(missing_ok=True)
    done = run_step(
        name["run"], {"TAG": tag, "REPOSITORY": "Octo-Org/FREE-MAD"}, tmp_path, tmp_path
    )
    assert done.returncode == 0, done.stdout + done.stderr
    text = output.read_text()
    found = re.search(r"^tags<<EOF\n(.*?)\nEOF$", text, flags=re.MULTILINE | re.DOTALL)
    assert found, text
    return found.group(1).splitlines()


def test_the_image_tags_follow_the_version(tmp_path: Path) -> None:
    image = "ghcr.io/octo-org/free-mad"  # lower case, as the registry wants
    assert image_tags("v1.2.3", tmp_path) == [
        f"{image}:1.2.3",
        f"{image}:1.2",
        f"{image}:1",
        f"{image}:latest",
    ]
    assert image_tags("v1.3.0rc1", tmp_path) == [f"{image}:1.3.0rc1"]  # a pre-release: no more


def test_the_major_tag_moves_to_a_release_and_stays_for_a_pre_release(tmp_path: Path) -> None:
    remote, checkout = tmp_path / "remote.git", tmp_path / "checkout"
    git(tmp_path, "init", "--quiet", "--bare", str(remote))
    git(tmp_path, "init", "--quiet", str(checkout))
    git(checkout, "remote", "add", "origin", str(remote))
    git(checkout, "commit", "--quiet", "--allow-empty", "-m", "one")
    first = git(checkout, "rev-parse", "HEAD").strip()
    git(checkout, "tag", "v1", first)
    git(checkout, "push", "--quiet", "origin", "HEAD:refs/heads/main", "refs/tags/v1")
    git(checkout, "commit", "--quiet", "--allow-empty", "-m", "two")
    second = git(checkout, "rev-parse", "HEAD").strip()
    git(checkout, "push", "--quiet", "origin", "HEAD:refs/heads/main")
    move = step("major-tag", "Move the major tag")
    assert move["env"] == {"TAG": "${{ github.ref_name }}", "COMMIT": "${{ github.sha }}"}

    pre = run_step(move["run"], {"TAG": "v1.3.0rc1", "COMMIT": second}, checkout, tmp_path)
    assert pre.returncode == 0, pre.stdout + pre.stderr
    assert "pre-release" in pre.stdout
    assert git(remote, "rev-parse", "refs/tags/v1").strip() == first

    done = run_step(move["run"], {"TAG": "v1.3.0", "COMMIT": second}, checkout, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert git(remote, "rev-parse", "refs/tags/v1").strip() == second


# --- CHANGELOG.md ------------------------------------------------------------------------------


def test_the_changelog_starts_unreleased_and_claims_no_release_not_made() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## \[([^\]]+)\]", text, flags=re.MULTILINE)
    assert sections[0] == "Unreleased"
    # Keep a Changelog: a version section is a release; this package has made none beyond its
    # own version.
    assert set(sections[1:]) <= {__version__}
    assert "keepachangelog.com" in text
