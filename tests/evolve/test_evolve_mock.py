"""freemad-evolve-mock, run as the real subprocess the runtime starts: scripted steps, debate
answers and faults."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from freemad.core.replies import Decision, parse_critique, parse_generation
from freemad.evolve.worker_protocol import (
    EvolveRequest,
    Incumbent,
    parse_directions,
    render_directions_requirement,
    render_plan_requirement,
    render_worker_prompt,
)
from freemad.tasks.task_protocol import ResponseError, TaskResponse, parse_response

MOCK = str(Path(sys.executable).parent / "freemad-evolve-mock")


def worker_prompt(cwd: Path, iteration: int, candidate: int = 0) -> str:
    request = EvolveRequest(
        run_id="run1",
        goal="make slow_sum fast",
        agent_id="worker",
        iteration=iteration,
        generation=iteration,
        candidate=candidate,
        workspace_root=str(cwd),
        allowed_actions=["read_workspace", "write_workspace"],
        protected_paths=["tests"],
        objective="tests pass and runtime_ms drops",
        incumbent=Incumbent(version=0, commit="0" * 40, components={"runtime_ms": 40.0}),
    )
    return render_worker_prompt(request)


def run(
    cwd: Path, args: list[str], prompt: str, timeout: float = 30
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MOCK, *args],
        input=prompt,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def script(folder: Path, steps: Any, name: str = "scripted/steps.json") -> str:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(steps))
    return name


def task(cwd: Path, steps_name: str, iteration: int, *extra: str) -> TaskResponse:
    ran = run(cwd, ["--steps", steps_name, "task", *extra], worker_prompt(cwd, iteration))
    assert ran.returncode == 0, ran.stderr
    return parse_response(ran.stdout)


def test_a_step_writes_deletes_copies_and_links_in_the_working_folder(tmp_path):
    (tmp_path / "old.txt").write_text("old")
    (tmp_path / "old_dir").mkdir()
    (tmp_path / "old_dir" / "f").write_text("f")
    (tmp_path / "release" / "pkg").mkdir(parents=True)
    (tmp_path / "release" / "pkg" / "__init__.py").write_text("VERSION = 2\n")
    (tmp_path / "vendor" / "pkg").mkdir(parents=True)
    (tmp_path / "vendor" / "pkg" / "stale.py").write_text("")
    step = {
        "summary": "Made it fast.",
        "delete": ["old.txt", "old_dir"],
        "copy": {"vendor/pkg": "release/pkg"},
        "files": {"slow_sum.py": "def slow_sum(n):\n    return n\n", "deep/new/file.txt": "x"},
        "symlinks": {"link": "/etc/hostname"},
    }
    name = script(tmp_path, {"about": "one step", "steps": [step]})
    reply = task(tmp_path, name, 1)
    assert (reply.agent_id, reply.stage, reply.role) == ("worker", "variation", "implementer")
    assert reply.content == "Made it fast."
    assert reply.writes == []
    assert (tmp_path / "slow_sum.py").read_text() == "def slow_sum(n):\n    return n\n"
    assert (tmp_path / "deep/new/file.txt").read_text() == "x"
    assert not (tmp_path / "old.txt").exists()
    assert not (tmp_path / "old_dir").exists()
    assert sorted(p.name for p in (tmp_path / "vendor" / "pkg").iterdir()) == ["__init__.py"]
    assert os.readlink(tmp_path / "link") == "/etc/hostname"


def test_a_step_of_candidates_gives_each_candidate_of_a_generation_its_own(tmp_path):
    step = {"candidates": [{"files": {"a.txt": "zero"}}, {"files": {"a.txt": "one"}}]}
    name = script(tmp_path, [step])
    for candidate, content in ((1, "one"), (0, "zero")):
        ran = run(tmp_path, ["--steps", name, "task"], worker_prompt(tmp_path, 1, candidate))
        assert ran.returncode == 0, ran.stderr
        assert (tmp_path / "a.txt").read_text() == content
    ran = run(tmp_path, ["--steps", name, "task"], worker_prompt(tmp_path, 1, 2))
    assert "No scripted step for candidate 2" in parse_response(ran.stdout).content
    bad = script(tmp_path, [{"candidates": [{"files": []}]}], "bad.json")
    ran = run(tmp_path, ["--steps", bad, "task"], worker_prompt(tmp_path, 1, 0))
    assert ran.returncode == 2
    assert "step 1 candidate 0: files must be an object" in ran.stderr


def test_the_iteration_picks_the_step_and_the_script_can_cycle(tmp_path):
    steps = [{"files": {"n.txt": "1"}}, {"summary": "two", "files": {"n.txt": "2"}}]
    name = script(tmp_path, steps)
    assert task(tmp_path, name, 2).content == "two"
    assert (tmp_path / "n.txt").read_text() == "2"
    assert task(tmp_path, name, 1).content == "Scripted step 1."
    assert (tmp_path / "n.txt").read_text() == "1"
    past = task(tmp_path, name, 3)
    assert "No scripted step for iteration 3; nothing changed." in past.content
    assert (tmp_path / "n.txt").read_text() == "1"
    assert task(tmp_path, name, 4, "--cycle").content == "two"
    assert (tmp_path / "n.txt").read_text() == "2"


def test_the_steps_file_resolves_against_the_working_folder(tmp_path):
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    script(worktree, [{"summary": "from the worktree's own script"}], "scripted/w.json")
    assert task(worktree, "scripted/w.json", 1).content == "from the worktree's own script"
    ran = run(tmp_path, ["--steps", "scripted/w.json", "task"], worker_prompt(tmp_path, 1))
    assert ran.returncode == 2
    assert "cannot read scripted/w.json" in ran.stderr


def test_as_writes_returns_the_files_verbatim_instead_of_writing_them(tmp_path):
    files = {"slow_sum.py": "fast", "../escape.py": "out", "/abs.py": "abs"}
    name = script(tmp_path, [{"files": files, "as_writes": True, "delete": ["gone.txt"]}])
    (tmp_path / "gone.txt").write_text("")
    reply = task(tmp_path, name, 1)
    assert reply.writes == [{"path": p, "content": c} for p, c in files.items()]
    assert not (tmp_path / "slow_sum.py").exists()
    assert not (tmp_path / "gone.txt").exists()  # delete still happens directly


def test_nothing_is_written_or_deleted_outside_the_working_folder(tmp_path):
    worktree, outside = tmp_path / "worktree", tmp_path / "outside"
    worktree.mkdir()
    outside.mkdir()
    (outside / "victim.txt").write_text("keep me")
    (worktree / "door").symlink_to(outside)
    (worktree / "file_link").symlink_to(outside / "victim.txt")
    step = {
        "files": {
            "../outside/new.txt": "x",
            str(outside / "abs.txt"): "x",
            "a/../../outside/sneaky.txt": "x",
            "door/through_link.txt": "x",
            "file_link": "replaced",
        },
        "delete": ["../outside/victim.txt", "door/victim.txt"],
        "symlinks": {"../outside/link": "/etc/hostname"},
    }
    name = script(worktree, [step])
    reply = task(worktree, name, 1)
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]
    assert (outside / "victim.txt").read_text() == "keep me"
    # A file where a symlink was replaces the link; it never writes through it.
    assert not (worktree / "file_link").is_symlink()
    assert (worktree / "file_link").read_text() == "replaced"
    assert reply.content.count("leads outside the worktree") == 7


def test_without_a_mode_word_the_marker_means_task_mode(tmp_path):
    name = script(tmp_path, [{"summary": "detected", "files": {"a": "b"}}])
    ran = run(tmp_path, ["--steps", name], worker_prompt(tmp_path, 1))
    assert parse_response(ran.stdout).content == "detected"
    assert (tmp_path / "a").read_text() == "b"


@pytest.mark.parametrize(
    ("steps", "args", "prompt", "message"),
    [
        ([], ["task"], "no request here", "no 'Task request JSON:' line"),
        ([], ["task"], None, "task mode needs --steps FILE"),
        ("not json", ["task"], None, "is not JSON"),
        ({"steps": 3}, ["task"], None, "must hold a list of steps"),
        ([{"file": {}}], ["task"], None, "step 1 has unknown key(s) file"),
        ([{"fault": "explode"}], ["task"], None, "unknown fault 'explode'"),
        ([{"delete": "x"}], ["task"], None, "delete must be a list"),
    ],
)
def test_a_broken_script_or_request_exits_2_with_one_line(tmp_path, steps, args, prompt, message):
    path = tmp_path / "s.json"
    path.write_text(steps if isinstance(steps, str) else json.dumps(steps))
    words = args if "needs --steps" in message else ["--steps", "s.json", *args]
    ran = run(tmp_path, words, worker_prompt(tmp_path, 1) if prompt is None else prompt)
    assert ran.returncode == 2
    assert message in ran.stderr
    assert ran.stdout == ""


def directions_prompt() -> str:
    return render_directions_requirement(
        "make slow_sum fast", "no candidate was admitted", 1, {"runtime_ms": 0.3}, "rule", [], []
    )


def test_generate_answers_a_directions_debate_with_schema_valid_json(tmp_path):
    args = ["generate", "--directions", "Try a closed form.", "--directions", "Keep tests green."]
    ran = run(tmp_path, args, directions_prompt())
    solution = parse_generation(ran.stdout).solution
    assert parse_directions(solution) == ["Try a closed form.", "Keep tests green."]
    canned = parse_generation(run(tmp_path, ["generate"], directions_prompt()).stdout)
    assert len(parse_directions(canned.solution)) == 2


def test_generate_answers_a_plan_debate_with_the_plan(tmp_path):
    prompt = render_plan_requirement("make slow_sum fast", 1, {"runtime_ms": 0.3}, "rule", [], [])
    ran = run(tmp_path, ["generate", "--plan", "Use sum(range(n))."], prompt)
    assert parse_generation(ran.stdout).solution == "Use sum(range(n))."
    canned = parse_generation(run(tmp_path, [], prompt).stdout).solution
    assert canned.startswith("1. ")


def test_critique_keeps_its_answer(tmp_path):
    prompt = "<requirement>x</requirement>\nReply with DECISION: KEEP or DECISION: REVISE"
    for args in (["critique"], []):
        critique = parse_critique(run(tmp_path, args, prompt).stdout)
        assert critique.decision is Decision.KEEP
        assert critique.reasoning


def test_crash_and_garbage_faults(tmp_path):
    prompt = worker_prompt(tmp_path, 1)
    crash = run(tmp_path, ["task", "--fault", "crash"], prompt)
    assert crash.returncode == 3
    assert "simulated crash" in crash.stderr
    garbage = run(tmp_path, ["task", "--fault", "garbage"], prompt)
    assert garbage.returncode == 0
    with pytest.raises(ResponseError):
        parse_response(garbage.stdout)
    debate = run(tmp_path, ["generate", "--fault", "garbage"], directions_prompt())
    assert "SOLUTION:" not in debate.stdout


def test_a_step_can_carry_its_own_fault(tmp_path):
    name = script(tmp_path, [{"files": {"a": "1"}}, {"fault": "crash", "files": {"a": "2"}}])
    assert task(tmp_path, name, 1).content == "Scripted step 1."
    ran = run(tmp_path, ["--steps", name, "task"], worker_prompt(tmp_path, 2))
    assert ran.returncode == 3
    assert (tmp_path / "a").read_text() == "1"


def test_hang_never_answers(tmp_path):
    with pytest.raises(subprocess.TimeoutExpired):
        run(tmp_path, ["task", "--fault", "hang"], worker_prompt(tmp_path, 1), timeout=1.5)


def test_delay_thinks_first(tmp_path):
    started = time.monotonic()
    ran = run(tmp_path, ["critique", "--delay", "0.4"], "DECISION:")
    assert ran.returncode == 0
    assert time.monotonic() - started >= 0.4
