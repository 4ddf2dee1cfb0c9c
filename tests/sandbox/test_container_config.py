"""The container judge's settings: hostile or malformed values are one-line errors, sizes and
paths are normalised, and runs from before the hardening keep their judge's hash."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from freemad.config.evolve_section import ContainerConfig, EvolveConfig
from freemad.evolve.evolve_runner import judge_hash
from tests.evolve.test_config import _set, error, toy


def _container(value: dict[str, Any]) -> Any:
    return _set("judge.container", {"enabled": True, "image": "alpine", **value})


KEY = "evolve.judge.container"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            {"extra_mounts": [{"source": "/srv/data,readonly=false", "target": "/data"}]},
            f"{KEY}.extra_mounts[0].source: '/srv/data,readonly=false' has a ',', which would"
            " break the --mount option",
        ),
        (
            {"extra_mounts": [{"source": "/srv/data", "target": "/data,source=/etc"}]},
            f"{KEY}.extra_mounts[0].target: '/data,source=/etc' has a ',', which would break the"
            " --mount option",
        ),
        (
            {"extra_mounts": [{"source": "/srv:/etc", "target": "/data"}]},
            f"{KEY}.extra_mounts[0].source: '/srv:/etc' has a ':', which would break the --mount"
            " option",
        ),
        (
            {"extra_mounts": [{"source": '/srv/"x', "target": "/data"}]},
            f"{KEY}.extra_mounts[0].source: '/srv/\"x' has a '\"', which would break the --mount"
            " option",
        ),
        (
            {"extra_mounts": [{"source": "/srv/x\ntarget=/etc", "target": "/data"}]},
            f"{KEY}.extra_mounts[0].source: '/srv/x\\ntarget=/etc' has a control character",
        ),
        (
            {"extra_mounts": [{"source": "../secrets", "target": "/data"}]},
            f"{KEY}.extra_mounts[0].source: '../secrets' leads outside the repository",
        ),
        (
            {"extra_mounts": [{"source": "sub/.git/config", "target": "/data"}]},
            f"{KEY}.extra_mounts[0].source: 'sub/.git/config' names .git, which no stage may see",
        ),
        (
            {"extra_mounts": [{"source": ".", "target": "/data"}]},
            f"{KEY}.extra_mounts[0].source: '.' must name a file or folder inside the repository",
        ),
        (
            {"extra_mounts": [{"source": "/srv", "target": "/work"}]},
            f"{KEY}.extra_mounts[0].target: '/work' would shadow /work, which the container keeps",
        ),
        (
            {"extra_mounts": [{"source": "/srv", "target": "//work/tests/"}]},
            f"{KEY}.extra_mounts[0].target: '//work/tests/' would shadow /work, which the"
            " container keeps",
        ),
        (
            {"extra_mounts": [{"source": "/srv", "target": "/"}]},
            f"{KEY}.extra_mounts[0].target: '/' would hide the whole container",
        ),
        (
            {"extra_mounts": [{"source": "/srv", "target": "/tmp"}]},
            f"{KEY}.extra_mounts[0].target: '/tmp' would shadow /tmp, which the container keeps",
        ),
        (
            {"extra_mounts": [{"source": "/srv", "target": "/proc/sys/kernel"}]},
            f"{KEY}.extra_mounts[0].target: '/proc/sys/kernel' would shadow /proc, which the"
            " container keeps",
        ),
        (
            {"extra_mounts": [{"source": "/srv", "target": "/data/../work"}]},
            f"{KEY}.extra_mounts[0].target: '/data/../work' must not contain '..'",
        ),
        (
            {"extra_mounts": [{"source": "/srv", "target": "data"}]},
            f"{KEY}.extra_mounts[0].target: 'data' must be an absolute path in the container",
        ),
        (
            {
                "extra_mounts": [
                    {"source": "/srv/a", "target": "/data"},
                    {"source": "/srv/b", "target": "/data/"},
                ]
            },
            f"{KEY}.extra_mounts[1].target: '/data' is already mounted by extra_mounts[0]",
        ),
        (
            {"extra_mounts": [{"source": "/srv", "target": "/data", "readonly": False}]},
            f"{KEY}.extra_mounts[0].readonly: unknown key (expected one of: source, target)",
        ),
        (
            {"workdir": "/workshop"},
            f"{KEY}.workdir: '/workshop' must be /work or a folder below it (the worktree)",
        ),
        (
            {"workdir": "work/sub"},
            f"{KEY}.workdir: 'work/sub' must be an absolute path in the container",
        ),
        ({"workdir": "/work/../etc"}, f"{KEY}.workdir: '/work/../etc' must not contain '..'"),
        (
            {"memory": "2 g"},
            f"{KEY}.memory: '2 g' is not a size: a whole number and k, m or g, e.g. 512m or 2g",
        ),
        (
            {"memory": "2g,size=1"},
            f"{KEY}.memory: '2g,size=1' is not a size: a whole number and k, m or g, e.g. 512m"
            " or 2g",
        ),
        ({"memory": "5m"}, f"{KEY}.memory: '5m' is too small: at least 6m"),
        (
            {"tmpfs_size": "256m,exec,suid"},
            f"{KEY}.tmpfs_size: '256m,exec,suid' is not a size: a whole number and k, m or g,"
            " e.g. 512m or 2g",
        ),
        (
            {"tmpfs_size": "0m"},
            f"{KEY}.tmpfs_size: '0m' is not a size: a whole number and k, m or g, e.g. 512m or 2g",
        ),
        ({"cpus": 0}, f"{KEY}.cpus: should be greater than or equal to 0.01 (got 0)"),
        ({"pids_limit": 0}, f"{KEY}.pids_limit: should be greater than 0 (got 0)"),
    ],
)
def test_hostile_or_malformed_container_settings_are_one_line_errors(value, expected):
    assert error(_container(value)) == f"evolve.yaml: {expected}"


def test_sizes_and_paths_are_normalised():
    config = ContainerConfig(
        memory="4G",
        tmpfs_size=" 64M ",
        workdir="/work/./pkg/",
        extra_mounts=[{"source": "/srv//data/", "target": "/opt/./x/"}],
    )
    assert (config.memory, config.tmpfs_size, config.workdir) == ("4g", "64m", "/work/pkg")
    assert (config.extra_mounts[0].source, config.extra_mounts[0].target) == ("/srv/data", "/opt/x")


def test_runs_from_before_the_hardening_keep_their_judge_hash():
    evolve = EvolveConfig.model_validate(toy())
    # The judge's hash as it was computed before the hardening settings existed.
    before = evolve.judge.model_dump(mode="json")
    del before["confirm_runs"]
    before["container"] = {"enabled": False, "runtime": "docker", "image": None}
    old = hashlib.sha256(json.dumps(before, sort_keys=True).encode()).hexdigest()
    assert judge_hash(evolve) == old
    data = toy()
    data["judge"]["container"] = {"memory": "4g"}
    assert judge_hash(EvolveConfig.model_validate(data)) != old  # a limit is part of the judge
