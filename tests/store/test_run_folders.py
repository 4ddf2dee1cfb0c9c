"""Run folders, the state branch's layout: what the writer's lines read back as, what the strict
reader refuses, and what the loose reader of a checkout still shows. The branch itself (git,
pushes, races) is tests/github/test_state_branch.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from freemad.store import StoredEvent
from freemad.store.run_folders import (
    CorruptFolder,
    IssueRef,
    RunFile,
    artifact_file_of,
    event_line,
    events_file_of,
    issue_of,
    loose_artifacts,
    loose_events,
    loose_folders,
    loose_goal,
    loose_time,
    parse_folder,
    run_file_bytes,
    run_file_of,
)

SHA = "ab" * 32
WHERE = "origin/freemad-state"


def meta(run_id: str = "run-1", **fields: object) -> RunFile:
    values: dict[str, object] = {
        "run_id": run_id,
        "kind": "task",
        "status": "waiting",
        "created_at": 1.0,
        "updated_at": 2.5,
        "summary": {"goal": "Plan it."},
        **fields,
    }
    return RunFile.model_validate(values)


def lines(*events: tuple[str, dict[str, object]]) -> bytes:
    return b"".join(
        event_line(StoredEvent("run-1", seq, 10.0 + seq, kind, data))
        for seq, (kind, data) in enumerate(events)
    )


def test_the_layout_names_each_file_of_a_run() -> None:
    assert run_file_of("run-1") == "runs/run-1/run.json"
    assert events_file_of("run-1") == "runs/run-1/events.jsonl"
    assert artifact_file_of("run-1", SHA) == f"runs/run-1/artifacts/{SHA}"


def test_what_the_writer_writes_the_strict_reader_reads_back() -> None:
    written = meta(issue=IssueRef(repo="octo/repo", number=12))
    events = lines(("task_created", {"goal": "Plan it."}), ("stage_started", {"stage": "plan"}))
    folder = parse_folder("run-1", run_file_bytes(written), events, WHERE)
    assert folder.meta == written and folder.events_text == events
    assert [(e.seq, e.kind, e.data) for e in folder.events] == [
        (0, "task_created", {"goal": "Plan it."}),
        (1, "stage_started", {"stage": "plan"}),
    ]
    assert parse_folder("run-1", run_file_bytes(meta()), None, WHERE).events == []
    assert issue_of({"issue": {"repo": "octo/repo", "number": 12}}) == IssueRef(
        repo="octo/repo", number=12
    )
    assert issue_of({"issue": "#12"}) is None and issue_of({}) is None


@pytest.mark.parametrize(
    ("run_json", "events", "message"),
    [
        (None, b"", "runs/run-1 on origin/freemad-state is not a run folder: it has no run.json"),
        (
            b'{"run_id": "run-1", "kind": 7}',
            b"",
            "runs/run-1/run.json on origin/freemad-state: kind",
        ),
        (run_file_bytes(meta("run-2")), b"", "names another run, run-2"),
        (run_file_bytes(meta()), lines(("a", {}))[:-1], "does not end with a newline"),
        (run_file_bytes(meta()), b"{}\n", "events.jsonl on origin/freemad-state, line 1: seq"),
        (
            run_file_bytes(meta()),
            lines(("a", {})) + lines(("b", {})),
            "line 2: seq is 0, not 1",
        ),
    ],
)
def test_the_strict_reader_refuses_what_freemad_would_not_write(
    run_json: bytes | None, events: bytes, message: str
) -> None:
    with pytest.raises(CorruptFolder, match=message):
        parse_folder("run-1", run_json, events, WHERE)


def test_the_loose_reader_shows_what_a_checkout_still_holds(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for name in ("run-2", "run-1", ".hidden", "bad name"):
        (runs / name).mkdir(parents=True)
    (runs / "stray.txt").write_text("not a folder")
    assert [p.name for p in loose_folders(tmp_path)] == ["run-1", "run-2"]
    assert list(loose_folders(tmp_path / "elsewhere")) == []

    good = json.dumps({"seq": 0, "time": 5, "kind": "task_created", "data": {"n": 1}})
    timeless = json.dumps({"kind": "stage_started", "data": {}})
    (runs / "run-1" / "events.jsonl").write_text(
        "\n".join([good, "not json", '{"kind": 3, "data": {}}', timeless, "[1]"]) + "\n"
    )
    assert loose_events(runs / "run-1") == [
        ("task_created", {"n": 1}, 5.0),
        ("stage_started", {}, 0.0),
    ]
    assert loose_events(runs / "run-2") == []  # no events.jsonl: nothing, no error

    listed = {
        "summary": {"goal": "Plan it."},
        "artifacts": [
            {"name": "plan.md", "size": 7, "sha256": SHA},
            {"name": "escape", "size": 1, "sha256": "../../etc/passwd"},
            "not an entry",
        ],
    }
    assert loose_artifacts(listed) == [("plan.md", 7, SHA)]
    assert loose_goal(listed) == "Plan it." and loose_goal({"summary": "text"}) == ""
    assert loose_time(2.5) == 2.5 and loose_time(True) == 0.0 and loose_time("3") == 0.0
