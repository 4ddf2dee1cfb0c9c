"""scripts/install-agent-clis.sh, run by bash against a fake `npm` (the real one is in test_real_clis)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "install-agent-clis.sh"
BASH = shutil.which("bash")
NODE = shutil.which("node")
PINNED = [
    "@anthropic-ai/claude-code@2.1.197",
    "@openai/codex@0.171.0",
    "@google/gemini-cli@0.61.0",
    "@github/copilot@1.0.102",
    "opencode-ai@1.18.33",
    "@qwen-code/qwen-code@0.24.4",
]

pytestmark = pytest.mark.skipif(BASH is None, reason="bash is not installed")

# A fake npm: `npm install --prefix P PKG...` logs its argv and lays out P/node_modules like the
# real packages do. FAKE_NPM_SCRIPTS=skipped leaves claude's native binary out, as
# `npm install --ignore-scripts` does; FAKE_NPM_BROKEN names a CLI whose --version fails.
FAKE_NPM = f"""#!{sys.executable}
import os, sys
from pathlib import Path

with open(os.environ["FAKE_LOG"], "a", encoding="utf-8") as log:
    log.write("npm " + " ".join(sys.argv[1:]) + "\\n")
args = sys.argv[1:]
prefix = Path(args[args.index("--prefix") + 1])
modules = prefix / "node_modules"
bin_dir = modules / ".bin"
bin_dir.mkdir(parents=True, exist_ok=True)
versions = {{
    "claude": "2.1.197 (Claude Code)",
    "codex": "codex-cli 0.171.0",
    "gemini": "0.61.0",
    "copilot": "GitHub Copilot CLI 1.0.102.",
    "opencode": "1.18.33",
    "qwen": "0.24.4",
}}
for cli, version in versions.items():
    body = f"echo '{{version}}'"
    if cli == os.environ.get("FAKE_NPM_BROKEN"):
        body = "echo 'Error: Cannot find module' >&2; exit 1"
    if cli == "claude" and os.environ.get("FAKE_NPM_SCRIPTS") == "skipped":
        body = "echo 'Error: claude native binary not installed.' >&2; exit 1"
    (bin_dir / cli).write_text(f"#!/bin/sh\\n{{body}}\\n")
    (bin_dir / cli).chmod(0o755)
package = modules / "@anthropic-ai" / "claude-code"
package.mkdir(parents=True, exist_ok=True)
(package / "install.cjs").write_text(
    'const fs = require("fs"); const path = require("path");\\n'
    'const bin = path.join(process.cwd(), "node_modules", ".bin", "claude");\\n'
    'fs.writeFileSync(bin, "#!/bin/sh\\\\necho \\'2.1.197 (Claude Code)\\'\\\\n", {{mode: 0o755}});\\n'
    'fs.appendFileSync(process.env.FAKE_LOG, "install.cjs in " + process.cwd() + "\\\\n");\\n'
)
print("added 11 packages in 1s")
"""


def run_script(
    script: Path, *args: str, path: str, log: Path, **env: str
) -> subprocess.CompletedProcess[str]:
    assert BASH is not None
    return subprocess.run(
        [BASH, str(script), *args],
        capture_output=True,
        text=True,
        env={
            "PATH": path,
            "HOME": str(log.parent),
            "FAKE_LOG": str(log),
            "FREEMAD_AGENT_PY_PACKAGES": "",
            **env,
        },
        timeout=120,
        check=False,
    )


@pytest.fixture
def npm_path(tmp_path: Path) -> str:
    folder = tmp_path / "fake-npm"
    folder.mkdir()
    npm = folder / "npm"
    npm.write_text(FAKE_NPM, encoding="utf-8")
    npm.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"


def log_lines(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def test_without_npm_it_says_so_and_succeeds(tmp_path: Path) -> None:
    empty = tmp_path / "empty-path"
    empty.mkdir()
    done = run_script(SCRIPT, str(tmp_path / "prefix"), path=str(empty), log=tmp_path / "log")
    assert done.returncode == 0
    assert "npm not found; skipping" in done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "prefix").exists()


def test_installs_the_pinned_clis_and_prints_the_bin_folder(tmp_path: Path, npm_path: str) -> None:
    prefix, log = tmp_path / "prefix", tmp_path / "log"
    done = run_script(SCRIPT, str(prefix), path=npm_path, log=log)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{prefix}/node_modules/.bin\n"
    (npm,) = log_lines(log)
    assert npm.startswith(f"npm install --prefix {prefix} ")
    assert npm.split()[-6:] == PINNED
    assert "claude: 2.1.197 (Claude Code)" in done.stderr


def test_a_second_run_installs_nothing(tmp_path: Path, npm_path: str) -> None:
    prefix, log = tmp_path / "prefix", tmp_path / "log"
    first = run_script(SCRIPT, str(prefix), path=npm_path, log=log)
    second = run_script(SCRIPT, str(prefix), path=npm_path, log=log)
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    assert "already installed" in second.stderr
    assert len(log_lines(log)) == 1


@pytest.mark.skipif(NODE is None, reason="node is not installed")
def test_runs_claudes_install_script_when_npm_skipped_it(tmp_path: Path, npm_path: str) -> None:
    prefix, log = tmp_path / "prefix", tmp_path / "log"
    done = run_script(SCRIPT, str(prefix), path=npm_path, log=log, FAKE_NPM_SCRIPTS="skipped")
    assert done.returncode == 0, done.stderr
    assert "running its install.cjs" in done.stderr
    assert log_lines(log)[1] == f"install.cjs in {prefix}"
    assert done.stdout == f"{prefix}/node_modules/.bin\n"


def test_fails_when_a_cli_does_not_answer_version(tmp_path: Path, npm_path: str) -> None:
    log = tmp_path / "log"
    done = run_script(
        SCRIPT, str(tmp_path / "prefix"), path=npm_path, log=log, FAKE_NPM_BROKEN="gemini"
    )
    assert done.returncode == 1
    assert "gemini --version does not work after install" in done.stderr
    assert "Cannot find module" in done.stderr
    assert done.stdout == ""


def test_default_prefix_is_the_repos_cache_and_packages_can_be_changed(
    tmp_path: Path, npm_path: str
) -> None:
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    script = repo / "scripts" / SCRIPT.name
    shutil.copy(SCRIPT, script)
    log = tmp_path / "log"
    done = run_script(
        script, path=npm_path, log=log, FREEMAD_AGENT_CLI_PACKAGES="@openai/codex@latest"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{repo}/.cache/agent-clis/node_modules/.bin\n"
    assert log_lines(log)[0].endswith(" @openai/codex@latest")
