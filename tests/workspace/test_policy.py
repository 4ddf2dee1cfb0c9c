"""The tool policy on real files, symlinks and subprocesses: refusals are data, commands are contained."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from freemad.config.task_section import ToolPolicy
from freemad.core.work_items import scopes_overlap
from freemad.sandbox.process import OUTPUT_CAP, CommandResult, run_command
from freemad.workspace.policy import Violation, apply_writes, check_command, check_write
from tests.processes import gone

WRITE = ToolPolicy(allow_workspace_write=True)
RUN = ToolPolicy(allow_local_commands=True, allowed_local_commands=["echo", "sh", sys.executable])


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "ws" / "src").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text("secret\n")
    return tmp_path / "ws"


def refused(result: Path | Violation) -> str:
    assert isinstance(result, Violation), result
    assert result.kind == "write"
    return result.reason


# --- scopes -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        (["src"], ["src/app.py"], True),
        (["src/app.py"], ["src"], True),
        (["src"], ["srcs"], False),
        (["src"], ["srcs/app.py"], False),
        (["./src/"], ["src/a/b.py"], True),
        (["docs", "tests"], ["src", "tests/unit"], True),
        (["docs"], ["src"], False),
        ([], ["src"], True),
        (["src"], [], True),
        (["."], ["src"], True),
    ],
)
def test_scopes_overlap_by_whole_path_components(a, b, expected):
    assert scopes_overlap(a, b) is expected


def test_a_bare_string_scope_is_one_path_not_its_letters():
    assert scopes_overlap("src", ["srcs"]) is False


# --- check_write --------------------------------------------------------------------------------


def test_an_allowed_write_returns_the_absolute_target(ws):
    assert check_write(ws, "src/new/app.py", WRITE, []) == ws.resolve() / "src/new/app.py"
    assert check_write(ws, "./README.md", WRITE, []) == ws.resolve() / "README.md"
    assert check_write(ws, ".gitignore", WRITE, []) == ws.resolve() / ".gitignore"


def test_writes_are_refused_when_the_policy_does_not_allow_them(ws):
    assert "does not allow" in refused(check_write(ws, "a.txt", ToolPolicy(), []))


def test_dotdot_and_absolute_paths_are_refused(ws):
    escape = check_write(ws, "../x", WRITE, [])
    assert isinstance(escape, Violation)
    assert escape.finding() == "refused write to ../x: it leaves the workspace"
    assert refused(check_write(ws, "src/../src/a.py", WRITE, [])) == "it leaves the workspace"
    assert refused(check_write(ws, "/etc/passwd", WRITE, [])) == "it is an absolute path"
    assert refused(check_write(ws, str(ws / "a.txt"), WRITE, [])) == "it is an absolute path"
    assert "not a usable" in refused(check_write(ws, "", WRITE, []))
    assert "workspace itself" in refused(check_write(ws, "./", WRITE, []))


def test_a_symlinked_folder_pointing_out_is_refused(ws, tmp_path):
    (ws / "out").symlink_to(tmp_path / "outside")
    (ws / "src" / "deep").symlink_to(tmp_path / "outside", target_is_directory=True)
    assert "symlink" in refused(check_write(ws, "out/new.txt", WRITE, []))
    assert "symlink" in refused(check_write(ws, "src/deep/a/b/new.txt", WRITE, []))
    assert not (tmp_path / "outside" / "a").exists()


def test_a_symlinked_file_pointing_out_is_refused_even_when_dangling(ws, tmp_path):
    (ws / "secret.txt").symlink_to(tmp_path / "outside" / "secret.txt")
    (ws / "dangling.txt").symlink_to(tmp_path / "outside" / "not-yet.txt")
    assert "symlink" in refused(check_write(ws, "secret.txt", WRITE, []))
    assert "symlink" in refused(check_write(ws, "dangling.txt", WRITE, []))
    writes = [{"path": "secret.txt", "content": "owned"}, {"path": "dangling.txt", "content": "x"}]
    written, violations = apply_writes(ws, writes, WRITE, [])
    assert written == []
    assert len(violations) == 2
    assert (tmp_path / "outside" / "secret.txt").read_text() == "secret\n"
    assert not (tmp_path / "outside" / "not-yet.txt").exists()


def test_a_symlink_that_stays_inside_is_followed_and_judged_where_it_lands(ws):
    (ws / "docs").mkdir()
    (ws / "src" / "docs-link").symlink_to(ws / "docs")
    assert check_write(ws, "src/docs-link/a.md", WRITE, []) == ws.resolve() / "docs" / "a.md"
    rooted = ToolPolicy(allow_workspace_write=True, allowed_write_roots=["src"])
    assert "allowed_write_roots" in refused(check_write(ws, "src/docs-link/a.md", rooted, []))
    assert "write scope" in refused(check_write(ws, "src/docs-link/a.md", WRITE, ["src"]))


def test_writes_into_git_are_refused(ws):
    for path in (".git/config", ".git", "sub/.git/hooks/pre-commit", ".GIT/HEAD"):
        assert refused(check_write(ws, path, WRITE, [])) == "it writes into .git"
    (ws / "git-link").symlink_to(ws / ".git", target_is_directory=True)
    assert refused(check_write(ws, "git-link/config", WRITE, [])) == "it writes into .git"


def test_allowed_write_roots_and_scope_are_path_prefixes(ws):
    rooted = ToolPolicy(allow_workspace_write=True, allowed_write_roots=["src", "docs/api"])
    assert isinstance(check_write(ws, "src/app.py", rooted, []), Path)
    assert isinstance(check_write(ws, "docs/api/x.md", rooted, []), Path)
    assert "allowed_write_roots" in refused(check_write(ws, "srcs/app.py", rooted, []))
    assert "allowed_write_roots" in refused(check_write(ws, "docs/guide.md", rooted, []))
    assert isinstance(check_write(ws, "src/pkg/a.py", rooted, ["src/pkg"]), Path)
    scoped = refused(check_write(ws, "src/other/a.py", rooted, ["src/pkg"]))
    assert scoped == "it is outside the work item's write scope (src/pkg)"


# --- apply_writes -------------------------------------------------------------------------------


def test_apply_writes_creates_folders_and_writes_exact_content(ws):
    writes = [
        {"path": "src/pkg/mod.py", "content": "print('hi')\r\n"},
        {"path": "notes/ü.md", "content": "é\n"},
    ]
    written, violations = apply_writes(ws, writes, WRITE, [])
    assert (written, violations) == (["src/pkg/mod.py", "notes/ü.md"], [])
    assert (ws / "src/pkg/mod.py").read_bytes() == b"print('hi')\r\n"
    assert (ws / "notes/ü.md").read_text(encoding="utf-8") == "é\n"
    assert not [p for p in ws.rglob("*") if p.name.startswith(".freemad-")]


def test_apply_writes_replaces_a_file_and_keeps_its_mode(ws):
    script = ws / "run.sh"
    script.write_text("old\n")
    script.chmod(0o755)
    written, _ = apply_writes(ws, [{"path": "run.sh", "content": "new\n"}], WRITE, [])
    assert written == ["run.sh"]
    assert script.read_text() == "new\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o755


def test_bad_writes_are_violations_and_the_good_ones_still_apply(ws):
    writes = [
        {"path": "ok.txt", "content": "fine"},
        {"path": "no-content.txt"},
        {"content": "no path"},
        {"path": 3, "content": "x"},
        "not a mapping",
        {"path": "../escape.txt", "content": "x"},
        {"path": "src", "content": "src is a folder"},
    ]
    written, violations = apply_writes(ws, writes, WRITE, [])  # type: ignore[arg-type]
    assert written == ["ok.txt"]
    findings = [v.finding() for v in violations]
    assert findings[:4] == [
        "refused write to no-content.txt: a write needs a text path and text content",
        "refused write to (no path): a write needs a text path and text content",
        "refused write to (no path): a write needs a text path and text content",
        "refused write to (no path): a write needs a text path and text content",
    ]
    assert findings[4] == "refused write to ../escape.txt: it leaves the workspace"
    assert findings[5].startswith("refused write to src: it could not be written (")
    assert (ws / "src").is_dir()
    assert not (ws.parent / "escape.txt").exists()


# --- check_command ------------------------------------------------------------------------------


def test_commands_are_refused_unless_allowed():
    assert isinstance(check_command("echo hi", ToolPolicy()), Violation)
    refusal = check_command("rm -rf /", RUN)
    assert isinstance(refusal, Violation)
    assert refusal.finding() == "refused command `rm -rf /`: rm is not in allowed_local_commands"
    assert check_command("echo 'a b' c", RUN) == ["echo", "a b", "c"]
    assert check_command(["echo", "x"], RUN) == ["echo", "x"]


def test_the_first_word_must_match_exactly():
    for command in ("/bin/echo hi", "./echo hi", "echo2 hi", ";echo hi", "ECHO hi", ""):
        assert isinstance(check_command(command, RUN), Violation), command
    listed = ToolPolicy(allow_local_commands=True, allowed_local_commands=["/bin/echo"])
    assert check_command("/bin/echo hi", listed) == ["/bin/echo", "hi"]
    assert isinstance(check_command("echo hi", listed), Violation)


def test_an_unsplittable_command_is_a_violation():
    refusal = check_command("echo 'unclosed", RUN)
    assert isinstance(refusal, Violation)
    assert "cannot be split" in refusal.reason


def test_shell_metacharacters_are_plain_words(tmp_path):
    argv = check_command("echo hi; touch pwned && touch pwned2 $(touch pwned3) > out", RUN)
    assert argv == [
        "echo",
        "hi;",
        "touch",
        "pwned",
        "&&",
        "touch",
        "pwned2",
        "$(touch",
        "pwned3)",
        ">",
        "out",
    ]
    result = run_command(argv, tmp_path, 30)
    assert result.ok()
    assert result.stdout == "hi; touch pwned && touch pwned2 $(touch pwned3) > out\n"
    assert list(tmp_path.iterdir()) == []


# --- run_command --------------------------------------------------------------------------------


def test_a_command_runs_without_a_shell_and_reports_its_exit(tmp_path):
    result = run_command(
        [sys.executable, "-c", "import os,sys; print(os.getcwd()); sys.exit(3)"], tmp_path, 30
    )
    assert isinstance(result, CommandResult)
    assert (result.exit_code, result.timed_out, result.ok()) == (3, False, False)
    assert result.stdout.strip() == str(tmp_path)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_timeout_kills_the_whole_group_grandchild_included(tmp_path):
    script = "sleep 300 & echo $! ; wait"
    result = run_command(["sh", "-c", script], tmp_path, 1.0)
    assert result.timed_out
    assert not result.ok()
    assert "time limit" in result.stderr
    grandchild = int(result.stdout.split()[0])
    assert gone(grandchild, 5.0)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_background_children_do_not_outlive_a_finished_command(tmp_path):
    result = run_command(["sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!"], tmp_path, 60)
    assert result.ok()
    assert gone(int(result.stdout.split()[0]), 5.0)


def test_the_environment_is_an_allowlist(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("FREEMAD_TEST_SETTING", "kept")
    monkeypatch.setenv("LANG", "C.UTF-8")
    code = "import json, os; print(json.dumps(dict(os.environ)))"
    plain = run_command([sys.executable, "-c", code], tmp_path, 30)
    passed = run_command(
        [sys.executable, "-c", code], tmp_path, 30, env_passthrough=["FREEMAD_TEST_SETTING"]
    )
    assert "secret" not in plain.stdout + passed.stdout
    assert "FREEMAD_TEST_SETTING" not in plain.stdout
    assert '"FREEMAD_TEST_SETTING": "kept"' in passed.stdout
    assert '"LANG": "C.UTF-8"' in plain.stdout
    with pytest.raises(ValueError, match="secret"):
        run_command(["echo"], tmp_path, 30, env_passthrough=["GITHUB_TOKEN"])


def test_output_is_capped_keeping_the_tail_and_decoded_leniently(tmp_path):
    code = "import sys; sys.stdout.write('a' * (3 * 1024 * 1024) + 'END'); sys.stderr.buffer.write(b'bad \\xff byte')"
    result = run_command([sys.executable, "-c", code], tmp_path, 60)
    assert result.ok()
    assert result.stdout.endswith("a" * 100 + "END")
    assert result.stdout.startswith("[freemad: ")
    assert len(result.stdout.encode()) <= OUTPUT_CAP + 100
    assert result.stderr == "bad \ufffd byte"


def test_a_missing_program_is_a_result_not_an_exception(tmp_path):
    result = run_command(["freemad-no-such-program-xyz", "--help"], tmp_path, 30)
    assert result.exit_code is None
    assert not result.ok()
    assert result.stderr.startswith("could not start freemad-no-such-program-xyz: ")
    empty = run_command([], tmp_path, 30)
    assert (empty.exit_code, empty.stderr) == (None, "could not start a command: no program given")
    nowhere = run_command(["echo"], tmp_path / "missing", 30)
    assert nowhere.exit_code is None
    assert (
        nowhere.stderr == f"could not start echo: its folder {tmp_path / 'missing'} does not exist"
    )


def test_the_command_runs_in_its_own_session_with_no_input(tmp_path):
    code = (
        "import os, sys; print(repr(sys.stdin.read()), os.getsid(0), os.getpgrp() == os.getpid())"
    )
    result = run_command([sys.executable, "-c", code], tmp_path, 30)
    text, session, leader = result.stdout.split()
    assert (text, leader) == ("''", "True")
    assert int(session) != os.getsid(0)
