"""The container judge's hardening, read from the command line a real subprocess is started with:
a fake `docker`/`podman` first on PATH (`fake_runtime.py`) records its argv and runs the stage
itself. Hostile settings and paths are refused by the config and, when they reach the sandbox
another way, by the sandbox (`test_container_config.py` for the config's own refusals); the
real CLIs and a real container are in `test_container_runtimes.py`."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from freemad.config.evolve_section import ContainerConfig
from freemad.evolve.validate import validate
from freemad.sandbox import View, code_sandbox
from tests.evolve.runs import evolve_config, harness, make_repo
from tests.sandbox.fake_runtime import (
    CWD,
    fake_runtime,
    flag_values,
    leading_options,
    logged_calls,
    make_worktree,
    run_stage,
)
from tests.sandbox.test_host_and_container import Container, Mount


@pytest.mark.parametrize("runtime", ["docker", "podman"])
def test_every_stage_container_is_hardened_as_configured(tmp_path, monkeypatch, runtime):
    log = fake_runtime(tmp_path, monkeypatch, runtime)
    worktree = make_worktree(tmp_path)
    config = ContainerConfig(
        enabled=True,
        runtime=runtime,
        image="alpine:3",
        memory="512M",
        cpus=1.5,
        pids_limit=64,
        tmpfs_size="64m",
    )
    result = run_stage(config, worktree)
    assert result.ok(), result.stderr
    assert result.stdout == f"{worktree.resolve()}\n"  # the stage ran where /work is
    info, run = logged_calls(log)
    assert info == ["info"]
    assert run[:3] == ["run", "--rm", "--name"]
    options = leading_options(run, "alpine:3")
    assert run[len(options) + 1 :] == CWD
    assert flag_values(options, "--cap-drop") == ["ALL"]
    assert flag_values(options, "--security-opt") == ["no-new-privileges"]
    assert "--read-only" in options
    assert flag_values(options, "--tmpfs") == ["/tmp:rw,exec,nosuid,nodev,size=64m,mode=1777"]
    assert flag_values(options, "--pids-limit") == ["64"]
    assert flag_values(options, "--memory") == ["512m"]
    assert flag_values(options, "--memory-swap") == ["512m"]  # no swap beyond the limit
    assert flag_values(options, "--cpus") == ["1.5"]
    assert flag_values(options, "--network") == ["none"]
    assert flag_values(options, "--user") == [f"{os.getuid()}:{os.getgid()}"]
    assert flag_values(options, "--mount") == [
        f"type=bind,source={worktree.resolve()},target=/work"
    ]
    assert flag_values(options, "--workdir") == ["/work"]
    assert not {"--privileged", "--cap-add", "-v", "--volume", "--init"} & set(options)


@pytest.mark.parametrize(
    ("runtime", "uid", "userns"),
    [
        ("podman", 1000, ["keep-id"]),
        ("podman", 0, []),
        ("docker", 1000, []),
    ],
)
def test_rootless_podman_keeps_the_users_id_so_the_worktree_stays_writable(
    tmp_path, monkeypatch, runtime, uid, userns
):
    log = fake_runtime(tmp_path, monkeypatch, runtime)
    worktree = make_worktree(tmp_path)
    monkeypatch.setattr("freemad.sandbox.container.os.getuid", lambda: uid)
    assert run_stage(ContainerConfig(enabled=True, runtime=runtime, image="alpine"), worktree).ok()
    options = leading_options(logged_calls(log)[1], "alpine")
    assert flag_values(options, "--userns") == userns
    assert flag_values(options, "--user") == [f"{uid}:{os.getgid()}"]


def test_the_defaults_limit_memory_processes_and_tmp_but_not_cpus(tmp_path, monkeypatch):
    log = fake_runtime(tmp_path, monkeypatch, "docker")
    assert run_stage(ContainerConfig(enabled=True, image="alpine"), make_worktree(tmp_path)).ok()
    options = leading_options(logged_calls(log)[1], "alpine")
    assert flag_values(options, "--memory") == flag_values(options, "--memory-swap") == ["2g"]
    assert flag_values(options, "--pids-limit") == ["512"]
    assert flag_values(options, "--tmpfs") == ["/tmp:rw,exec,nosuid,nodev,size=256m,mode=1777"]
    assert "--cpus" not in options
    no_limit = ContainerConfig(enabled=True, image="alpine", memory=None)
    assert run_stage(no_limit, make_worktree(tmp_path, "second")).ok()
    assert not {"--memory", "--memory-swap"} & set(logged_calls(log)[-1])


def test_extra_mounts_are_read_only_real_paths_and_relative_ones_come_from_the_repo(
    tmp_path, monkeypatch
):
    log = fake_runtime(tmp_path, monkeypatch, "docker")
    repo, data = tmp_path / "repo", tmp_path / "data"
    (repo / "fixtures").mkdir(parents=True)
    data.mkdir()
    (tmp_path / "link").symlink_to(data)
    config = ContainerConfig(
        enabled=True,
        image="alpine",
        extra_mounts=[
            {"source": str(tmp_path / "link"), "target": "/data/"},
            {"source": "fixtures/", "target": "/opt/fixtures"},
        ],
    ).resolved(repo)
    worktree = make_worktree(tmp_path)
    assert run_stage(config, worktree).ok()
    assert flag_values(leading_options(logged_calls(log)[1], "alpine"), "--mount") == [
        f"type=bind,source={worktree.resolve()},target=/work",
        f"type=bind,source={data.resolve()},target=/data,readonly",  # the link's real folder
        f"type=bind,source={(repo / 'fixtures').resolve()},target=/opt/fixtures,readonly",
    ]
    lines = code_sandbox("host", False, [], config).describe()
    assert (
        f"read-only mounts: {tmp_path / 'link'} at /data, {repo / 'fixtures'} at /opt/fixtures"
        in lines
    )


def test_stages_run_in_the_workdir_below_work_and_a_missing_one_is_refused(tmp_path, monkeypatch):
    log = fake_runtime(tmp_path, monkeypatch, "podman")
    worktree = make_worktree(tmp_path)
    (worktree / "pkg" / "sub").mkdir(parents=True)
    config = ContainerConfig(
        enabled=True, runtime="podman", image="alpine", workdir="/work/pkg/sub/"
    )
    box = code_sandbox("host", False, [], config)
    result = box.run(CWD, worktree, 60, View())
    assert result.stdout == f"{(worktree / 'pkg' / 'sub').resolve()}\n"
    assert flag_values(logged_calls(log)[1], "--workdir") == ["/work/pkg/sub"]
    shutil.rmtree(worktree / "pkg")  # a candidate may delete it: its stages are not run
    refused = box.run(CWD, worktree, 60, View())
    assert refused.exit_code is None
    assert refused.stderr == (
        "not run: judge.container.workdir /work/pkg/sub is not a folder of the worktree"
    )
    assert [call[0] for call in logged_calls(log)] == ["info", "run"]


@pytest.mark.parametrize("bad", [",", ":", '"'])
def test_a_worktree_whose_path_would_break_the_mount_option_is_refused(tmp_path, monkeypatch, bad):
    log = fake_runtime(tmp_path, monkeypatch, "docker")
    worktree = make_worktree(tmp_path, f"wt{bad}readonly=false")
    result = run_stage(ContainerConfig(enabled=True, image="alpine"), worktree, _marker(tmp_path))
    assert result.exit_code is None
    assert result.stderr.startswith("not run: the worktree cannot be mounted: ")
    assert f"has a {bad!r}, which would break the --mount option" in result.stderr
    assert [call[0] for call in logged_calls(log)] == ["info"]
    assert not (tmp_path / "ran").exists()


def _marker(folder: Path) -> list[str]:
    return [sys.executable, "-c", f"open({str(folder / 'ran')!r}, 'w').close()"]


def _hostile_specs(tmp_path: Path) -> list[tuple[Container, str]]:
    comma = tmp_path / "a,readonly=false"
    comma.mkdir()
    (tmp_path / "innocent").symlink_to(comma)  # a harmless name whose real path injects
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / "project").mkdir()
    runtime_dir = tmp_path / "run-user"
    runtime_dir.mkdir()
    mounts = "judge.container.extra_mounts[0]"
    return [
        (
            Container(extra_mounts=(Mount(str(tmp_path / "innocent"), "/data"),)),
            f"{mounts}: {str(comma)!r} has a ',', which would break the --mount option",
        ),
        (
            Container(extra_mounts=(Mount(str(home / ".ssh"), "/keys"),)),
            f"{mounts}: {home / '.ssh'} would show the stages {home / '.ssh'}",
        ),
        (
            Container(extra_mounts=(Mount(str(home), "/home"),)),
            f"{mounts}: {home} would show the stages {home / '.ssh'}",
        ),
        (
            Container(extra_mounts=(Mount(str(runtime_dir), "/run/x"),)),
            f"{mounts}: {runtime_dir} would show the stages {runtime_dir}",
        ),
        (
            Container(extra_mounts=(Mount("/", "/host"),)),
            f"{mounts}: / would show the stages {home / '.ssh'}",
        ),
        (
            Container(extra_mounts=(Mount("data", "/data"),)),
            f"{mounts}: 'data' is not an absolute path",
        ),
        (
            Container(extra_mounts=(Mount(str(tmp_path / "gone"), "/data"),)),
            f"{mounts}: {tmp_path / 'gone'} does not exist",
        ),
        (
            Container(extra_mounts=(Mount(str(home / "project"), "/work/tests"),)),
            f"{mounts}: '/work/tests' would shadow /work, which the container keeps",
        ),
        (
            Container(extra_mounts=(Mount(str(home / "project"), "/data,readonly=false"),)),
            f"{mounts}: '/data,readonly=false' has a ',', which would break the --mount option",
        ),
        (
            Container(tmpfs_size="64m,suid,dev"),
            "judge.container.tmpfs_size: '64m,suid,dev' is not a size: a whole number and k,"
            " m or g, e.g. 512m or 2g",
        ),
        (
            Container(memory="1k"),
            "judge.container.memory: '1k' is too small: at least 6m",
        ),
        (
            Container(workdir="/workshop"),
            "judge.container.workdir: '/workshop' must be /work or a folder below it (the worktree)",
        ),
        (
            Container(workdir="/work/../etc"),
            "judge.container.workdir: '/work/../etc' must not contain '..'",
        ),
        (Container(pids_limit=0), "judge.container.pids_limit: 0 is not a positive number"),
    ]


def test_hostile_settings_that_bypass_the_config_fail_closed(tmp_path, monkeypatch):
    log = fake_runtime(tmp_path, monkeypatch, "docker")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run-user"))
    worktree = make_worktree(tmp_path)
    for spec, problem in _hostile_specs(tmp_path):
        box = code_sandbox("host", False, [], spec)
        assert box.problem() == problem
        result = box.run(_marker(tmp_path), worktree, 60, View())
        assert (result.exit_code, result.stderr) == (None, f"not run: {problem}")
        assert box.describe()[-1] == f"unusable: {problem}"
    assert logged_calls(log) == []  # refused before the runtime is even asked
    assert not (tmp_path / "ran").exists()
    fine = Container(extra_mounts=(Mount(str(tmp_path / "home" / "project"), "/p"),))
    assert code_sandbox("host", False, [], fine).problem() is None


def test_describe_lists_the_hardening(tmp_path, monkeypatch):
    fake_runtime(tmp_path, monkeypatch, "podman")
    config = ContainerConfig(
        enabled=True, runtime="podman", image="alpine", cpus=2, pids_limit=100, workdir="/work/a"
    )
    assert code_sandbox("host", False, ["FREEMAD_TEST_SETTING"], config).describe() == [
        "judge stages run in a podman container (image alpine) with only the worktree mounted,"
        " at /work; they run in /work/a",
        "network: off, each stage's container has no network (--network none)",
        "hardening: no capabilities (--cap-drop ALL), no new privileges, a read-only root file"
        " system, a private /tmp of 256m (tmpfs), never --privileged",
        "limits: memory 2g with no swap, 2 CPUs, at most 100 processes",
        "no other mounts",
        "environment: the image's own plus passthrough FREEMAD_TEST_SETTING",
    ]
    unlimited = ContainerConfig(enabled=True, runtime="podman", image="alpine", memory=None)
    lines = code_sandbox("host", False, [], unlimited).describe()
    assert "limits: memory: no limit, CPUs: no limit, at most 512 processes" in lines


# --- Through an evolve run's wiring ----------------------------------------------------------


def test_evolve_validate_judges_the_seed_in_the_hardened_container(tmp_path, monkeypatch):
    """The runner hands the sandbox its mounts with relative sources taken from the repository;
    validate runs the seed's stages through the container and prints the hardening."""
    log = fake_runtime(tmp_path, monkeypatch, "docker")
    make_repo(tmp_path / "repo")
    container = {
        "enabled": True,
        "image": "python:3.12-slim",
        "extra_mounts": [{"source": "tests", "target": "/fixtures"}],
    }
    config = evolve_config(security={"sandbox": "host"}, judge={"container": container})
    runner = harness(tmp_path, [], config).runner
    report = validate(runner.evolve, runner.repos, runner.sandbox, runner.agent_box)
    assert report["errors"] == []
    assert report["baseline"]["measurement"]["components"] == {
        "tests_pass": 1.0,
        "runtime_ms": 50.0,
    }
    runs = [call for call in logged_calls(log) if call[0] == "run"]
    assert len(runs) == 2  # one container per stage
    tests = (tmp_path / "repo" / "tests").resolve()
    for run in runs:
        options = leading_options(run, "python:3.12-slim")
        assert (
            flag_values(options, "--mount")[1]
            == f"type=bind,source={tests},target=/fixtures,readonly"
        )
        assert flag_values(options, "--cap-drop") == ["ALL"]
    assert (
        "read-only mounts: " + str(tmp_path / "repo" / "tests") + " at /fixtures"
        in report["isolation"]
    )
    assert any(line.startswith("hardening: no capabilities") for line in report["isolation"])


def test_evolve_validate_names_a_missing_mount_in_one_line(tmp_path, monkeypatch):
    log = fake_runtime(tmp_path, monkeypatch, "docker")
    make_repo(tmp_path / "repo")
    container = {
        "enabled": True,
        "image": "python:3.12-slim",
        "extra_mounts": [{"source": "fixtures/data", "target": "/data"}],
    }
    config = evolve_config(security={"sandbox": "host"}, judge={"container": container})
    runner = harness(tmp_path, [], config).runner
    report = validate(runner.evolve, runner.repos, runner.sandbox, runner.agent_box)
    missing = tmp_path / "repo" / "fixtures" / "data"
    assert report["errors"] == [
        f"evolve.judge.container: judge.container.extra_mounts[0]: {missing} does not exist"
    ]
    assert report["baseline"] is None
    assert logged_calls(log) == []
