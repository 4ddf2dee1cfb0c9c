"""The host and container sandboxes, with real processes: network namespace, environment, timeouts, containers."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from freemad.config.evolve_section import ContainerConfig
from freemad.sandbox import View, code_sandbox, reaper
from freemad.sandbox import host as sandbox_module
from freemad.sandbox.container import ContainerSandbox
from freemad.sandbox.host import HostSandbox, network_isolation
from freemad.sandbox.process import ENV_ALLOWLIST
from tests.processes import gone, settles

no_namespace = pytest.mark.skipif(
    not network_isolation(), reason="this system cannot give a process its own network namespace"
)
needs_proc = pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")


@dataclass(frozen=True)
class Mount:
    source: str
    target: str


@dataclass
class Container:
    enabled: bool = True
    runtime: str = "docker"
    image: str | None = "python:3.12-slim"
    memory: str | None = "2g"
    cpus: float | None = None
    pids_limit: int = 512
    tmpfs_size: str = "256m"
    extra_mounts: tuple[Mount, ...] = ()
    workdir: str = "/work"


@pytest.fixture
def listener():
    """A TCP server on loopback that accepts connections until the test ends."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except (TimeoutError, OSError):
                continue
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    server.close()


def _connect(port: int) -> list[str]:
    code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5).close()"
    return [sys.executable, "-c", code]


@no_namespace
def test_a_network_off_stage_cannot_reach_even_loopback(tmp_path, listener):
    argv = _connect(listener)
    isolated = code_sandbox("host", False, [], None).run(argv, tmp_path, 60, View())
    open_net = code_sandbox("host", True, [], None).run(argv, tmp_path, 60, View())
    assert open_net.exit_code == 0, open_net.stderr
    assert isolated.exit_code not in (0, None)
    assert "Error" in isolated.stderr
    assert isolated.argv == argv  # the unshare prefix is not reported as the command


@no_namespace
def test_describe_says_each_stage_gets_a_network_namespace():
    lines = code_sandbox("host", False, ["FREEMAD_TEST_SETTING"], None).describe()
    assert lines[0].startswith("sandbox: none (security.sandbox: host)")
    assert "network namespace of its own (unshare -n)" in lines[1]
    assert (
        lines[2] == f"environment: {', '.join(ENV_ALLOWLIST)} plus passthrough FREEMAD_TEST_SETTING"
    )
    assert code_sandbox("host", True, [], None).problem() is None


def test_without_a_namespace_describe_warns_and_stages_still_run(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox_module, "network_isolation", list)
    box = code_sandbox("host", False, [], None)
    assert "stages CAN reach the network" in box.describe()[1]
    assert box.describe()[2].endswith("TMPDIR only")
    assert box.run([sys.executable, "-c", "print('ran')"], tmp_path, 60, View()).stdout == "ran\n"


@pytest.mark.parametrize("network", [False, True])
def test_a_stage_sees_only_the_allowlist_and_passthrough(tmp_path, monkeypatch, network):
    monkeypatch.setenv("FREEMAD_TEST_TOKEN", "do-not-leak")
    monkeypatch.setenv("FREEMAD_TEST_SETTING", "kept")
    monkeypatch.setenv("FREEMAD_TEST_OTHER", "not-listed")
    code = "import json, os; print(json.dumps(dict(os.environ)))"
    box = code_sandbox("host", network, ["FREEMAD_TEST_SETTING", "FREEMAD_TEST_ABSENT"], None)
    result = box.run([sys.executable, "-c", code], tmp_path, 60, View())
    seen = json.loads(result.stdout)
    # Python may coerce LC_CTYPE; the reaper's mark says which FREE-MAD process started it.
    allowed = {*ENV_ALLOWLIST, "FREEMAD_TEST_SETTING", "LC_CTYPE", reaper.NAME}
    assert set(seen) <= allowed
    assert seen["FREEMAD_TEST_SETTING"] == "kept"
    assert "do-not-leak" not in result.stdout
    assert "FREEMAD_TEST_ABSENT" not in seen


def test_a_secret_looking_passthrough_is_refused_when_the_sandbox_is_made():
    with pytest.raises(ValueError, match="FREEMAD_TEST_TOKEN looks like a secret"):
        code_sandbox("host", False, ["FREEMAD_TEST_TOKEN"], None)
    with pytest.raises(ValueError, match="looks like a secret"):
        code_sandbox("host", True, ["GITHUB_TOKEN"], Container())


@needs_proc
@pytest.mark.parametrize("network", [False, True])
def test_a_timed_out_stage_takes_its_background_children_with_it(tmp_path, network):
    # Through unshare too: it execs the stage, so the stage's group is still the one killed.
    argv = ["sh", "-c", "sleep 60 & echo $!; sleep 60"]
    result = code_sandbox("host", network, [], None).run(argv, tmp_path, 1.0, View())
    assert result.timed_out
    assert result.argv == argv
    assert gone(int(result.stdout.split()[0]), 5.0)


def test_a_disabled_container_means_the_host_sandbox():
    assert isinstance(code_sandbox("host", False, [], Container(enabled=False)), HostSandbox)
    config = ContainerConfig(enabled=True, runtime="podman", image="alpine")
    assert isinstance(code_sandbox("host", False, [], config), ContainerSandbox)


def _marker_command(folder: Path) -> list[str]:
    return [sys.executable, "-c", f"open({str(folder / 'ran-on-host')!r}, 'w').close()"]


def test_a_missing_runtime_fails_closed_without_running_on_the_host(tmp_path, monkeypatch):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    box = code_sandbox("host", False, [], Container(runtime="podman"))
    problem = box.problem()
    assert problem is not None
    assert problem.startswith("container runtime podman not found on PATH")
    result = box.run(_marker_command(tmp_path), tmp_path, 60, View())
    assert result.exit_code is None
    assert not result.ok()
    assert problem in result.stderr
    assert not (tmp_path / "ran-on-host").exists()
    assert box.describe()[-1] == f"unusable: {problem}"


FAKE_DOCKER = """#!{python}
import json, os, sys, time
with open({log!r}, "a") as log:
    log.write(json.dumps({{"argv": sys.argv[1:], "env": dict(os.environ)}}) + "\\n")
if sys.argv[1] == "info":
    if {info_fails!r}:
        sys.stderr.write("\\nCannot connect to the Docker daemon at unix:///nowhere\\n")
        sys.exit(1)
elif sys.argv[1] == "run":
    print("in the container")
    if "sleep" in sys.argv:
        time.sleep(60)
"""


def _fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, info_fails: bool = False) -> Path:
    """A `docker` first on PATH that records each call (argv and environment) to a log."""
    bin_dir, log = tmp_path / "fakebin", tmp_path / "docker.log"
    bin_dir.mkdir()
    script = bin_dir / "docker"
    script.write_text(
        FAKE_DOCKER.format(python=sys.executable, log=str(log), info_fails=info_fails)
    )
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    return log


def _calls(log: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_a_container_stage_mounts_only_the_worktree_and_has_no_network(tmp_path, monkeypatch):
    log = _fake_docker(tmp_path, monkeypatch)
    monkeypatch.setenv("FREEMAD_TEST_SETTING", "kept")
    monkeypatch.setenv("FREEMAD_TEST_KEY_TOKEN", "do-not-leak")
    monkeypatch.setenv("DOCKER_HOST", "unix:///fake/docker.sock")
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    box = code_sandbox("host", False, ["FREEMAD_TEST_SETTING", "FREEMAD_TEST_ABSENT"], Container())
    assert box.problem() is None
    result = box.run(["python", "-m", "pytest", "-q", "tests"], worktree, 60, View())
    assert result.ok(), result.stderr
    assert result.stdout == "in the container\n"
    assert result.argv == ["python", "-m", "pytest", "-q", "tests"]
    info, run = _calls(log)
    assert info["argv"] == ["info"]
    argv = run["argv"]
    assert isinstance(argv, list)
    assert argv[:3] == ["run", "--rm", "--name"]
    assert argv[3].startswith("freemad-judge-")
    assert argv[argv.index("--network") + 1] == "none"
    assert argv[argv.index("--user") + 1] == f"{os.getuid()}:{os.getgid()}"
    assert argv.count("--mount") == 1
    assert argv[argv.index("--mount") + 1] == f"type=bind,source={worktree.resolve()},target=/work"
    assert argv[argv.index("--workdir") + 1] == "/work"
    assert argv[argv.index("-e") + 1] == "FREEMAD_TEST_SETTING"  # a name only, no value
    assert argv.count("-e") == 1
    image_at = argv.index("python:3.12-slim")
    assert argv[image_at + 1 :] == ["python", "-m", "pytest", "-q", "tests"]
    env = run["env"]
    assert isinstance(env, dict)
    assert env["FREEMAD_TEST_SETTING"] == "kept"  # the CLI holds the value `-e NAME` forwards
    assert env["DOCKER_HOST"] == "unix:///fake/docker.sock"
    assert "do-not-leak" not in json.dumps(env)


def test_a_container_stage_with_network_on_keeps_the_default_network(tmp_path, monkeypatch):
    log = _fake_docker(tmp_path, monkeypatch)
    box = code_sandbox("host", True, [], Container())
    assert box.run(["true"], tmp_path, 60, View()).ok()
    assert box.run(["true"], tmp_path, 60, View()).ok()
    calls = _calls(log)
    assert [call["argv"][0] for call in calls] == ["info", "run", "run"]  # probed once
    assert all("--network" not in call["argv"] for call in calls)
    assert "network: on" in box.describe()[1]


def test_a_timed_out_container_is_killed_by_name(tmp_path, monkeypatch):
    log = _fake_docker(tmp_path, monkeypatch)
    result = code_sandbox("host", False, [], Container()).run(
        ["sleep", "60"], tmp_path, 1.0, View()
    )
    assert result.timed_out
    _info, run, kill = _calls(log)
    assert kill["argv"] == ["kill", run["argv"][3]]


def test_an_interrupted_container_stage_is_killed_by_name(tmp_path, monkeypatch):
    # Ctrl-C (or any error above the sandbox) while a stage runs: the CLI's process group is
    # killed on the way out, which leaves the container running; it is stopped by name too.
    log = _fake_docker(tmp_path, monkeypatch)

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    saved = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        with pytest.raises(KeyboardInterrupt):
            code_sandbox("host", False, [], Container()).run(["sleep", "60"], tmp_path, 60, View())
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, saved)
    _info, run, kill = _calls(log)
    assert kill["argv"] == ["kill", run["argv"][3]]
    assert run["argv"][3].startswith("freemad-judge-")


# FREE-MAD running one container stage, to be killed outright while the stage runs.
STAGE_RUNNER = """
import sys
from pathlib import Path
from freemad.sandbox import View, code_sandbox
from tests.sandbox.test_host_and_container import Container
code_sandbox("host", False, [], Container()).run(["sleep", "60"], Path(sys.argv[1]), 120, View())
"""


def test_freemad_killed_outright_leaves_no_container_running(tmp_path, monkeypatch):
    # kill -9 runs no `finally`: the reaper kills the CLI, and the stage's sentinel, which
    # neither the reaper nor the signal reaches, stops the container the daemon still runs.
    log = _fake_docker(tmp_path, monkeypatch)
    root = Path(__file__).resolve().parents[2]
    runner = subprocess.Popen([sys.executable, "-c", STAGE_RUNNER, str(tmp_path)], cwd=root)
    try:
        assert settles(lambda: [c["argv"][0] for c in _calls(log)] == ["info", "run"], 30)
        runner.kill()
        runner.wait()
        assert settles(lambda: len(_calls(log)) == 3, 30)
    finally:
        runner.kill()
        runner.wait()
    _info, run, kill = _calls(log)
    assert kill["argv"] == ["kill", run["argv"][3]]
    assert kill["env"].get("PATH") == os.environ["PATH"]  # the CLI's own environment


def test_a_stage_that_ends_leaves_its_sentinel_nothing_to_stop(tmp_path, monkeypatch):
    log = _fake_docker(tmp_path, monkeypatch)
    box = code_sandbox("host", False, [], Container())
    assert box.run(["true"], tmp_path, 60, View()).ok()
    assert [call["argv"][0] for call in _calls(log)] == ["info", "run"]  # no kill


@pytest.mark.parametrize("sentinel", ["missing", "killed"])
def test_a_timed_out_stage_without_its_sentinel_is_still_killed(tmp_path, monkeypatch, sentinel):
    # A sentinel that cannot start, or that something killed (a hostile process of this user):
    # FREE-MAD, still alive, kills the container itself.
    from freemad.sandbox import container

    log = _fake_docker(tmp_path, monkeypatch)
    if sentinel == "missing":
        monkeypatch.setattr(container, "_SENTINEL", tmp_path / "no-such-sentinel.py")
    else:
        started = container._Sentinel.__init__

        def start_then_kill(self, *args):
            started(self, *args)
            self._process.kill()

        monkeypatch.setattr(container._Sentinel, "__init__", start_then_kill)
    result = code_sandbox("host", False, [], Container()).run(
        ["sleep", "60"], tmp_path, 1.0, View()
    )
    assert result.timed_out
    _info, run, kill = _calls(log)
    assert kill["argv"] == ["kill", run["argv"][3]]


def test_the_sentinel_refuses_what_is_not_a_stage_container():
    from freemad.sandbox import container_sentinel

    for argv in (
        ["s", "rm", "freemad-judge-0123456789ab"],
        ["s", "/usr/bin/rm", "freemad-judge-0123456789ab"],
        ["s", "docker", "freemad-judge-0123456789ab; rm -rf ~"],
        ["s", "docker", "other-container"],
        ["s", "docker"],
    ):
        assert container_sentinel.main(argv) == 2


def test_an_unreachable_runtime_fails_closed(tmp_path, monkeypatch):
    log = _fake_docker(tmp_path, monkeypatch, info_fails=True)
    box = code_sandbox("host", False, [], Container())
    assert box.problem() == (
        "docker is installed but not reachable"
        " (docker info failed: Cannot connect to the Docker daemon at unix:///nowhere)"
    )
    result = box.run(_marker_command(tmp_path), tmp_path, 60, View())
    assert result.exit_code is None
    assert "not reachable" in result.stderr
    assert not (tmp_path / "ran-on-host").exists()
    assert [call["argv"] for call in _calls(log)] == [["info"]]


def test_a_container_without_an_image_fails_closed(tmp_path):
    box = code_sandbox("host", False, [], Container(image=None))
    assert box.problem() == "docker container has no image; set judge.container.image"
    assert box.run(_marker_command(tmp_path), tmp_path, 60, View()).exit_code is None
    assert not (tmp_path / "ran-on-host").exists()
