"""The issue's "done when": from the built wheel, in an empty folder, with no clone and no
--config, a new user runs `freemad init`, a debate, a plan task to completion with an answer,
the evolve toy, `site build` and `freemad-dashboard`, as the README's quick start says."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from tests.conftest import SANDBOX, free_port

ROOT = Path(__file__).resolve().parents[2]


def sh(*args: str, cwd: Path, env: dict[str, str], timeout: float = 300) -> str:
    done = subprocess.run(
        list(args), cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{args}: {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment holding only the wheel; its dependencies are read from this
    one's site-packages through a .pth file, so nothing is downloaded."""
    base = tmp_path_factory.mktemp("wheel")
    dist = base / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(dist),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = dist.glob("freemad-*.whl")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "-q",
            "--no-index",
            str(wheel),
        ],
        check=True,
        capture_output=True,
    )
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # A plain path line: the editable install of this checkout (a .pth in there) stays unread.
    (Path(purelib) / "outer_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return venv


def user_env(venv: Path, home: Path) -> dict[str, str]:
    keep = ("LANG", "LC_ALL", "TMPDIR", "TERM")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    env.update(
        HOME=str(home),
        PATH=f"{venv / 'bin'}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
        GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
        GIT_CONFIG_NOSYSTEM="1",
    )
    return env


def test_the_wheel_holds_what_a_pip_user_needs(wheel_venv: Path) -> None:
    python = str(wheel_venv / "bin" / "python")
    where = subprocess.run(
        [
            python,
            "-c",
            "import freemad, freemad.bundled as b; print(freemad.__file__);"
            "print(b.bundled('configs')); print(b.bundled('examples')); print(b.bundled('action'))",
        ],
        cwd=wheel_venv,  # not this checkout, which `python -c` would import from
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert all(str(wheel_venv) in line for line in where), where  # not this checkout's
    assert (Path(where[2]) / "evolve_toy" / "evolve.yaml").is_file()
    assert (Path(where[1]) / "autonomous_smoke.yaml").is_file()
    assert (Path(where[3]) / "comments.yml").is_file()


def test_a_new_user_from_the_wheel_in_an_empty_folder(wheel_venv: Path, tmp_path: Path) -> None:
    home, work = tmp_path / "home", tmp_path / "home" / "work"
    work.mkdir(parents=True)
    env = user_env(wheel_venv, home)
    found = [n for n in ("claude", "codex", "gemini") if shutil.which(n, path=env["PATH"])]

    def freemad(*args: str, cwd: Path = work) -> str:
        return sh(str(wheel_venv / "bin" / "freemad"), *args, cwd=cwd, env=env)

    # 1. A starter config for this folder.
    said = freemad("init", *(["--mock"] if found else []))
    assert "wrote freemad.yaml: the mock agents" in said
    # 2. A debate.
    assert freemad("Write a function that returns Fibonacci(n).").startswith("Winner ")
    # 3. A plan task, to completion with an answer.
    task = json.loads(freemad("task", "start", "Plan a key-value store.", "--json"))
    assert task["status"] == "waiting_for_human" and task["question"]
    freemad("task", "answer", task["task_id"], "Use SQLite.")  # the task goes on with it
    done = json.loads(freemad("task", "status", task["task_id"], "--json"))
    assert done["status"] == "completed"
    # 4. The evolve toy, in a repository of its own.
    freemad("example", "evolve-toy", "toy")
    toy = work / "toy"
    if SANDBOX == "host":  # no bubblewrap here: the user's config would have to say so too
        config = yaml.safe_load((toy / "freemad.yaml").read_text())
        config["security"]["sandbox"] = "host"
        (toy / "freemad.yaml").write_text(yaml.safe_dump(config))
        sh(
            "git",
            "-c",
            "user.name=u",
            "-c",
            "user.email=u@u",
            "commit",
            "-qam",
            "host",
            cwd=toy,
            env=env,
        )
    freemad("evolve", "validate", cwd=toy)
    run = json.loads(
        freemad("evolve", "start", "make slow_sum as fast as possible", "--json", cwd=toy)
    )
    assert (run["status"], run["stop_reason"]) == ("stopped", "target")
    # 5. The static site, with every run the commands above made.
    built = freemad("site", "build", "--evolve-store", "toy/.freemad/evolve/evolve.db")
    assert "3 run(s)" in built, built
    index = (work / "_site" / "index.html").read_text()
    for run_id in (task["task_id"], run["run_id"]):
        assert run_id in index
    # 6. The live dashboard serves its index.
    port = free_port()
    with subprocess.Popen(
        [str(wheel_venv / "bin" / "freemad-dashboard"), "--port", str(port), "--workers", "1"],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as server:
        try:
            page = ""
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and server.poll() is None:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as got:
                        assert got.status == 200
                        page = got.read().decode()
                        break
                except OSError:
                    time.sleep(0.2)
            assert task["task_id"] in page, page or server.stderr.read1().decode()
        finally:
            server.terminate()
            server.wait(timeout=30)
    assert not (ROOT / "transcripts").exists()
