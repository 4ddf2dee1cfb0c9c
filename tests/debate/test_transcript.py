"""Transcripts on disk: fields, formats, names that never collide, and redaction."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from freemad.config.models import OutputConfig
from freemad.debate import run_debate, write_transcript
from freemad.redact import RedactingFilter, Redactor
from tests.conftest import ScriptedAgent, generation, keep, scripted_config

SECRET = "sk-test-0123456789abcdef"


def debate(requirement: str = "q", **sections):
    ports = {
        "x": ScriptedAgent("x").script(generation(f"A uses {SECRET}"), keep()),
        "y": ScriptedAgent("y").script(generation("B"), keep()),
    }
    return run_debate(requirement, scripted_config(ports, **sections), rounds=1, agents=ports)


def test_json_transcript_has_the_reference_fields_and_ours(tmp_path: Path) -> None:
    result = debate()
    path = write_transcript(result, OutputConfig(transcript_dir=str(tmp_path)), Redactor([]))
    data = json.loads(path.read_text())
    for key in [
        "final_answer_id",
        "final_solution",
        "scores",
        "raw_scores",
        "score_explainers",
        "winning_agents",
        "origin_agents",
        "holders_history",
        "validation",
        "validator_confidence",
        "metrics",
        "early_stop_reason",
        "transcript",
        "run_id",
        "requirement",
        "config_digest",
        "started_at",
        "finished_at",
    ]:
        assert key in data, key
    turn = data["transcript"][1]["agents"]["x"]
    assert {"duration_ms", "tokens", "exit_status", "peers_assigned", "peers_seen"} <= set(turn)
    assert data["transcript"][1]["topology_info"] == {"x": ["y"], "y": ["x"]}
    assert data["agents"]["x"]["calls"] == 2
    assert path.name.startswith("transcript-") and path.suffix == ".json"
    assert not list(tmp_path.glob(".tmp-*")), "no temporary file is left behind"


def test_names_never_collide(tmp_path: Path) -> None:
    result = debate()
    output = OutputConfig(transcript_dir=str(tmp_path))
    paths = {write_transcript(result, output, Redactor([])) for _ in range(3)}
    assert len(paths) == 3
    assert all(json.loads(p.read_text())["run_id"] == result.run_id for p in paths)


def test_markdown_transcript_shows_winner_scores_and_rounds(tmp_path: Path) -> None:
    result = debate("Write | a <b>table</b> breaker")
    output = OutputConfig(transcript_dir=str(tmp_path), format="markdown")
    text = write_transcript(result, output, Redactor([])).read_text()
    assert f"## Winner `{result.final_answer_id}`" in text
    assert "### Why the winner won" in text and "### Round 1 (critique)" in text
    assert "Write | a <b>table</b> breaker" in text


def test_redaction_applies_to_transcripts(tmp_path: Path) -> None:
    result = debate(f"use the key {SECRET}")
    redactor = Redactor([r"sk-test-[0-9a-f]+"])
    path = write_transcript(result, OutputConfig(transcript_dir=str(tmp_path)), redactor)
    text = path.read_text()
    assert SECRET not in text
    assert "[REDACTED]" in text
    assert result.requirement.endswith(SECRET), "the in-memory result is untouched"


def test_redaction_applies_to_logs(caplog) -> None:
    logger = logging.getLogger("freemad.test.redact")
    logger.addFilter(RedactingFilter(Redactor([r"sk-test-[0-9a-f]+"])))
    with caplog.at_level(logging.WARNING, logger="freemad.test.redact"):
        logger.warning("agent said %s", SECRET)
    assert SECRET not in caplog.text and "[REDACTED]" in caplog.text
