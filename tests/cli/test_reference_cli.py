"""The reference implementation's users bring their habits: its mock config runs a debate as its
README shows, and its transcript flags (--save-transcript, --format, --transcript-dir) work."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.conftest import MOCK_AGENT, reference_file

FREEMAD = str(Path(sys.executable).parent / "freemad")
ROOT = Path(__file__).resolve().parents[2]
REQUIREMENT = "Write a function that returns Fibonacci(n)."


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # `python` first on PATH is this virtual environment's, as for a user who activated it.
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = {**os.environ, "PATH": path}
    env.pop("FREEMAD_DEBUG", None)
    return subprocess.run(
        [FREEMAD, *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_reference_mock_config_runs_a_debate_from_a_checkout(tmp_path: Path) -> None:
    """As the reference README has it: `python bin/mock_agent.py` typed as claude_code and
    openai_codex, run from the checkout's root, where bin/mock_agent.py is."""
    config = reference_file("upstream-configs", "mock_agents.yaml")
    out = tmp_path / "transcripts"
    done = run(
        REQUIREMENT,
        "--rounds",
        "1",
        "--config",
        str(config),
        "--transcript-dir",
        str(out),
        "--format",
        "markdown",
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Winner "), done.stdout
    assert "held by mock-claude, mock-codex" in done.stdout
    assert "def fibonacci" in done.stdout
    transcripts = list(out.iterdir())
    assert len(transcripts) == 1 and transcripts[0].suffix == ".md"
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 5 and all(line.startswith("freemad: warning: ") for line in warnings)


def write_config(folder: Path, **output: object) -> Path:
    config = {
        "agents": [
            {"id": "a", "cli_command": f"{MOCK_AGENT} --persona iterative", "cli_mode_arg": True},
            {"id": "b", "cli_command": f"{MOCK_AGENT} --persona memoized", "cli_mode_arg": True},
        ],
        "security": {"cli_allowed_commands": [MOCK_AGENT]},
        "output": {"transcript_dir": str(folder / "configured"), **output},
    }
    path = folder / "cfg.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_save_transcript_format_and_transcript_dir_override_the_output_section(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, save_transcript=False, format="markdown")
    chosen = tmp_path / "chosen"
    done = run(
        "debate",
        REQUIREMENT,
        "--rounds",
        "0",
        "--config",
        str(config),
        "--save-transcript",
        "--format",
        "json",
        "--transcript-dir",
        str(chosen),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    [written] = chosen.iterdir()
    assert written.suffix == ".json"
    assert json.loads(written.read_text())["status"] == "completed"
    assert f"Transcript: {written}" in done.stdout
    assert not (tmp_path / "configured").exists()


def test_no_save_transcript_writes_none(tmp_path: Path) -> None:
    config = write_config(tmp_path, save_transcript=True)
    done = run(
        REQUIREMENT, "--rounds", "0", "--config", str(config), "--no-save-transcript", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "configured").exists()
    assert "Transcript:" not in done.stdout


def test_format_takes_only_json_or_markdown(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    done = run(REQUIREMENT, "--config", str(config), "--format", "html", cwd=tmp_path)
    assert done.returncode == 2
    assert "'html' is not one of 'json', 'markdown'" in done.stderr
