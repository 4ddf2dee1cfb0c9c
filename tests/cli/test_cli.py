"""The real `freemad` console script run as a subprocess in tmp_path: output, status, files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

import freemad
from tests.terminal import on_terminal

FREEMAD = Path(sys.executable).parent / "freemad"
ROOT = Path(__file__).resolve().parents[2]
MOCK_CONFIG = ROOT / "configs" / "mock_agents.yaml"
REQUIREMENT = "Write a function that returns Fibonacci(n)."
MOCK_AGENTS = ["mock-iterative", "mock-recursive", "mock-memoized"]

# Two mock agents; lines are counted by the bad-input cases below.
TWO_AGENTS = """\
agents:
  - id: alpha
    cli_command: "freemad-mock-agent --persona iterative"
  - id: beta
    cli_command: "freemad-mock-agent --persona memoized"
security:
  cli_allowed_commands: [freemad-mock-agent]
"""


def run(
    *args: str, cwd: Path, stdin: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "FREEMAD_DEBUG"}
    return subprocess.run(
        [str(FREEMAD), *args],
        cwd=cwd,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def run_on_terminal(*args: str, cwd: Path) -> tuple[int, str, str]:
    """Run with stderr on a pseudo-terminal (stdout stays a pipe); return status, stdout, stderr."""
    return on_terminal([str(FREEMAD), *args], cwd=cwd)


def assert_one_line_error(result: subprocess.CompletedProcess[str], *parts: str) -> str:
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("freemad: error: ")
    for part in parts:
        assert part in line
    return line


def only_transcript(cwd: Path) -> Path:
    files = sorted((cwd / "transcripts").iterdir())
    assert len(files) == 1, files
    return files[0]


def test_mock_debate_end_to_end(tmp_path: Path) -> None:
    # builtin:NAME is the shipped copy of configs/NAME.yaml; its state lives in the current folder.
    result = run(REQUIREMENT, "--rounds", "1", "--config", "builtin:mock_agents", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # Piped: no progress, nothing at all on stderr.
    assert result.stderr == ""
    winner = re.search(r"^Winner ([0-9a-f]{16})  score ", result.stdout, re.MULTILINE)
    assert winner, result.stdout
    assert "def fibonacci(n: int) -> int:" in result.stdout

    path = only_transcript(tmp_path)
    assert f"Transcript: transcripts/{path.name}" in result.stdout
    data = json.loads(path.read_text())
    assert re.fullmatch(r"[0-9a-f]{32}", data["run_id"])
    assert data["run_id"][:12] in path.name
    assert data["requirement"] == REQUIREMENT
    assert re.fullmatch(r"[0-9a-f]{16}", data["config_digest"])
    stamp = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"
    assert re.fullmatch(stamp, data["started_at"])
    assert re.fullmatch(stamp, data["finished_at"])
    assert data["status"] == "completed"
    assert data["final_answer_id"] == winner.group(1)
    rounds = data["transcript"]
    assert [(r["round"], r["type"]) for r in rounds] == [(0, "generation"), (1, "critique")]
    for record in rounds:
        assert sorted(record["agents"]) == sorted(MOCK_AGENTS)
        for agent_id, turn in record["agents"].items():
            assert turn["agent_id"] == agent_id
            assert turn["status"] == "ok"
            assert isinstance(turn["duration_ms"], int)
            assert turn["exit_status"] == 0
            assert turn["tokens"]["input"] > 0
            assert turn["tokens"]["output"] > 0


def test_json_output_is_only_json(tmp_path: Path) -> None:
    result = run(REQUIREMENT, "--json", "--config", "builtin:mock_agents", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    data = json.loads(result.stdout)  # the whole of stdout, nothing before or after
    assert data["status"] == "completed"
    assert data["requirement"] == REQUIREMENT
    assert data["final_answer_id"] in data["scores"]
    assert Path(tmp_path / data["transcript_path"]) == only_transcript(tmp_path)


def test_progress_shows_on_a_terminal_only(tmp_path: Path) -> None:
    status, out, err = run_on_terminal(REQUIREMENT, "--rounds", "1", cwd=tmp_path)
    assert status == 0, err
    assert "round 0 (generation): 3 agent(s)" in err
    assert "round 1 (critique): 3 agent(s)" in err
    for agent in MOCK_AGENTS:
        assert f"✓ {agent}" in err
    assert out.startswith("Winner ")
    assert "round 0 (generation): 3 agent(s)" not in out

    status, out, err = run_on_terminal(REQUIREMENT, "--quiet", cwd=tmp_path)
    assert status == 0
    assert "round 0" not in err
    assert out.startswith("Winner ")


def test_builtin_default_config(tmp_path: Path) -> None:
    result = run(REQUIREMENT, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Winner ")
    for agent in MOCK_AGENTS:
        assert agent in result.stdout
    assert only_transcript(tmp_path).suffix == ".json"


def test_requirement_from_stdin(tmp_path: Path) -> None:
    result = run("-", "--json", stdin=f"  {REQUIREMENT}\n", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["requirement"] == REQUIREMENT


def test_debate_subcommand_is_the_default(tmp_path: Path) -> None:
    result = run("debate", REQUIREMENT, "--rounds", "0", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert [r["round"] for r in data["transcript"]] == [0]


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(tmp_path: Path, flag: str) -> None:
    result = run(flag, cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout == f"freemad {freemad.__version__}\n"
    assert result.stderr == ""


def test_help_lists_subcommands_and_options(tmp_path: Path) -> None:
    top = run("--help", cwd=tmp_path)
    assert top.returncode == 0
    assert re.search(r"^  config\s+Inspect and validate", top.stdout, re.MULTILINE)
    assert re.search(r"^  debate\s+Debate a requirement", top.stdout, re.MULTILINE)
    assert 'freemad "Write a function that returns Fibonacci(n)." --rounds 1' in top.stdout

    debate = run("debate", "--help", cwd=tmp_path)
    assert debate.returncode == 0
    assert debate.stdout.startswith("Usage: freemad debate [OPTIONS] [REQUIREMENT]")
    for option in ("--config FILE", "--rounds N", "--json", "--quiet", "--health"):
        assert option in debate.stdout
    assert "Exit status" in debate.stdout

    config = run("config", "--help", cwd=tmp_path)
    assert config.returncode == 0
    assert re.search(r"^  check\s+Validate FILE", config.stdout, re.MULTILINE)
    assert re.search(r"^  schema\s+Print the JSON Schema", config.stdout, re.MULTILINE)
    assert run("config", cwd=tmp_path).stdout == config.stdout


def test_config_check(tmp_path: Path) -> None:
    ok = run("config", "check", str(MOCK_CONFIG), cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    expected = f"{MOCK_CONFIG}: ok (3 enabled agent(s): {', '.join(MOCK_AGENTS)})\n"
    assert ok.stdout == expected

    (tmp_path / "typo.yaml").write_text(TWO_AGENTS + "scoring:\n  wieghts: [1, 2, 3, 4]\n")
    bad = run("config", "check", "typo.yaml", cwd=tmp_path)
    line = assert_one_line_error(bad)
    assert line == (
        "freemad: error: typo.yaml line 9: scoring.wieghts: unknown key (did you mean 'weights'?)"
    )


def test_config_schema_is_a_json_schema_of_every_section(tmp_path: Path) -> None:
    result = run("config", "schema", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    schema = json.loads(result.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    sections = {"agents", "topology", "deadlines", "scoring", "security", "budget"}
    sections |= {"output", "logging", "validation", "cache", "debate", "task", "evolve", "github"}
    sections |= {"review"}
    assert set(schema["properties"]) == sections
    assert schema["required"] == ["agents"]
    validator = jsonschema.Draft202012Validator(schema)
    for path in (MOCK_CONFIG, ROOT / "configs" / "ALL_KEYS.yaml"):
        validator.validate(yaml.safe_load(path.read_text()))
    typo = yaml.safe_load(TWO_AGENTS + "scoring:\n  wieghts: [1, 2, 3, 4]\n")
    with pytest.raises(jsonschema.ValidationError, match="wieghts"):
        validator.validate(typo)


def test_health(tmp_path: Path) -> None:
    ok = run("--health", "--config", str(MOCK_CONFIG), cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    for agent in MOCK_AGENTS:
        assert re.search(rf"^✓ {agent}\s", ok.stdout, re.MULTILINE)

    (tmp_path / "ghost.yaml").write_text(
        "agents:\n"
        "  - id: ghost\n    cli_command: freemad-no-such-agent-cli\n"
        "  - id: mock\n    cli_command: freemad-mock-agent\n"
        "security:\n  cli_allowed_commands: [freemad-no-such-agent-cli, freemad-mock-agent]\n"
    )
    bad = run("--health", "--config", "ghost.yaml", cwd=tmp_path)
    assert bad.returncode == 1
    assert re.search(r"^✗ ghost\s+freemad-no-such-agent-cli: .*not on PATH", bad.stdout, re.M)
    assert re.search(r"^✓ mock\s", bad.stdout, re.MULTILINE)
    assert bad.stderr == "freemad: error: 1 of 2 agent(s) failed the health check: ghost\n"

    as_json = run("--health", "--json", "--config", "ghost.yaml", cwd=tmp_path)
    reports = {r["agent_id"]: r["ok"] for r in json.loads(as_json.stdout)}
    assert reports == {"ghost": False, "mock": True}


# (file name, contents, what the one line must contain); each runs as `freemad REQ --config FILE`.
BAD_CONFIGS = [
    (
        "typo.yaml",
        TWO_AGENTS + "scoring:\n  wieghts: [1, 2, 3, 4]\n",
        ["typo.yaml line 9: scoring.wieghts: unknown key (did you mean 'weights'?)"],
    ),
    (
        "type.yaml",
        TWO_AGENTS + "debate:\n  rounds: many\n",
        ["type.yaml line 9: debate.rounds: should be a valid integer"],
    ),
    (
        "three.yaml",
        TWO_AGENTS + "scoring:\n  weights: [1, 2, 3]\n",
        ["three.yaml line 9: scoring.weights: expected 4 weights"],
    ),
    (
        "shell.yaml",
        TWO_AGENTS + "  cli_use_shell: true\n",
        ["shell.yaml line 8: security.cli_use_shell: must be false"],
    ),
    (
        "quorum.yaml",
        TWO_AGENTS + "deadlines:\n  min_agents: 3\n",
        ["quorum.yaml line 9: deadlines.min_agents: 3 is more than the 2 enabled agent(s)"],
    ),
    (
        "dup.yaml",
        TWO_AGENTS.replace("id: beta", "id: alpha"),
        ["dup.yaml line 4: agents[1].id: duplicate agent id 'alpha'"],
    ),
    (
        "rm.yaml",
        TWO_AGENTS.replace('"freemad-mock-agent --persona iterative"', "rm -rf /"),
        ["rm.yaml line 3: agents[0].cli_command: 'rm' is not in security.cli_allowed_commands"],
    ),
    (
        "syntax.yaml",
        TWO_AGENTS + "scoring:\n  weights: [1, 2\n",
        ["syntax.yaml line 10: invalid YAML:", "starts on line 9"],
    ),
    (
        "syntax.json",
        '{\n  "agents": [\n    {"id": "a",}\n  ]\n}\n',
        ["syntax.json line 3: invalid JSON: Expecting property name"],
    ),
    (
        "invalid.json",
        '{\n  "agents": [{"id": "a", "cli_command": "freemad-mock-agent"}],\n'
        '  "scoring": {"weights": [1, 2, 3]}\n}\n',
        ["invalid.json line 3: scoring.weights: expected 4 weights"],
    ),
    ("empty.yaml", "", ["empty.yaml: the file is empty"]),
    ("list.yaml", "- alpha\n- beta\n", ["list.yaml line 1: the top level must be a mapping"]),
]


@pytest.mark.parametrize(("name", "text", "parts"), BAD_CONFIGS, ids=[c[0] for c in BAD_CONFIGS])
def test_bad_config_is_one_line_and_status_2(
    tmp_path: Path, name: str, text: str, parts: list[str]
) -> None:
    (tmp_path / name).write_text(text)
    result = run(REQUIREMENT, "--config", name, cwd=tmp_path)
    assert_one_line_error(result, *parts)
    assert not (tmp_path / "transcripts").exists(), "no agent may run on a bad config"
    checked = run("config", "check", name, cwd=tmp_path)
    assert checked.stderr == result.stderr


@pytest.mark.parametrize(
    ("args", "stdin", "parts"),
    [
        (["--config", "nope.yaml", REQUIREMENT], None, ["config file not found: nope.yaml"]),
        (["   "], None, ["the requirement is empty"]),
        (["-"], "\n\n", ["the requirement is empty"]),
        (
            ["debate", "x" * 20_001],
            None,
            ["the requirement has 20001 characters; security.max_requirement_size is 20000"],
        ),
        ([REQUIREMENT, "--bogus"], None, ["No such option '--bogus'", "freemad debate --help"]),
        (["config", "check", "--bogus"], None, ["No such option '--bogus'"]),
        ([REQUIREMENT, "--rounds", "many"], None, ["'--rounds'", "'many'"]),
        ([], None, ["give a requirement", "freemad --help"]),
    ],
)
def test_bad_input_is_one_line_and_status_2(
    tmp_path: Path, args: list[str], stdin: str | None, parts: list[str]
) -> None:
    assert_one_line_error(run(*args, stdin=stdin, cwd=tmp_path), *parts)
    assert not (tmp_path / "transcripts").exists()


def test_requirement_limit_comes_from_the_config(tmp_path: Path) -> None:
    (tmp_path / "small.yaml").write_text(TWO_AGENTS + "  max_requirement_size: 10\n")
    result = run("eleven char", "--config", "small.yaml", cwd=tmp_path)
    assert_one_line_error(result, "has 11 characters; security.max_requirement_size is 10")


def test_unwritable_log_file_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "log.yaml").write_text(TWO_AGENTS + "logging:\n  file: no/such/dir/log.txt\n")
    result = run(REQUIREMENT, "--config", "log.yaml", cwd=tmp_path)
    assert_one_line_error(result, "logging.file: cannot open no/such/dir/log.txt")


def test_a_failed_debate_exits_1_with_one_line_naming_the_transcript(tmp_path: Path) -> None:
    (tmp_path / "crash.yaml").write_text(
        TWO_AGENTS.replace("--persona memoized", "--fault crash")
        + "deadlines:\n  min_agents: 2\nlogging:\n  console: false\n"
    )
    result = run(REQUIREMENT, "--config", "crash.yaml", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith("No winner: only 1 of 2 agents answered in round 0")
    transcript = only_transcript(tmp_path)
    assert result.stderr == (
        "freemad: error: the debate failed: only 1 of 2 agents answered in round 0; "
        f"deadlines.min_agents is 2; transcript: transcripts/{transcript.name}\n"
    )
    turn = json.loads(transcript.read_text())["transcript"][0]["agents"]["beta"]
    assert turn["status"] == "failed"
    assert turn["exit_status"] == 3


def test_an_unwritable_transcript_dir_still_prints_the_result(tmp_path: Path) -> None:
    (tmp_path / "blocked").write_text("a file where the folder should be")
    (tmp_path / "out.yaml").write_text(TWO_AGENTS + "output:\n  transcript_dir: blocked/sub\n")
    result = run(REQUIREMENT, "--config", "out.yaml", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith("Winner ")
    assert result.stderr.splitlines() == [
        "freemad: error: cannot write the transcript into output.transcript_dir 'blocked/sub': "
        "Not a directory"
    ]
