"""One command grammar: a lone word that is no command is an error with a suggestion, never a
debate; a requirement is a sentence, or comes after `debate`, or from stdin; `freemad help`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.helpers import freemad


@pytest.mark.parametrize(
    ("word", "suggestion"),
    [
        ("help2", "freemad help"),
        ("version", "freemad --version"),
        ("dashboard", "freemad-dashboard"),
        ("healt", "freemad --health"),
        ("tsk", "freemad task"),
        ("evolv", "freemad evolve"),
        ("Fibonacci", None),
    ],
)
def test_a_lone_unknown_word_is_an_error_never_a_debate(
    tmp_path: Path, word: str, suggestion: str | None
) -> None:
    done = freemad(word, cwd=tmp_path, home=tmp_path, code=2)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"freemad: error: '{word}' is not a command")
    if suggestion:
        assert f"(did you mean '{suggestion}'?)" in lines[0]
    assert f"freemad debate {word}" in lines[0]
    assert not (tmp_path / "transcripts").exists(), "no agent may run"


@pytest.mark.parametrize(
    "args",
    [
        ["debate", "Fibonacci"],
        ["Write Fibonacci(n)."],
        ["--rounds", "0", "Write Fibonacci(n)."],
    ],
)
def test_a_sentence_or_a_word_after_debate_is_debated(tmp_path: Path, args: list[str]) -> None:
    done = freemad(*args, cwd=tmp_path, home=tmp_path)
    assert done.stdout.startswith("Winner ")


def test_a_requirement_from_stdin(tmp_path: Path) -> None:
    done = freemad("-", "--json", cwd=tmp_path, home=tmp_path, stdin="Fibonacci")
    assert '"status": "completed"' in done.stdout


def test_help_is_a_command(tmp_path: Path) -> None:
    assert (
        freemad("help", cwd=tmp_path, home=tmp_path).stdout
        == freemad("--help", cwd=tmp_path, home=tmp_path).stdout
    )
    sub = freemad("help", "task", "start", cwd=tmp_path, home=tmp_path).stdout
    assert sub == freemad("task", "start", "--help", cwd=tmp_path, home=tmp_path).stdout
    assert sub.startswith("Usage: freemad task start")
    wrong = freemad("help", "task", "strt", cwd=tmp_path, home=tmp_path, code=2)
    assert "did you mean 'freemad task start'?" in wrong.stderr


def test_help_examples_name_no_file_a_wheel_lacks(tmp_path: Path) -> None:
    """A pip user has no configs/ or examples/ folder: the help must not send them there."""
    for words in (
        [],
        ["task"],
        ["evolve"],
        ["site"],
        ["github"],
        ["config"],
        ["example"],
        ["init"],
        ["debate"],
    ):
        text = freemad("help", *words, cwd=tmp_path, home=tmp_path).stdout
        assert "configs/" not in text and "examples/" not in text, (words, text)


@pytest.mark.parametrize(
    "args",
    [
        ["-v", "task", "status"],
        ["--json", "task", "status"],
        ["-c", "freemad.yaml", "--json", "task", "status"],
        ["--config=freemad.yaml", "task", "status", "--json"],
    ],
)
def test_shared_options_before_the_command_are_the_commands(
    tmp_path: Path, args: list[str]
) -> None:
    freemad("init", "--mock", cwd=tmp_path, home=tmp_path)
    freemad("task", "start", "Plan a key-value store.", cwd=tmp_path, home=tmp_path)
    done = freemad(*args, cwd=tmp_path, home=tmp_path)
    [task] = json.loads(done.stdout)  # piped, or --json: JSON
    assert task["status"] == "waiting_for_human" and task["question"]


def test_an_option_the_command_lacks_is_refused_naming_the_command(tmp_path: Path) -> None:
    done = freemad("-q", "task", "status", cwd=tmp_path, home=tmp_path, code=2)
    assert done.stderr.strip() == (
        "freemad: error: No such option '-q'. (see 'freemad task status --help')"
    )


def test_an_option_before_a_requirement_is_still_the_debates(tmp_path: Path) -> None:
    done = freemad("-v", "--rounds", "0", "Write Fibonacci(n).", cwd=tmp_path, home=tmp_path)
    assert done.stdout.startswith("Winner ")
    # A requirement that starts with a command's name is not that command.
    done = freemad("-v", "task status of the day, please", cwd=tmp_path, home=tmp_path)
    assert done.stdout.startswith("Winner ")
