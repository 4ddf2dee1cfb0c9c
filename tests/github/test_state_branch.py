"""The state branch on real git: a bare `origin` on disk and two clones standing for two jobs."""

from __future__ import annotations

import itertools
import json
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from freemad.github.state_branch import (
    CorruptState,
    StateBranch,
    StateConflict,
    StateError,
)
from freemad.store import SqliteStore
from freemad.store.run_folders import IssueRef
from tests.gittools import git, isolated_git  # noqa: F401 - isolated_git is autouse


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    """A bare repository with one commit on main, as a job's checkout would find on GitHub."""
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    seed = tmp_path / "seed"
    git(tmp_path, "init", "-q", "-b", "main", str(seed))
    (seed / "README.md").write_text("project\n")
    git(seed, "add", ".")
    git(seed, "commit", "-q", "-m", "first")
    git(seed, "push", "-q", str(bare), "main")
    return bare


def clone(origin: Path, where: Path) -> Path:
    git(origin.parent, "clone", "-q", str(origin), str(where))
    return where


@pytest.fixture
def job_a(origin: Path, tmp_path: Path) -> Path:
    return clone(origin, tmp_path / "job-a")


@pytest.fixture
def job_b(origin: Path, tmp_path: Path) -> Path:
    return clone(origin, tmp_path / "job-b")


def open_store(tmp_path: Path, name: str) -> SqliteStore:
    ticks = itertools.count(1_700_000_000)  # every call one second later: a stable newest-first
    return SqliteStore(tmp_path / name / "store.db", clock=lambda: float(next(ticks)))


@pytest.fixture
def store_a(tmp_path: Path):
    with open_store(tmp_path, "store-a") as opened:
        yield opened


@pytest.fixture
def store_b(tmp_path: Path):
    with open_store(tmp_path, "store-b") as opened:
        yield opened


def events_of(store: SqliteStore, run_id: str) -> list[tuple[int, str, dict]]:
    return [(e.seq, e.kind, e.data) for e in store.events(run_id)]


def branch_file(repo: Path, commit: str, path: str) -> bytes:
    return subprocess.run(
        ["git", "cat-file", "blob", f"{commit}:{path}"], cwd=repo, check=True, capture_output=True
    ).stdout


def remote_tip(origin: Path) -> str:
    return git(origin, "rev-parse", "refs/heads/freemad-state").strip()


def linear_history(origin: Path) -> list[str]:
    """The branch's commits, oldest first, after checking that none of them is a merge."""
    assert git(origin, "rev-list", "--merges", "freemad-state") == ""
    return git(origin, "rev-list", "--reverse", "freemad-state").split()


def test_save_then_load_in_another_clone(job_a, job_b, store_a, store_b):
    store_a.create_run("debate-1", "debate", {"question": "2+2?", "issue": None})
    store_a.append_many(
        "debate-1",
        [
            ("run_started", {"agents": ["a", "b"], "text": "naïve — ünïcode ✓"}),
            ("answer", {"agent": "a", "round": 0, "answer": "4", "nested": {"x": [1, 2.5, None]}}),
            ("run_finished", {"winner": "4"}),
        ],
    )
    store_a.update_run("debate-1", status="finished", summary={"winner": "4"})
    binary = bytes(range(256)) * 3
    store_a.put_artifact("debate-1", "transcript.json", b'{"rounds": []}\n')
    store_a.put_artifact("debate-1", "blob.bin", binary)
    store_a.put_artifact("debate-1", "same-bytes.bin", binary)

    pushed = StateBranch(job_a).save(store_a, ["debate-1"])

    state_b = StateBranch(job_b)
    assert state_b.pull() == pushed
    state_b.load(store_b)
    assert events_of(store_b, "debate-1") == events_of(store_a, "debate-1")
    row = store_b.run("debate-1")
    assert (row.kind, row.status, row.summary) == ("debate", "finished", {"winner": "4"})
    got = {
        ref.name: (ref.sha256, store_b.read_artifact(ref.artifact_id))
        for ref in store_b.artifacts("debate-1")
    }
    want = {
        ref.name: (ref.sha256, store_a.read_artifact(ref.artifact_id))
        for ref in store_a.artifacts("debate-1")
    }
    assert got == want
    assert got["blob.bin"][1] == binary

    state_b.load(store_b)  # again: nothing doubles
    assert events_of(store_b, "debate-1") == events_of(store_a, "debate-1")
    assert len(store_b.artifacts("debate-1")) == 3

    files = git(job_b, "ls-tree", "-r", "--name-only", pushed).split()
    sha = got["blob.bin"][0]
    assert sorted(files) == sorted(
        [
            "runs/debate-1/run.json",
            "runs/debate-1/events.jsonl",
            f"runs/debate-1/artifacts/{sha}",
            f"runs/debate-1/artifacts/{got['transcript.json'][0]}",
        ]
    )
    author = git(job_b, "log", "-1", "--format=%an <%ae>|%cn <%ce>", pushed).strip()
    assert author == "FREE-MAD <freemad@freemad.invalid>|FREE-MAD <freemad@freemad.invalid>"


def test_save_leaves_the_checkout_alone(job_a, store_a):
    (job_a / "README.md").write_text("an edit the user has not committed\n")
    (job_a / "staged.txt").write_text("staged\n")
    git(job_a, "add", "staged.txt")
    (job_a / "untracked.txt").write_text("untracked\n")

    def snapshot() -> tuple:
        return (
            git(job_a, "rev-parse", "HEAD"),
            git(job_a, "symbolic-ref", "HEAD"),
            git(job_a, "status", "--porcelain=v2", "--branch", "--untracked-files=all"),
            git(job_a, "diff"),
            git(job_a, "diff", "--cached"),
            git(job_a, "for-each-ref", "refs/heads", "refs/tags"),
            (job_a / ".git" / "index").read_bytes(),
            sorted(p.name for p in job_a.iterdir()),
            (job_a / "README.md").read_text(),
        )

    before = snapshot()
    store_a.create_run("task-1", "task", {})
    store_a.append("task-1", "started", {"n": 1})
    StateBranch(job_a).save(store_a, ["task-1"])
    assert snapshot() == before


def test_a_push_that_loses_the_race_is_redone_on_the_new_tip(
    origin, job_a, job_b, store_a, store_b
):
    store_a.create_run("run-a", "debate", {})
    store_a.append_many("run-a", [("one", {"by": "a"}), ("two", {"by": "a"})])
    store_b.create_run("run-b", "task", {})
    store_b.append("run-b", "one", {"by": "b"})
    waits: list[float] = []
    state_a = StateBranch(job_a, sleep=waits.append)
    state_b = StateBranch(job_b)
    pushed_b: list[str] = []
    fetch = state_a._fetch

    def fetch_then_b_pushes(repo):
        tip = fetch(repo)
        if not pushed_b:  # A has fetched; B saves and pushes before A pushes
            pushed_b.append(state_b.save(store_b, ["run-b"]))
        return tip

    state_a._fetch = fetch_then_b_pushes
    pushed_a = state_a.save(store_a, ["run-a"])

    assert len(waits) == 1  # rejected once, then redone on top of B's commit
    assert linear_history(origin) == [pushed_b[0], pushed_a]
    fresh = StateBranch(job_b)
    fresh.pull()
    with open_store(job_b.parent, "store-c") as store_c:
        fresh.load(store_c)
        assert events_of(store_c, "run-a") == events_of(store_a, "run-a")
        assert events_of(store_c, "run-b") == events_of(store_b, "run-b")


def test_retries_are_bounded(job_a, job_b, store_a, store_b):
    store_a.create_run("run-a", "debate", {})
    store_b.create_run("run-b", "debate", {})
    waits: list[float] = []
    state_a = StateBranch(job_a, retries=2, backoff=1.0, sleep=waits.append)
    state_b = StateBranch(job_b)
    fetch = state_a._fetch

    def someone_always_pushes_first(repo):
        tip = fetch(repo)
        store_b.append("run-b", "tick", {})
        state_b.save(store_b, ["run-b"])
        return tip

    state_a._fetch = someone_always_pushes_first
    with pytest.raises(StateError, match="in 3 attempts"):
        state_a.save(store_a, ["run-a"])
    assert len(waits) == 2
    assert 0.5 <= waits[0] <= 1.0 and 1.0 <= waits[1] <= 2.0  # jittered, growing


def test_two_jobs_racing_both_get_every_event_in(origin, tmp_path):
    def job(name: str) -> None:
        workdir = clone(origin, tmp_path / f"racer-{name}")
        state = StateBranch(workdir, retries=60, backoff=0.002)
        with open_store(tmp_path, f"racer-store-{name}") as store:
            store.create_run(f"run-{name}", "debate", {})
            for number in range(10):
                store.append(f"run-{name}", "step", {"job": name, "n": number})
                state.save(store, [f"run-{name}"])

    barrier = threading.Barrier(2)

    def start(name: str) -> None:
        barrier.wait()
        job(name)

    with ThreadPoolExecutor(2) as pool:
        for future in [pool.submit(start, "x"), pool.submit(start, "y")]:
            future.result()

    assert len(linear_history(origin)) == 20  # every save added a commit; none was lost
    reader = StateBranch(clone(origin, tmp_path / "reader"))
    reader.pull()
    with open_store(tmp_path, "reader-store") as store:
        reader.load(store)
        for name in ("x", "y"):
            assert events_of(store, f"run-{name}") == [
                (n, "step", {"job": name, "n": n}) for n in range(10)
            ]


def test_a_second_save_only_adds_lines(origin, job_a, store_a):
    store_a.create_run("run-1", "task", {})
    store_a.append_many("run-1", [("a", {"i": 0}), ("b", {"i": 1})])
    state = StateBranch(job_a)
    first = state.save(store_a, ["run-1"])
    store_a.append_many("run-1", [("c", {"i": 2}), ("d", {"i": 3})])
    store_a.update_run("run-1", status="waiting")
    second = state.save(store_a, ["run-1"])

    before = branch_file(origin, first, "runs/run-1/events.jsonl")
    after = branch_file(origin, second, "runs/run-1/events.jsonl")
    assert after.startswith(before) and after.count(b"\n") == 4
    assert b'"status": "waiting"' in branch_file(origin, second, "runs/run-1/run.json")
    assert state.save(store_a, ["run-1"]) == second  # nothing new: no commit
    assert linear_history(origin) == [first, second]


def test_lines_loaded_from_the_branch_stay_byte_for_byte(origin, job_a, job_b, store_a, store_b):
    store_a.create_run("run-1", "task", {})
    store_a.append("run-1", "a", {"i": 0})
    first = StateBranch(job_a).save(store_a, ["run-1"])
    state_b = StateBranch(job_b)
    state_b.pull()
    state_b.load(store_b)  # store B stamps its own times on these events
    store_b.append("run-1", "b", {"i": 1})
    second = state_b.save(store_b, ["run-1"])
    before = branch_file(origin, first, "runs/run-1/events.jsonl")
    assert branch_file(origin, second, "runs/run-1/events.jsonl").startswith(before)


def test_a_run_advanced_by_another_job_is_a_conflict(origin, job_a, job_b, store_a, store_b):
    store_a.create_run("run-1", "task", {})
    store_a.append_many("run-1", [("a", {}), ("b", {})])
    state_a = StateBranch(job_a)
    state_a.save(store_a, ["run-1"])
    state_b = StateBranch(job_b)
    state_b.pull()
    state_b.load(store_b)
    store_b.append("run-1", "answer", {"from": "b"})
    tip = state_b.save(store_b, ["run-1"])

    with pytest.raises(StateConflict, match="run run-1 has 3 events on origin/freemad-state but 2"):
        state_a.save(store_a, ["run-1"])
    store_a.append("run-1", "answer", {"from": "a"})  # as many events, but not the same
    with pytest.raises(StateConflict, match="differs at event 2"):
        state_a.save(store_a, ["run-1"])
    assert remote_tip(origin) == tip


def test_a_missing_branch_is_empty_state(origin, job_a, store_a):
    state = StateBranch(job_a)
    assert state.pull() is None
    assert state.runs() == []
    assert state.runs_for_issue("o/r", 1) == []
    state.load(store_a)
    assert store_a.runs() == []

    store_a.create_run("run-1", "task", {})
    state.save(store_a, ["run-1"])
    git(origin, "update-ref", "-d", "refs/heads/freemad-state")  # deleted on the remote
    assert state.pull() is None
    assert state.runs() == []


def test_a_garbage_line_is_one_clear_error(origin, job_a, job_b, store_a, store_b, tmp_path):
    store_a.create_run("run-1", "task", {})
    store_a.append_many("run-1", [("a", {}), ("b", {})])
    StateBranch(job_a).save(store_a, ["run-1"])
    editor = clone(origin, tmp_path / "editor")
    git(editor, "checkout", "-q", "freemad-state")
    with (editor / "runs" / "run-1" / "events.jsonl").open("a") as out:
        out.write("this is not json\n")
    git(editor, "commit", "-q", "-am", "garbage")
    git(editor, "push", "-q", "origin", "freemad-state")

    state_b = StateBranch(job_b)
    state_b.pull()
    with pytest.raises(CorruptState) as caught:
        state_b.load(store_b)
    message = caught.value.one_line()
    assert "runs/run-1/events.jsonl on origin/freemad-state, line 3" in message
    assert "Invalid JSON" in message
    assert "\n" not in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    with pytest.raises(CorruptState, match="line 3"):
        StateBranch(job_a).save(store_a, ["run-1"])


def test_runs_for_issue(job_a, job_b, store_a):
    store_a.create_run("first", "task", {"issue": {"repo": "octo/repo", "number": 12}})
    store_a.create_run("other", "task", {"issue": {"repo": "octo/repo", "number": 13}})
    store_a.create_run("unrelated", "debate", {})
    store_a.create_run("second", "task", {})
    store_a.create_run("third", "task", {"issue": {"repo": "octo/repo", "number": "12"}})
    state = StateBranch(job_a)
    state.save(store_a, ["first", "other", "unrelated", "third"])
    state.save(store_a, ["second", "third"], issue=IssueRef(repo="octo/repo", number=12))
    store_a.update_run("first", summary={"no": "issue any more"})
    state.save(store_a, ["first"])  # the issue recorded before stays

    reader = StateBranch(job_b)
    reader.pull()
    assert reader.runs_for_issue("Octo/Repo", 12) == ["third", "second", "first"]
    assert reader.runs_for_issue("octo/repo", 13) == ["other"]
    assert reader.runs_for_issue("octo/other", 12) == []
    assert {meta.run_id for meta in reader.runs()} == {
        "first",
        "other",
        "unrelated",
        "second",
        "third",
    }
    assert reader.runs()[0].run_id == "first"  # updated last


def test_a_push_refused_for_another_reason_is_not_retried(origin, job_a, store_a):
    hook = origin / "hooks" / "pre-receive"
    hook.write_text("#!/bin/sh\necho 'branch is protected' >&2\nexit 1\n")
    hook.chmod(0o755)
    store_a.create_run("run-1", "task", {})
    waits: list[float] = []
    with pytest.raises(StateError, match=r"was refused: .*pre-receive hook declined"):
        StateBranch(job_a, sleep=waits.append).save(store_a, ["run-1"])
    assert waits == []


def test_save_refuses_unknown_runs(job_a, store_a):
    from freemad.store import UnknownRun

    with pytest.raises(UnknownRun, match="nope"):
        StateBranch(job_a).save(store_a, ["nope"])


def test_a_shallow_checkout_saves_and_loads(origin, job_a, store_a, store_b, tmp_path):
    """actions/checkout clones with depth 1 by default."""
    store_a.create_run("run-1", "task", {})
    store_a.append("run-1", "a", {"i": 0})
    StateBranch(job_a).save(store_a, ["run-1"])
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth=1", f"file://{origin}", str(shallow))
    state = StateBranch(shallow)
    state.pull()
    state.load(store_b)
    store_b.append("run-1", "b", {"i": 1})
    pushed = state.save(store_b, ["run-1"])
    assert remote_tip(origin) == pushed
    assert git(shallow, "rev-parse", "--is-shallow-repository").strip() == "true"
    assert len(linear_history(origin)) == 2


def test_loading_keeps_what_the_store_has_beyond_the_branch(job_a, job_b, store_a, store_b):
    store_a.create_run("run-1", "task", {})
    store_a.append("run-1", "a", {"i": 0})
    StateBranch(job_a).save(store_a, ["run-1"])
    store_a.append("run-1", "b", {"i": 1})  # not saved yet
    store_a.update_run("run-1", status="running")
    state = StateBranch(job_a)
    state.load(store_a)
    assert [e.kind for e in store_a.events("run-1")] == ["a", "b"]
    assert store_a.run("run-1").status == "running"

    store_b.create_run("run-1", "task", {})
    store_b.append("run-1", "something else", {})
    with pytest.raises(StateConflict, match="differs at event 0"):
        state.load(store_b)


def test_a_damaged_run_json_or_an_unreachable_remote_is_a_clear_error(
    origin, job_a, store_a, tmp_path
):
    store_a.create_run("run-1", "task", {})
    StateBranch(job_a).save(store_a, ["run-1"])
    editor = clone(origin, tmp_path / "editor")
    git(editor, "checkout", "-q", "freemad-state")
    (editor / "runs" / "run-1" / "run.json").write_text('{"run_id": "run-1", "kind": 7}\n')
    git(editor, "commit", "-q", "-am", "damage")
    git(editor, "push", "-q", "origin", "freemad-state")
    state = StateBranch(job_a)
    state.pull()
    with pytest.raises(CorruptState, match=r"runs/run-1/run.json on origin/freemad-state: kind"):
        state.runs()

    with pytest.raises(StateError, match="cannot fetch nowhere/freemad-state"):
        StateBranch(job_a, remote="nowhere").pull()
    with pytest.raises(StateError, match="is not a git repository"):
        StateBranch(tmp_path / "not-a-repo").pull()


def test_a_debate_s_progress_while_it_ran_is_not_published(
    job_a, job_b, store_a, store_b, tmp_path
):
    """The events a debate keeps while it runs (for a dashboard on the job's store) stay in the
    job: the branch has its run and transcript, as before; saving again changes nothing."""
    from tests.github.payloads import labeled_issue
    from tests.github.routers import debate_config, router

    routed, _ = router(debate_config(), store_a, tmp_path)
    run_id = routed.handle("issues", labeled_issue("freemad:debate")).run_id
    assert len(store_a.events(run_id)) > 1

    pushed = StateBranch(job_a).save(store_a, [run_id])

    lines = branch_file(job_a, pushed, f"runs/{run_id}/events.jsonl").decode().splitlines()
    [finished] = [json.loads(line) for line in lines]
    assert (finished["seq"], finished["kind"]) == (0, "debate_finished")
    meta = json.loads(branch_file(job_a, pushed, f"runs/{run_id}/run.json"))
    assert meta["status"] == "completed" and "runner" not in meta["summary"]
    assert StateBranch(job_a).save(store_a, [run_id]) == pushed  # nothing new to say

    state_b = StateBranch(job_b)
    state_b.pull()
    state_b.load(store_b)
    assert [(e.seq, e.kind) for e in store_b.events(run_id)] == [(0, "debate_finished")]
    assert store_b.events(run_id)[0].data == finished["data"]
