"""One rule for where state lives (next to the config), read-only commands that create nothing,
`site build` that finds the runs, and every command FREE-MAD prints for copying, run as printed."""

from __future__ import annotations

import html
import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import yaml

from tests.cli.helpers import FREEMAD, files_under, freemad, user_env
from tests.conftest import SANDBOX

ROOT = Path(__file__).resolve().parents[2]
GOAL = "Plan a key-value store with a small HTTP API."


def start_task(cwd: Path, home: Path, *config: str) -> str:
    done = freemad("task", "start", *config, GOAL, "--json", cwd=cwd, home=home)
    started = json.loads(done.stdout)
    assert started["status"] == "waiting_for_human"
    return str(started["task_id"])


def one_line_error(done: subprocess.CompletedProcess[str], *parts: str) -> None:
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("freemad: error: "), done.stderr
    for part in parts:
        assert part in lines[0], lines[0]


def test_state_lives_next_to_the_config_and_every_command_sees_it(tmp_path: Path) -> None:
    project, sub = tmp_path / "project", tmp_path / "project" / "src" / "deep"
    sub.mkdir(parents=True)
    freemad("init", "--mock", cwd=project, home=tmp_path)
    task_id = start_task(sub, tmp_path)
    freemad("Write a function that returns Fibonacci(n).", cwd=sub, home=tmp_path)
    assert files_under(sub) == set()  # nothing in the folder the commands ran in
    assert (project / ".freemad" / "tasks" / "tasks.db").is_file()
    assert len(list((project / "transcripts").glob("*.json"))) == 1
    # Another folder of the same project sees the task; the project's root builds the site.
    status = freemad("task", "status", task_id, "--json", cwd=project / "src", home=tmp_path)
    assert json.loads(status.stdout)["status"] == "waiting_for_human"
    built = freemad("site", "build", cwd=sub, home=tmp_path)
    assert "2 run(s)" in built.stdout
    assert (sub / "_site" / "index.html").is_file()


def test_read_only_commands_never_create_a_store(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for args in (["task", "status", "abc"], ["task", "list"], ["task", "answer", "abc", "x"]):
        done = freemad(*args, cwd=elsewhere, home=tmp_path, code=2)
        one_line_error(done, "no runs yet in .freemad/tasks/tasks.db")
    toy = tmp_path / "toy"
    freemad("example", "evolve-toy", str(toy), cwd=tmp_path, home=tmp_path)
    for args in (["status", "abc"], ["report", "abc"], ["list"], ["validate"]):
        done = freemad("evolve", *args, cwd=toy, home=tmp_path, code=None)
        if args != ["validate"]:
            one_line_error(done, f"no runs yet in {toy}/.freemad/evolve/evolve.db")
    assert files_under(elsewhere) == set()
    assert not (toy / ".freemad").exists()


def test_site_build_sources_that_are_named_must_exist(tmp_path: Path) -> None:
    one_line_error(
        freemad(
            "site", "build", "--transcripts", "/nonexistent", cwd=tmp_path, home=tmp_path, code=None
        ),
        "--transcripts /nonexistent: no such file or folder",
    )
    one_line_error(freemad("site", "build", cwd=tmp_path, home=tmp_path, code=None), "no runs yet")
    freemad("Write a function that returns Fibonacci(n).", cwd=tmp_path, home=tmp_path)
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where the site's folder would go")
    done = freemad(
        "site", "build", "--out", str(blocker / "site"), cwd=tmp_path, home=tmp_path, code=None
    )
    one_line_error(done, "cannot create")
    assert not (tmp_path / ".freemad").exists()  # reading the stores made none


def test_the_task_pages_answer_command_works_as_printed_from_another_folder(
    tmp_path: Path,
) -> None:
    """A config named with --config that looking would not find: the page repeats it."""
    configs, a, b = tmp_path / "configs", tmp_path / "a", tmp_path / "b"
    for folder in (configs, a, b):
        folder.mkdir()
    shutil.copy(ROOT / "configs" / "autonomous_smoke.yaml", configs / "smoke.yaml")
    task_id = start_task(a, tmp_path, "--config", "../configs/smoke.yaml")
    store = configs / ".freemad" / "ui-smoke" / "tasks.db"
    assert store.is_file() and files_under(a) == set()
    freemad("site", "build", "--task-store", str(store), "--out", "site", cwd=b, home=tmp_path)
    page = (b / "site" / "runs" / f"{task_id}.html").read_text()
    commands = [html.unescape(c) for c in re.findall(r"<code>(freemad task [^<]*)</code>", page)]
    assert commands and commands[0].split()[2] == "answer", commands
    for command in commands:
        words = shlex.split(command.replace("…", "Use SQLite."))
        assert words[-2:] == ["--config", str(configs / "smoke.yaml")]
        done = subprocess.run(
            [str(FREEMAD), *words[1:], "--json"],
            cwd=b,
            env=user_env(tmp_path),
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    status = freemad(
        "task",
        "status",
        task_id,
        "--json",
        "-c",
        "../configs/smoke.yaml",
        cwd=a,
        home=tmp_path,
        code=None,
    )
    if json.loads(status.stdout)["status"] != "completed":  # an answer that only records it
        freemad("task", "resume", task_id, "-c", "../configs/smoke.yaml", cwd=a, home=tmp_path)
        status = freemad(
            "task", "status", task_id, "--json", "-c", "../configs/smoke.yaml", cwd=a, home=tmp_path
        )
    assert json.loads(status.stdout)["status"] == "completed"


def stalling_toy(tmp_path: Path, name: str) -> Path:
    """The toy whose worker never changes anything, so the run stalls and asks a person."""
    toy = tmp_path / "toy"
    freemad("example", "evolve-toy", str(toy), cwd=tmp_path, home=tmp_path)
    config = yaml.safe_load((toy / "freemad.yaml").read_text())
    (toy / "scripted" / "nothing.json").write_text("[]\n")
    config["agents"][0]["cli_command"] = "freemad-evolve-mock --steps scripted/nothing.json"
    config["evolve"]["stop"].pop("target")
    config["security"]["sandbox"] = SANDBOX
    (toy / "freemad.yaml").unlink()
    (toy / name).write_text(yaml.safe_dump(config))
    git = ["git", "-c", "user.name=u", "-c", "user.email=u@u"]
    env = user_env(tmp_path)
    subprocess.run([*git, "add", "-A"], cwd=toy, env=env, check=True)
    subprocess.run([*git, "commit", "-qm", "stall"], cwd=toy, env=env, check=True)
    return toy


def test_an_evolve_runs_question_works_as_printed_from_another_folder(tmp_path: Path) -> None:
    toy = stalling_toy(tmp_path, "evolve.yaml")  # a name looking does not find
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    config = str(toy / "evolve.yaml")
    run = json.loads(
        freemad(
            "evolve", "start", "--config", config, "go", "--json", cwd=elsewhere, home=tmp_path
        ).stdout
    )
    assert run["status"] == "waiting_for_human", run
    resumed = freemad(
        "evolve", "resume", run["run_id"], "--config", config, cwd=tmp_path, home=tmp_path, code=2
    )
    hint = re.search(r"waits for your answer: (freemad evolve answer .*?) \(or", resumed.stderr)
    assert hint and hint.group(1).endswith(f"--config {config}"), resumed.stderr
    printed = re.search(r"Answer with: (freemad evolve answer .*?), or end", run["question"])
    assert printed, run["question"]
    words = shlex.split(printed.group(1).replace('"DIRECTION"', '"try a closed form"'))
    assert words[-2:] == ["--config", config]
    done = subprocess.run(
        [str(FREEMAD), *words[1:]],
        cwd=tmp_path,
        env=user_env(tmp_path),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_the_readmes_evolve_answer_line_works_as_printed(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    line = re.search(r'`(freemad evolve answer <run_id> "[^"`]*")`', readme)
    assert line, "the README shows how to answer an evolve run"
    toy = stalling_toy(tmp_path, "freemad.yaml")  # as `freemad example` made it: found
    run = json.loads(freemad("evolve", "start", "go", "--json", cwd=toy, home=tmp_path).stdout)
    assert run["status"] == "waiting_for_human"
    assert "--config" not in run["question"]
    words = shlex.split(line.group(1).replace("<run_id>", run["run_id"]))
    freemad(*words[1:], cwd=toy / "tests", home=tmp_path)  # from a folder of the toy
