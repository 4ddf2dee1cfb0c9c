"""Transcript format 2 (each answer text once) and format 1 (fixtures/transcript-format1.json,
written by the code before format 2) read alike through every reader, and format 2 stays small."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from freemad.config.models import OutputConfig
from freemad.dashboard.reading.sources import TranscriptDir
from freemad.dashboard.static_site import build_site
from freemad.dashboard.views.agent_views import debate_record
from freemad.dashboard.views.debate_views import debate_view
from freemad.dashboard.views.run_views import debate_facts
from freemad.debate import DebateResult, run_debate, write_transcript
from freemad.debate.transcript import render_markdown, transcript_data
from freemad.debate.transcript_format import FORMAT, expand
from freemad.eval.methods import trajectory
from freemad.eval.rescore import read_transcripts
from freemad.github.comments import render_debate
from freemad.redact import Redactor
from tests.conftest import ScriptedAgent, generation, keep, scripted_config

OLD = Path(__file__).with_name("fixtures") / "transcript-format1.json"


def old_and_new() -> tuple[dict[str, Any], dict[str, Any]]:
    old = json.loads(OLD.read_text(encoding="utf-8"))
    full = DebateResult.model_validate(copy.deepcopy(old))
    new = transcript_data(full, Redactor([]))
    return old, new


def test_the_old_fixture_is_format_1_and_the_new_shape_says_format_2() -> None:
    old, new = old_and_new()
    assert "format" not in old and new["format"] == FORMAT == 2
    assert new["final_solution"] == old["final_solution"]  # a field the reference's readers know
    assert "text" in next(iter(new["answers"].values()))
    turns = [t for r in new["transcript"] for t in r["agents"].values() if t.get("response")]
    assert turns and all("solution" not in t["response"] for t in turns)


def as_of_format_1(data: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """`data` without the fields added since the fixture was written that hold their default."""
    defaults = {
        name: field.get_default(call_default_factory=True)
        for name, field in DebateResult.model_fields.items()
    }
    return {k: v for k, v in data.items() if k in old or k not in defaults or v != defaults[k]}


def test_format_2_expands_to_exactly_the_old_transcript() -> None:
    old, new = old_and_new()
    assert as_of_format_1(expand(new), old) == old
    assert expand(old) == old  # format 1 passes through unchanged
    assert as_of_format_1(expand(expand(new)), old) == old


def test_the_transcript_model_reads_both_formats_alike() -> None:
    old, new = old_and_new()
    from_old, from_new = DebateResult.model_validate(old), DebateResult.model_validate(new)
    assert from_old == from_new
    assert DebateResult.model_validate_json(json.dumps(new)) == from_old
    # The readers over the model: eval's trajectory, the GitHub comment.
    assert trajectory(from_old) == trajectory(from_new)
    assert render_debate(from_old, None) == render_debate(from_new, None)


def test_the_dashboard_views_and_markdown_read_both_formats_alike() -> None:
    old, new = old_and_new()
    assert debate_view(new) == debate_view(old)
    assert debate_facts(expand(new)) == debate_facts(old)
    assert debate_record(expand(new), "r", 0.0) == debate_record(old, "r", 0.0)
    assert render_markdown(expand(new)) == render_markdown(old)
    assert debate_view(old)["final_solution"] == "def f():\n    return 2"


def test_the_site_and_rescore_read_both_formats_from_disk(tmp_path: Path) -> None:
    old, new = old_and_new()
    pages = {}
    for name, data in (("old", old), ("new", new)):
        folder = tmp_path / name / "transcripts"
        folder.mkdir(parents=True)
        (folder / "transcript-20261201T000000Z-0123456789ab.json").write_text(json.dumps(data))
        out = tmp_path / name / "site"
        build_site([TranscriptDir(folder, lambda _: None)], out, warn=lambda _: None)
        pages[name] = (out / "runs" / f"{old['run_id']}.html").read_text(encoding="utf-8")
        [(_, result)] = read_transcripts(folder)
        assert result == DebateResult.model_validate(old)
    assert pages["new"] == pages["old"]
    assert "return 2" in pages["new"]


def test_a_malformed_format_2_transcript_expands_without_raising() -> None:
    broken = {
        "format": 2,
        "answers": {"x": {"variants": "no"}},
        "transcript": [{"agents": {"a": {"answer_id": "gone", "response": {"variant": 7}}}}, 3],
    }
    full = expand(broken)
    assert full["transcript"][0]["agents"]["a"]["response"]["solution"] == ""


def keeping_debate(agents: int, answer_chars: int, rounds: int) -> DebateResult:
    """`agents` agents, each proposing its own answer of `answer_chars` and keeping it."""
    ports = {}
    for i in range(agents):
        line = f"# answer of agent {i:02d}, padded to a fixed size. "
        solution = (line * (answer_chars // len(line) + 1))[:answer_chars]
        ports[f"a{i:02d}"] = ScriptedAgent(f"a{i:02d}").script(
            generation(solution), *[keep() for _ in range(rounds)]
        )
    config = scripted_config(ports, budget={"max_concurrent_agents": agents})
    return run_debate("q", config, rounds=rounds, agents=ports)


@pytest.mark.parametrize("rounds", [2])
def test_sixteen_agents_keeping_20kb_answers_write_under_twice_the_answers(
    tmp_path: Path, rounds: int
) -> None:
    result = keeping_debate(16, 20_000, rounds)
    distinct = sum(len(r.variants[0].text.encode()) for r in result.answers.values())
    assert len(result.answers) == 16 and distinct >= 16 * 19_000
    path = write_transcript(result, OutputConfig(transcript_dir=str(tmp_path)), Redactor([]))
    written = path.stat().st_size
    assert written < 2 * distinct, written / distinct
    old_shape = json.dumps(transcript_data(result, Redactor([]), compacted=False), indent=2)
    assert len(old_shape.encode()) > 4 * distinct  # what format 1 wrote: every answer 5 times
    assert DebateResult.model_validate_json(path.read_bytes()) == result.model_copy(
        update={"transcript_path": None}
    )
