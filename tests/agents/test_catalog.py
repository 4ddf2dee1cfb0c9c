"""`freemad agents` against fake agent CLIs on PATH: installed or not, version, logged in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from freemad.agents.catalog import config_entry, known_types
from freemad.config import parse_config
from freemad.config.models import AgentType
from tests.agents.conftest import FakeBin, env_without_keys


def agents(*args: str, path: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = env_without_keys(PATH=path, HOME=str(home))
    for name in ("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "AIDER_MODEL"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-m", "freemad", "agents", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=home,
        timeout=120,
        check=False,
    )


def test_lists_all_eight_and_what_it_can_tell_offline(fake_bin: FakeBin, tmp_path: Path) -> None:
    fake_bin.add("copilot", 'print("GitHub Copilot CLI 1.0.102.")')
    fake_bin.add(
        "codex",
        """\
if argv == ["--version"]:
    print("codex-cli 0.171.0")
else:
    print("Not logged in", file=sys.stderr)
    sys.exit(1)
""",
    )
    fake_bin.add("llm", 'print("llm, version 0.36")')
    (tmp_path / ".config/io.datasette.llm").mkdir(parents=True)
    (tmp_path / ".config/io.datasette.llm/keys.json").write_text("{}", encoding="utf-8")
    done = agents("--json", path=f"{fake_bin.folder}{os.pathsep}/usr/bin:/bin", home=tmp_path)
    assert done.returncode == 0, done.stderr
    found = {entry["type"]: entry for entry in json.loads(done.stdout)}
    assert list(found) == [t.value for t in known_types()]
    assert len(found) == 8
    copilot, codex, llm = found["copilot_cli"], found["openai_codex"], found["llm"]
    assert copilot["installed"] and copilot["path"] == str(fake_bin.folder / "copilot")
    assert copilot["version"] == "GitHub Copilot CLI 1.0.102."
    assert copilot["logged_in"] is None  # copilot cannot say offline
    assert codex["logged_in"] is False and "Not logged in" in codex["login"]
    assert llm["logged_in"] is True and "keys.json" in llm["login"]
    assert llm["entry"] == {"id": "llm", "type": "llm", "cli_args": {"-m": "MODEL"}}
    assert found["aider"]["installed"] is False
    assert found["aider"]["install"] == "pipx install aider-chat"


def test_text_gives_the_entry_to_paste(fake_bin: FakeBin, tmp_path: Path) -> None:
    fake_bin.add("qwen", 'print("0.24.4")')
    done = agents(path=f"{fake_bin.folder}{os.pathsep}/usr/bin:/bin", home=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    qwen = lines.index(next(line for line in lines if line.startswith("✓ qwen")))
    assert "0.24.4" in lines[qwen]
    assert lines[qwen + 1].strip().startswith("logged in: unknown")
    assert lines[qwen + 3].strip() == "config:    agents: [{id: qwen, type: qwen_code}]"
    assert any(line.startswith("✗ aider") and "pipx install aider-chat" in line for line in lines)


def test_every_entry_loads_as_a_config() -> None:
    entries = [config_entry(t) for t in AgentType if t is not AgentType.GENERIC]
    config = parse_config(yaml.safe_dump({"agents": entries}), name="agents.yaml")
    assert [a.type for a in config.agents] == known_types()
