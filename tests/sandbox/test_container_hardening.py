"""The container judge's hardening, read from the command line a real subprocess is started with:
a fake `docker`/`podman` first on PATH records its argv and runs the stage itself in the folder
the container would (the worktree, or the `workdir` below it). Hostile settings and paths are
refused by the config and, when they reach the sandbox another way, by the sandbox; a real
runtime runs the stages where it can."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from freemad.config.evolve import ContainerConfig, EvolveConfig
from freemad.evolve.runtime import judge_hash
from freemad.evolve.validate import validate
from freemad.sandbox import View, code_sandbox
from freemad.sandbox.process import CommandResult
from tests.evolve.runs import evolve_config, harness, make_repo
from tests.evolve.test_config import _set, error, toy
from tests.sandbox.test_host_and_container import Container, Mount

FAKE_RUNTIME = """#!{python}
import json, os, subprocess, sys
args = sys.argv[1:]
with open({log!r}, "a") as log:
    log.write(json.dumps(args) + "\\n")
if args[0] != "run":
    sys.exit(0)  # info, kill
VALUED = {{"--name", "--network", "--user", "--cap-drop", "--security-opt", "--tmpfs",
          "--pids-limit", "--memory", "--memory-swap", "--cpus", "--mount", "--workdir", "-e",
          "--userns"}}
at, options = 1, []
while args[at].startswith("-"):
    width = 2 if args[at] in VALUED else 1
    options.append(args[at : at + width])
    at += width
command = args[at + 1 :]  # after the image
mounts = [dict(part.split("=", 1) for part in o[1].split(",") if "=" in part)
          for o in options if o[0] == "--mount"]
work = next(m["source"] for m in mounts if m["target"] == "/work")
workdir = next(o[1] for o in options if o[0] == "--workdir")
folder = os.path.join(work, os.path.relpath(workdir, "/work"))
sys.exit(subprocess.run(command, cwd=folder).returncode)
"""


def _fake_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> Path:
    """A `docker` or `podman` first on PATH that logs each call's argv and runs the stage."""
    bin_dir, log = tmp_path / "fakebin", tmp_path / f"{name}.log"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / name
    script.write_text(FAKE_RUNTIME.format(python=sys.executable, log=str(log)))
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return log


def _calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _values(argv: list[str], flag: str) -> list[str]:
    """Every value given to `flag` before the image (an option that takes one)."""
    return [argv[at + 1] for at, word in enumerate(argv) if word == flag]


def _options(argv: list[str], image: str) -> list[str]:
    return argv[: argv.index(image)]


def _worktree(tmp_path: Path, name: str = "worktree") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    return folder


CWD = [sys.executable, "-c", "import os; print(os.getcwd())"]


def _run(
    config: Any, worktree: Path, argv: list[str] = CWD, network: bool = False
) -> CommandResult:
    return code_sandbox("host", network, [], config).run(argv, worktree, 60, View())


@pytest.mark.parametrize("runtime", ["docker", "podman"])
def test_every_stage_container_is_hardened_as_configured(tmp_path, monkeypatch, runtime):
    log = _fake_runtime(tmp_path, monkeypatch, runtime)
    worktree = _worktree(tmp_path)
    config = ContainerConfig(
        enabled=True,
        runtime=runtime,
        image="alpine:3",
        memory="512M",
        cpus=1.5,
        pids_limit=64,
        tmpfs_size="64m",
    )
    result = _run(config, worktree)
    assert result.ok(), result.stderr
    assert result.stdout == f"{worktree.resolve()}\n"  # the stage ran where /work is
    info, run = _calls(log)
    assert info == ["info"]
    assert run[:3] == ["run", "--rm", "--name"]
    options = _options(run, "alpine:3")
    assert run[len(options) + 1 :] == CWD
    assert _values(options, "--cap-drop") == ["ALL"]
    assert _values(options, "--security-opt") == ["no-new-privileges"]
    assert "--read-only" in options
    assert _values(options, "--tmpfs") == ["/tmp:rw,exec,nosuid,nodev,size=64m,mode=1777"]
    assert _values(options, "--pids-limit") == ["64"]
    assert _values(options, "--memory") == ["512m"]
    assert _values(options, "--memory-swap") == ["512m"]  # no swap beyond the limit
    assert _values(options, "--cpus") == ["1.5"]
    assert _values(options, "--network") == ["none"]
    assert _values(options, "--user") == [f"{os.getuid()}:{os.getgid()}"]
    assert _values(options, "--mount") == [f"type=bind,source={worktree.resolve()},target=/work"]
    assert _values(options, "--workdir") == ["/work"]
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
    log = _fake_runtime(tmp_path, monkeypatch, runtime)
    worktree = _worktree(tmp_path)
    monkeypatch.setattr("freemad.sandbox.container.os.getuid", lambda: uid)
    assert _run(ContainerConfig(enabled=True, runtime=runtime, image="alpine"), worktree).ok()
    options = _options(_calls(log)[1], "alpine")
    assert _values(options, "--userns") == userns
    assert _values(options, "--user") == [f"{uid}:{os.getgid()}"]


def test_the_defaults_limit_memory_processes_and_tmp_but_not_cpus(tmp_path, monkeypatch):
    log = _fake_runtime(tmp_path, monkeypatch, "docker")
    assert _run(ContainerConfig(enabled=True, image="alpine"), _worktree(tmp_path)).ok()
    options = _options(_calls(log)[1], "alpine")
    assert _values(options, "--memory") == _values(options, "--memory-swap") == ["2g"]
    assert _values(options, "--pids-limit") == ["512"]
    assert _values(options, "--tmpfs") == ["/tmp:rw,exec,nosuid,nodev,size=256m,mode=1777"]
    assert "--cpus" not in options
    no_limit = ContainerConfig(enabled=True, image="alpine", memory=None)
    assert _run(no_limit, _worktree(tmp_path, "second")).ok()
    assert not {"--memory", "--memory-swap"} & set(_calls(log)[-1])


def test_extra_mounts_are_read_only_real_paths_and_relative_ones_come_from_the_repo(
    tmp_path, monkeypatch
):
    log = _fake_runtime(tmp_path, monkeypatch, "docker")
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
    worktree = _worktree(tmp_path)
    assert _run(config, worktree).ok()
    assert _values(_options(_calls(log)[1], "alpine"), "--mount") == [
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
    log = _fake_runtime(tmp_path, monkeypatch, "podman")
    worktree = _worktree(tmp_path)
    (worktree / "pkg" / "sub").mkdir(parents=True)
    config = ContainerConfig(
        enabled=True, runtime="podman", image="alpine", workdir="/work/pkg/sub/"
    )
    box = code_sandbox("host", False, [], config)
    result = box.run(CWD, worktree, 60, View())
    assert result.stdout == f"{(worktree / 'pkg' / 'sub').resolve()}\n"
    assert _values(_calls(log)[1], "--workdir") == ["/work/pkg/sub"]
    shutil.rmtree(worktree / "pkg")  # a candidate may delete it: its stages are not run
    refused = box.run(CWD, worktree, 60, View())
    assert refused.exit_code is None
    assert refused.stderr == (
        "not run: judge.container.workdir /work/pkg/sub is not a folder of the worktree"
    )
    assert [call[0] for call in _calls(log)] == ["info", "run"]


@pytest.mark.parametrize("bad", [",", ":", '"'])
def test_a_worktree_whose_path_would_break_the_mount_option_is_refused(tmp_path, monkeypatch, bad):
    log = _fake_runtime(tmp_path, monkeypatch, "docker")
    worktree = _worktree(tmp_path, f"wt{bad}readonly=false")
    result = _run(ContainerConfig(enabled=True, image="alpine"), worktree, _marker(tmp_path))
    assert result.exit_code is None
    assert result.stderr.startswith("not run: the worktree cannot be mounted: ")
    assert f"has a {bad!r}, which would break the --mount option" in result.stderr
    assert [call[0] for call in _calls(log)] == ["info"]
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
    log = _fake_runtime(tmp_path, monkeypatch, "docker")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run-user"))
    worktree = _worktree(tmp_path)
    for spec, problem in _hostile_specs(tmp_path):
        box = code_sandbox("host", False, [], spec)
        assert box.problem() == problem
        result = box.run(_marker(tmp_path), worktree, 60, View())
        assert (result.exit_code, result.stderr) == (None, f"not run: {problem}")
        assert box.describe()[-1] == f"unusable: {problem}"
    assert _calls(log) == []  # refused before the runtime is even asked
    assert not (tmp_path / "ran").exists()
    fine = Container(extra_mounts=(Mount(str(tmp_path / "home" / "project"), "/p"),))
    assert code_sandbox("host", False, [], fine).problem() is None


def test_describe_lists_the_hardening(tmp_path, monkeypatch):
    _fake_runtime(tmp_path, monkeypatch, "podman")
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


# --- The flags against the real CLIs -------------------------------------------------------


def _recorded_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, runtime: str, image: str
) -> list[str]:
    """The `run` arguments a fully configured container stage is started with (`true`)."""
    log = _fake_runtime(tmp_path, monkeypatch, runtime)
    data = tmp_path / "data"
    data.mkdir()
    config = ContainerConfig(
        enabled=True,
        runtime=runtime,
        image=image,
        cpus=1,
        extra_mounts=[{"source": str(data), "target": "/data"}],
    )
    assert _run(config, _worktree(tmp_path), ["true"]).ok()
    return _calls(log)[1]


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
    worktree = _worktree(tmp_path)
    script = (
        "cat /data/given.txt; echo; echo made > /work/made.txt;"
        " echo tmp > /tmp/t && echo tmp-writable;"
        " (echo x > /etc/owned) 2>/dev/null || echo root-read-only;"
        " (echo x > /data/owned) 2>/dev/null || echo mount-read-only;"
        " grep -E '^(CapEff|NoNewPrivs)' /proc/self/status"
    )
    result = _run(config, worktree, ["sh", "-c", script])
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


# --- Through an evolve run's wiring ----------------------------------------------------------


def test_evolve_validate_judges_the_seed_in_the_hardened_container(tmp_path, monkeypatch):
    """The runner hands the sandbox its mounts with relative sources taken from the repository;
    validate runs the seed's stages through the container and prints the hardening."""
    log = _fake_runtime(tmp_path, monkeypatch, "docker")
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
    runs = [call for call in _calls(log) if call[0] == "run"]
    assert len(runs) == 2  # one container per stage
    tests = (tmp_path / "repo" / "tests").resolve()
    for run in runs:
        options = _options(run, "python:3.12-slim")
        assert (
            _values(options, "--mount")[1] == f"type=bind,source={tests},target=/fixtures,readonly"
        )
        assert _values(options, "--cap-drop") == ["ALL"]
    assert (
        "read-only mounts: " + str(tmp_path / "repo" / "tests") + " at /fixtures"
        in report["isolation"]
    )
    assert any(line.startswith("hardening: no capabilities") for line in report["isolation"])


def test_evolve_validate_names_a_missing_mount_in_one_line(tmp_path, monkeypatch):
    log = _fake_runtime(tmp_path, monkeypatch, "docker")
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
    assert _calls(log) == []
