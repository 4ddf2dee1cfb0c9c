"""The commit-msg hook: what `git log --oneline` shows stays a changelog (CONTRIBUTING.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
HOOK = ROOT / "scripts" / "commit_msg.py"


def check(tmp_path: Path, message: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "COMMIT_EDITMSG"
    path.write_text(message, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(HOOK), str(path)], capture_output=True, text=True, check=False
    )


def test_a_subject_of_72_characters_passes_and_73_is_refused(tmp_path: Path) -> None:
    subject = "docs: " + "x" * 66
    assert len(subject) == 72
    assert check(tmp_path, subject + "\n\nWhy it matters.\n").returncode == 0
    refused = check(tmp_path, subject + "y\n\nWhy it matters.\n")
    assert refused.returncode == 1
    assert "the subject is 73 characters; keep it to 72" in refused.stderr


def test_the_body_must_be_set_apart_by_a_blank_line(tmp_path: Path) -> None:
    refused = check(tmp_path, "bot: refuse a large body\nwith 413 at once\n")
    assert refused.returncode == 1
    assert "blank line between the subject and the body" in refused.stderr


def test_comments_and_the_verbose_diff_are_not_the_message(tmp_path: Path) -> None:
    """git strips `#` lines and everything below `git commit -v`'s scissors line."""
    message = (
        "# Please enter the commit message for your changes.\n"
        "\n"
        "cli: print the stderr tail with -v\n"
        "\n"
        "So a failed agent explains itself.\n"
        "# ------------------------ >8 ------------------------\n"
        "diff --git a/" + "x" * 200 + "\n"
    )
    assert check(tmp_path, message).returncode == 0


def test_an_empty_message_is_refused(tmp_path: Path) -> None:
    refused = check(tmp_path, "# only a comment\n\n")
    assert refused.returncode == 1
    assert "empty" in refused.stderr


def test_pre_commit_installs_the_check_as_a_commit_msg_hook() -> None:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    assert "commit-msg" in config["default_install_hook_types"]
    assert config["default_stages"] == ["pre-commit"], "linters would run twice per commit"
    hooks = {hook["id"]: hook for repo in config["repos"] for hook in repo["hooks"]}
    assert hooks["commit-message"]["stages"] == ["commit-msg"]
    assert hooks["commit-message"]["entry"].endswith("scripts/commit_msg.py")
