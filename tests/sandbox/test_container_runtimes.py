"""The container judge's flags against the real `docker` and `podman` CLIs, and a stage run in a
real container where this machine has a runtime and a local image (skipped, saying why, where
not)."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from freemad.config.evolve_section import ContainerConfig
from tests.sandbox.fake_runtime import fake_runtime, logged_calls, make_worktree, run_stage


def _recorded_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runtime: str, image: str
) -> list[str]:
    """The `run` arguments a fully configured container stage is started with (`true`)."""
    log = fake_runtime(tmp_path, monkeypatch, runtime)
    data = tmp_path / "data"
    data.mkdir()
    config = ContainerConfig(
        enabled=True,
        runtime=runtime,
        image=image,
        cpus=1,
        extra_mounts=[{"source": str(data), "target": "/data"}],
    )
    assert run_stage(config, make_worktree(tmp_path), ["true"]).ok()
    return logged_calls(log)[1]


REAL_DOCKER = shutil.which("docker")


@pytest.mark.skipif(REAL_DOCKER is None, reason="no docker CLI here")
def test_the_docker_cli_accepts_every_flag(tmp_path, monkeypatch):
    run = _recorded_run(tmp_path, monkeypatch, "docker", "alpine")
    assert REAL_DOCKER is not None
    # The CLI parses every flag and --mount before it looks for the daemon, which is nowhere.
    env = {"PATH": os.environ["PATH"], "DOCKER_HOST": f"unix://{tmp_path}/no-daemon.sock"}
    env["DOCKER_CONFIG"] = str(tmp_path / "docker-config")
    done = subprocess.run(
        [REAL_DOCKER, *run], check=False, capture_output=True, text=True, env=env, timeout=60
    )
    assert "Cannot connect to the Docker daemon" in done.stderr, done.stderr
    assert "unknown" not in done.stderr and "invalid" not in done.stderr


@functools.cache
def _local_image(runtime: str) -> tuple[str, str] | str:
    """The runtime's program and a local image (FREEMAD_TEST_CONTAINER_IMAGE, else the first
    one it lists), or why there is none; nothing is pulled."""
    program = shutil.which(runtime)
    if program is None:
        return f"no {runtime} here"
    image = os.environ.get("FREEMAD_TEST_CONTAINER_IMAGE")
    if not image:
        try:
            listed = subprocess.run(
                [program, "images", "--format", "{{.Repository}}:{{.Tag}}"],
                check=False,
                capture_output=True,
                text=True,
                timeout=60,
            ).stdout.split()
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{runtime} images failed: {exc}"
        image = next((name for name in listed if "<none>" not in name), None)
    return (program, image) if image else f"no local {runtime} image"


def _needs_image(runtime: str) -> tuple[str, str]:
    found = _local_image(runtime)
    if isinstance(found, str):
        pytest.skip(found)
    return found


def test_the_podman_cli_accepts_every_flag(tmp_path, monkeypatch):
    podman, image = _needs_image("podman")
    run = _recorded_run(tmp_path, monkeypatch, "podman", image)
    done = subprocess.run(
        [podman, "run", "--pull=never", *run[1:]],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # 125 is podman's own error (an unknown flag, a bad --mount); 0 ran, 126 the OCI runtime
    # could not start the container (a machine without cgroups for it): the flags were accepted.
    assert done.returncode in (0, 126), done.stderr


@pytest.mark.parametrize("runtime", ["podman", "docker"])
def test_a_real_container_stage_is_confined(tmp_path, runtime):
    program, image = _needs_image(runtime)
    tried = subprocess.run(
        [program, "run", "--rm", "--pull=never", image, "true"],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if tried.returncode != 0:
        lines = [line.strip() for line in tried.stderr.splitlines() if line.strip()]
        pytest.skip(f"{runtime} cannot run a container here ({lines[-1] if lines else 'failed'})")
    data = tmp_path / "data"
    data.mkdir()
    (data / "given.txt").write_text("read me")
    config = ContainerConfig(
        enabled=True,
        runtime=runtime,
        image=image,
        pids_limit=64,
        extra_mounts=[{"source": str(data), "target": "/data"}],
    )
    worktree = make_worktree(tmp_path)
    script = (
        "cat /data/given.txt; echo; echo made > /work/made.txt;"
        " echo tmp > /tmp/t && echo tmp-writable;"
        " (echo x > /etc/owned) 2>/dev/null || echo root-read-only;"
        " (echo x > /data/owned) 2>/dev/null || echo mount-read-only;"
        " grep -E '^(CapEff|NoNewPrivs)' /proc/self/status"
    )
    result = run_stage(config, worktree, ["sh", "-c", script])
    assert result.ok(), result.stderr
    assert result.stdout.splitlines() == [
        "read me",
        "tmp-writable",
        "root-read-only",
        "mount-read-only",
        "CapEff:\t0000000000000000",
        "NoNewPrivs:\t1",
    ]
    assert (worktree / "made.txt").read_text() == "made\n"
    assert not (data / "owned").exists()
