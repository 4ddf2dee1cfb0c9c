"""An evolve run's lineage on real git repositories: the user's checkout is never touched."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from freemad.core.evolve.git_names import branch_name, commit_message, tag_name
from freemad.errors import FreemadError, UsageError
from freemad.workspace.lineage import Lineage, dirty_paths, resolve_seed
from tests.gittools import git, isolated_git, snapshot
from tests.workspace.lineage_repos import (
    PROTECTED,
    RUN,
    iterate,
    lineage,
    remove,
    repo,
    worktrees,
)

__all__ = ["isolated_git", "lineage", "repo", "worktrees"]  # fixtures, used by name

# --- seed, status and names ---------------------------------------------------------------------


def test_resolve_seed_gives_the_full_commit(repo):
    head = git(repo, "rev-parse", "HEAD").strip()
    assert resolve_seed(repo, "HEAD") == head
    assert resolve_seed(repo, "main") == head
    assert resolve_seed(repo, head[:8]) == head


@pytest.mark.parametrize("ref", ["nope", "HEAD~5", "-h", "HEAD^{tree}"])
def test_a_seed_that_is_not_a_commit_is_a_usage_error(repo, ref):
    with pytest.raises(UsageError, match=f"seed_ref '.*' is not a commit in {repo}"):
        resolve_seed(repo, ref)


def test_no_repository_or_no_commit_is_a_usage_error(tmp_path):
    (tmp_path / "plain").mkdir()
    with pytest.raises(UsageError, match="not in a git repository"):
        resolve_seed(tmp_path / "plain", "HEAD")
    git(tmp_path / "plain", "init", "-q")
    with pytest.raises(UsageError, match="no commit yet"):
        resolve_seed(tmp_path / "plain", "HEAD")


def test_dirty_paths_lists_changes_and_untracked_but_not_ignored(repo):
    (repo / ".git" / "info" / "exclude").write_text("*.log\n")
    (repo / "noise.log").write_text("ignored\n")
    assert sorted(dirty_paths(repo)) == ["app.py", "staged.txt", "untracked.txt"]
    git(repo, "stash", "-u", "-q")
    assert dirty_paths(repo) == []


def test_names():
    assert branch_name(RUN) == f"freemad/evolve/{RUN}"
    assert tag_name(RUN, 3) == f"evolve/{RUN}/v3"


# --- the happy path -----------------------------------------------------------------------------


def test_iterations_commit_on_the_run_branch_and_leave_the_checkout_alone(repo, worktrees):
    before = snapshot(repo)
    seed = resolve_seed(repo, "HEAD")
    lineage = Lineage.open(repo, RUN, seed, worktrees)
    assert lineage.worktree == worktrees.resolve() / RUN
    assert lineage.tip() == seed
    assert git(lineage.worktree, "rev-parse", "--abbrev-ref", "HEAD").strip() == "HEAD"  # detached
    v1 = iterate(lineage, seed, 1, "def f():\n    return 2\n")
    v2 = iterate(lineage, v1, 2, "def f():\n    return 3\n")
    assert lineage.tip() == v2
    assert git(repo, "rev-parse", f"refs/tags/{tag_name(RUN, 1)}").strip() == v1
    assert git(repo, "rev-parse", f"refs/tags/{tag_name(RUN, 2)}").strip() == v2
    assert git(repo, "show", f"{v2}:app.py") == "def f():\n    return 3\n"
    assert git(repo, "log", "--format=%an <%ae>", "-1", v2).strip() == (
        "FREE-MAD <freemad@freemad.invalid>"
    )
    assert git(repo, "rev-list", "--count", f"{seed}..{lineage.branch}").strip() == "2"
    assert snapshot(repo) == before


def test_stage_leaves_exactly_the_index_and_reports_the_change(lineage):
    seed = lineage.seed
    lineage.prepare(seed)
    (lineage.worktree / ".gitignore").write_text("*.so\n")
    (lineage.worktree / "x.so").write_bytes(b"\x7fELF")
    (lineage.worktree / "new" / "empty").mkdir(parents=True)
    (lineage.worktree / "new.py").write_text("N = 1\n")
    tree = lineage.stage()
    assert not (lineage.worktree / "x.so").exists()
    assert not (lineage.worktree / "new").exists()
    assert lineage.changed_paths(tree, seed) == [".gitignore", "new.py"]
    diff = lineage.diff(tree, seed)
    assert "+++ b/new.py" in diff and "+N = 1" in diff
    assert lineage.diff(tree, seed, limit=40).endswith("[diff truncated at 40 bytes]\n")
    lineage.prepare(seed)
    assert lineage.changed_paths(lineage.stage(), seed) == []
    assert not (lineage.worktree / "new.py").exists()


def test_nested_repositories_are_not_committed_as_gitlinks(lineage):
    lineage.prepare(lineage.seed)
    nested = lineage.worktree / "vendor"
    nested.mkdir()
    git(nested, "init", "-q")
    (nested / "lib.py").write_text("L = 1\n")
    git(nested, "add", ".")
    git(nested, "commit", "-q", "-m", "nested")
    tree = lineage.stage()
    assert lineage.changed_paths(tree, lineage.seed) == ["vendor/lib.py"]
    assert not (nested / ".git").exists()


# --- advance and tags ---------------------------------------------------------------------------


def test_advance_is_fast_forward_only_and_idempotent(lineage, repo):
    seed = lineage.seed
    lineage.prepare(seed)
    (lineage.worktree / "app.py").write_text("v1\n")
    v1 = lineage.commit(lineage.stage(), seed, "v1")
    assert lineage.tip() == seed  # commit moves no ref
    lineage.advance(seed, v1, 1)
    lineage.advance(seed, v1, 1)  # a repeat after a crash is fine
    assert lineage.tip() == v1
    sibling = lineage.commit(lineage.stage(), seed, "not a descendant of v1")
    with pytest.raises(FreemadError, match="moved"):
        lineage.advance(seed, sibling, 2)  # expected tip is stale
    with pytest.raises(FreemadError, match="not a fast-forward"):
        lineage.advance(v1, sibling, 2)
    assert lineage.tip() == v1
    assert "refs/tags/" + tag_name(RUN, 2) not in git(repo, "show-ref", "--tags")


def test_a_branch_moved_by_someone_else_stops_the_run(lineage, repo):
    seed = lineage.seed
    lineage.prepare(seed)
    (lineage.worktree / "app.py").write_text("v1\n")
    v1 = lineage.commit(lineage.stage(), seed, "v1")
    foreign = git(repo, "commit-tree", "-p", seed, "-m", "foreign", f"{seed}^{{tree}}").strip()
    git(repo, "update-ref", f"refs/heads/{lineage.branch}", foreign)
    with pytest.raises(FreemadError, match="someone else wrote to it"):
        lineage.advance(seed, v1, 1)


def test_a_tag_pointing_elsewhere_stops_the_run(lineage, repo):
    seed = lineage.seed
    lineage.prepare(seed)
    (lineage.worktree / "app.py").write_text("v1\n")
    v1 = lineage.commit(lineage.stage(), seed, "v1")
    git(repo, "tag", tag_name(RUN, 1), seed)
    with pytest.raises(FreemadError, match="points at"):
        lineage.advance(seed, v1, 1)
    assert lineage.tip() == seed  # the branch did not move either


def test_git_failures_are_freemad_errors_on_one_line(lineage):
    with pytest.raises(FreemadError) as caught:
        lineage.commit("0" * 40, lineage.seed, "a tree that does not exist")
    assert "\n" not in caught.value.message and "commit-tree" in caught.value.message


# --- what the worker may not do -----------------------------------------------------------------


def test_tampered_protected_paths_are_restored_from_the_seed(lineage, tmp_path):
    seed_ids = lineage.protected_ids(lineage.seed, PROTECTED)
    assert seed_ids["secrets/key"] == "absent" and seed_ids["tests"] != "absent"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("not the worker's to delete\n")
    wt = lineage.worktree
    attacks = [
        lambda: (wt / "bench.py").write_text("print('fast!')\n"),
        lambda: (wt / "tests" / "conftest.py").write_text("import pytest\n"),
        (wt / "tests" / "test_app.py").unlink,
        (wt / "config" / "limits.toml").unlink,
        lambda: (wt / "secrets").mkdir() or (wt / "secrets" / "key").write_text("k\n"),
        lambda: (wt / "secrets").write_text("a file where a folder goes\n"),
    ]
    for attack in attacks:
        lineage.prepare(lineage.seed)
        attack()
        lineage.restore_protected(PROTECTED)
        assert lineage.protected_ids(lineage.stage(), PROTECTED) == seed_ids
    symlinks = [
        ("tests", outside),
        ("bench.py", outside / "keep.txt"),
        ("config", outside),  # a parent of a protected path
    ]
    for name, target in symlinks:
        lineage.prepare(lineage.seed)
        remove(wt / name)
        (wt / name).symlink_to(target)
        lineage.restore_protected(PROTECTED)
        tree = lineage.stage()
        assert lineage.protected_ids(tree, PROTECTED) == seed_ids
        assert not (wt / name).is_symlink()
        assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
        assert (outside / "keep.txt").read_text() == "not the worker's to delete\n"
    assert (wt / "tests" / "test_app.py").read_text() == "def test_f():\n    assert True\n"


def test_protected_changes_the_worker_staged_with_git_are_undone(lineage):
    lineage.prepare(lineage.seed)
    (lineage.worktree / "tests" / "test_app.py").write_text("# gone\n")
    git(lineage.worktree, "add", "-A")  # the worker used git in the worktree
    lineage.restore_protected(["tests"])
    tree = lineage.stage()
    assert lineage.protected_ids(tree, ["tests"]) == lineage.protected_ids(lineage.seed, ["tests"])


def test_a_protected_path_below_a_symlink_of_the_seed_keeps_the_symlink(repo, worktrees):
    (repo / "real").mkdir()
    (repo / "real" / "x.toml").write_text("x = 1\n")
    (repo / "conf").symlink_to("real")
    git(repo, "add", "real", "conf")
    git(repo, "commit", "-q", "-m", "a symlinked folder")
    lineage = Lineage.open(repo, RUN, resolve_seed(repo, "HEAD"), worktrees)
    lineage.prepare(lineage.seed)
    lineage.restore_protected(["conf/x.toml", "tests/"])
    tree = lineage.stage()
    assert lineage.changed_paths(tree, lineage.seed) == []
    assert os.readlink(lineage.worktree / "conf") == "real"


def test_redirecting_git_variables_are_refused(lineage, monkeypatch, tmp_path):
    monkeypatch.setenv("GIT_DIR", str(tmp_path / "elsewhere"))
    with pytest.raises(UsageError, match="GIT_DIR"):
        lineage.prepare(lineage.seed)
    with pytest.raises(UsageError, match="GIT_DIR"):
        Lineage.open(lineage.repo_root, RUN, lineage.seed, lineage.worktree.parent)


_MODES_CHILD = """
import os, sys
from pathlib import Path
from freemad.workspace.lineage import Lineage
repo, worktrees, seed = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
lineage = Lineage.open(repo, "{run}", seed, worktrees)
wt = lineage.worktree
lineage.prepare(seed)
(wt / "d").mkdir()
(wt / "d" / "f.py").write_text("f\\n")
(wt / "u.py").write_text("u\\n")
(wt / "r").mkdir()
(wt / "r" / "x.so").write_text("x")
(wt / ".gitignore").write_text("*.so\\n")
for path, mode in (("d", 0), ("tests", 0), ("u.py", 0), ("r", 0o555)):
    os.chmod(wt / path, mode)
lineage.restore_protected(["tests"])
tree = lineage.stage()
print(" ".join(lineage.changed_paths(tree, seed)))
lineage.prepare(seed)
lineage.remove()
"""


def test_folders_and_files_the_worker_locked_do_not_stop_an_iteration(repo, worktrees):
    """Without the capability to override file modes, as any user but root runs."""
    command = [sys.executable, "-c", _MODES_CHILD.format(run=RUN)]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("root ignores file modes, and setpriv is not there to drop that")
        command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", *command]
    seed = resolve_seed(repo, "HEAD")
    done = subprocess.run(
        [*command, str(repo), str(worktrees), seed], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [".gitignore", "d/f.py", "u.py"]
    assert not (worktrees / RUN).exists()


@pytest.mark.parametrize("path", ["", "/etc", "../x", "a/../../b", ".git/config", "x/.GIT"])
def test_protected_paths_must_stay_inside_the_worktree(lineage, path):
    with pytest.raises(ValueError):
        lineage.restore_protected([path])


def test_escaping_symlinks_are_found(lineage, tmp_path):
    wt = lineage.worktree
    lineage.prepare(lineage.seed)
    (wt / "sub").mkdir()
    (wt / "sub" / "file").write_text("x\n")
    (wt / "passwd").symlink_to("/etc/passwd")
    (wt / "sub" / "up").symlink_to("../../x")  # dangling, outside
    (wt / "inside").symlink_to("sub/file")
    (wt / "sub" / "sibling").symlink_to("../app.py")
    (wt / "absolute_inside").symlink_to(wt / "app.py")  # breaks once checked out elsewhere
    assert lineage.escaping_symlinks() == ["absolute_inside", "passwd", "sub/up"]


def test_a_tampered_dot_git_file_does_not_redirect_us(lineage, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    (other / "o.txt").write_text("o\n")
    git(other, "add", ".")
    git(other, "commit", "-q", "-m", "other")
    other_head = git(other, "rev-parse", "HEAD")
    dot_git = lineage.worktree / ".git"
    original = dot_git.read_text()
    lineage.prepare(lineage.seed)
    dot_git.write_text(f"gitdir: {other / '.git'}\n")
    (lineage.worktree / "app.py").write_text("edited\n")
    tree = lineage.stage()
    assert lineage.changed_paths(tree, lineage.seed) == ["app.py"]
    assert (
        git(other, "status", "--porcelain") == "" and git(other, "rev-parse", "HEAD") == other_head
    )
    for tamper in ("removed", "a folder", "a symlink"):
        remove(dot_git)
        if tamper == "a folder":
            dot_git.mkdir()
            (dot_git / "HEAD").write_text("ref: refs/heads/main\n")
        elif tamper == "a symlink":
            dot_git.symlink_to(other / ".git")
        lineage.prepare(lineage.seed)
        assert dot_git.is_file()
        assert (
            Path(dot_git.read_text().split(": ", 1)[1].strip()).resolve()
            == Path(original.split(": ", 1)[1].strip()).resolve()
        )
        assert git(lineage.worktree, "status", "--porcelain") == ""
    assert git(other, "status", "--porcelain") == ""


# --- commit messages ----------------------------------------------------------------------------


def test_commit_message_trailers_parse_with_git(repo):
    goal = "Make f faster\nwithout breaking\n\nFoo: bar\n---\nanything " + "long " * 20
    message = commit_message(goal, RUN, 3, 7, {"runtime_ms": 12.5, "tests_pass": 1})
    subject = message.splitlines()[0]
    assert subject.startswith("evolve v3: Make f faster without breaking Foo: bar")
    assert len(subject) <= 72 and subject.endswith("...")
    parsed = subprocess.run(
        ["git", "interpret-trailers", "--parse"],
        input=message,
        capture_output=True,
        text=True,
        check=True,
        cwd=repo,
    ).stdout
    assert parsed == (
        f"Evolve-Run: {RUN}\nEvolve-Version: v3\nEvolve-Iteration: 7\n"
        "Evolve-Score: runtime_ms=12.5, tests_pass=1.0\n"
    )
