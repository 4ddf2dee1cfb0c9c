"""Fake agent CLIs for the agent tests: small Python scripts on PATH that log how they were run."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# Every fake starts by recording its argv and stdin, one JSON line per run.
_PREAMBLE = """\
import json, sys
argv = sys.argv[1:]
stdin = sys.stdin.read()
with open({log!r}, "a", encoding="utf-8") as handle:
    handle.write(json.dumps({{"argv": argv, "stdin": stdin}}) + "\\n")
"""


@dataclass
class FakeBin:
    """A folder at the front of PATH holding fake programs, and the log they share."""

    folder: Path
    log: Path

    def add(self, name: str, body: str) -> Path:
        """Write an executable fake `name`; `body` runs after argv and stdin are logged."""
        path = self.folder / name
        preamble = _PREAMBLE.format(log=str(self.log))
        path.write_text(f"#!{sys.executable}\n{preamble}{textwrap.dedent(body)}", encoding="utf-8")
        path.chmod(0o755)
        return path

    def runs(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def fake_bin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeBin:
    folder = tmp_path / "fake-bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    return FakeBin(folder, tmp_path / "fake-bin.log")


def env_without_keys(**extra: str) -> dict[str, str]:
    """The current environment minus anything that could log an agent CLI in."""
    prefixes = ("ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_", "AZURE_OPENAI")
    env = {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}
    env.update(extra)
    return env
