"""Artifacts: content-addressed files, idempotent puts, hash verification on read."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from freemad.store import ArtifactCorrupt, SqliteStore, StoreError


def test_put_and_read_back(store: SqliteStore) -> None:
    store.create_run("r", "task", {})
    content = b"diff --git a/x b/x\n" * 20
    ref = store.put_artifact("r", "patch.diff", content)
    digest = hashlib.sha256(content).hexdigest()
    assert (ref.run_id, ref.name, ref.sha256, ref.size) == ("r", "patch.diff", digest, len(content))
    assert Path(ref.path) == store.artifacts_dir / "r" / digest[:2] / digest
    assert Path(ref.path).read_bytes() == content
    assert store.artifact(ref.artifact_id) == ref
    assert store.read_artifact(ref.artifact_id) == content
    assert store.artifacts("r") == [ref]
    assert store.artifact("nope") is None


def test_same_put_twice_writes_nothing_new(store: SqliteStore) -> None:
    store.create_run("r", "task", {})
    first = store.put_artifact("r", "log.txt", b"hello")
    mtime = Path(first.path).stat().st_mtime_ns
    again = store.put_artifact("r", "log.txt", b"hello")
    assert again == first
    assert store.artifacts("r") == [first]
    assert Path(first.path).stat().st_mtime_ns == mtime
    files = [p for p in store.artifacts_dir.rglob("*") if p.is_file()]
    assert files == [Path(first.path)]


def test_same_content_under_two_names_shares_one_file(store: SqliteStore) -> None:
    store.create_run("r", "task", {})
    a = store.put_artifact("r", "a.txt", b"same")
    b = store.put_artifact("r", "b.txt", b"same")
    changed = store.put_artifact("r", "a.txt", b"changed")
    assert a.artifact_id != b.artifact_id
    assert a.path == b.path
    assert changed.path != a.path
    assert [ref.name for ref in store.artifacts("r")] == ["a.txt", "b.txt", "a.txt"]


def test_tampered_or_missing_file_is_refused(store: SqliteStore) -> None:
    store.create_run("r", "task", {})
    ref = store.put_artifact("r", "plan.md", b"# the plan")
    Path(ref.path).write_bytes(b"# a different plan")
    with pytest.raises(ArtifactCorrupt, match="does not match its recorded sha256"):
        store.read_artifact(ref.artifact_id)
    Path(ref.path).unlink()
    with pytest.raises(StoreError, match="is missing"):
        store.read_artifact(ref.artifact_id)
    with pytest.raises(StoreError, match="unknown artifact"):
        store.read_artifact("nope")


def test_putting_again_repairs_a_damaged_file(store: SqliteStore) -> None:
    store.create_run("r", "task", {})
    ref = store.put_artifact("r", "plan.md", b"# the plan")
    Path(ref.path).write_bytes(b"garbage")
    assert store.put_artifact("r", "plan.md", b"# the plan") == ref
    assert store.read_artifact(ref.artifact_id) == b"# the plan"


def test_no_temporary_files_are_left(store: SqliteStore) -> None:
    store.create_run("r", "task", {})
    for i in range(5):
        store.put_artifact("r", f"{i}.bin", bytes([i]) * 1000)
    names = [p.name for p in store.artifacts_dir.rglob("*") if p.is_file()]
    assert len(names) == 5
    assert not [n for n in names if n.startswith(".tmp-")]


def test_artifacts_folder_can_be_chosen(tmp_path: Path) -> None:
    with SqliteStore(tmp_path / "db" / "s.db", tmp_path / "elsewhere") as store:
        store.create_run("r", "task", {})
        ref = store.put_artifact("r", "x", b"x")
    assert Path(ref.path).is_relative_to(tmp_path / "elsewhere")
    assert not (tmp_path / "db" / "artifacts").exists()
