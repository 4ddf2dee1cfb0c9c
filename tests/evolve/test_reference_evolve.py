"""The reference implementation's evolve toy config loads: each of its spellings is read as ours
with a one-line warning (variation.kind, gates and targets as mappings, exit_code stages without
provides, worker_budget.max_minutes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from freemad.config import load_config, parse_config
from freemad.config.legacy import upgrade
from tests.conftest import reference_file

FREEMAD = str(Path(sys.executable).parent / "freemad")


def test_the_reference_evolve_config_is_read_as_ours() -> None:
    path = reference_file("upstream-evolve", "evolve.yaml")
    said: list[str] = []
    evolve = load_config(path, warn=said.append).evolve
    assert evolve is not None
    assert evolve.variation.mode == "single_agent" and evolve.variation.agent_id == "worker"
    assert evolve.judge.gate == ["ops_per_sec > 0"]
    assert evolve.stop.target == ["ops_per_sec >= 100000"]
    assert evolve.judge.stages[0].provides == ["tests"]
    assert evolve.judge.stages[1].provides == ["ops_per_sec"]
    assert evolve.worker_budget.timeout_sec == 600
    assert evolve.judge.protected_paths == ["bench.py", "tests"]
    assert [line.split(": ", 2)[1] for line in said] == [
        "evolve.variation.kind",
        "evolve.judge.stages[0]",
        "evolve.judge.gate[0]",
        "evolve.stop.target[0]",
        "evolve.worker_budget.max_minutes",
    ]
    assert all(line.startswith(f"{path} line ") for line in said)
    assert "read as evolve.variation.mode" in said[0]
    assert "read as 'ops_per_sec > 0'" in said[2]
    assert "read as evolve.worker_budget.timeout_sec: 600" in said[4]


def test_evolve_validate_gets_past_the_config(tmp_path: Path) -> None:
    """In place the toy's repository (its own folder) is no git repository; what matters here is
    that the config itself no longer stops validate, and that every spelling was said."""
    path = reference_file("upstream-evolve", "evolve.yaml")
    done = subprocess.run(
        [FREEMAD, "evolve", "validate", "--config", str(path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    warnings = [line for line in done.stderr.splitlines() if line.startswith("freemad: warning:")]
    assert len(warnings) == 5, done.stderr
    # A config error would be one line naming the file; whatever else validate finds is not.
    assert not any(line.startswith(f"freemad: error: {path}") for line in done.stderr.splitlines())
    assert "unknown key" not in done.stderr and "required key" not in done.stderr


def test_a_mapping_predicate_keeps_its_number_exactly() -> None:
    data, notes = upgrade(
        {
            "evolve": {
                "judge": {"gate": [{"component": "x", "op": "<", "value": 0.1}, "y > 1"]},
                "stop": {"target": [{"component": "x", "op": ">=", "value": 123456789}]},
            }
        }
    )
    assert data["evolve"]["judge"]["gate"] == ["x < 0.1", "y > 1"]
    assert data["evolve"]["stop"]["target"] == ["x >= 123456789"]
    assert len(notes) == 2


def test_a_stage_name_that_is_no_component_name_is_made_one() -> None:
    text = """\
agents:
  - {id: worker, cli_command: tool}
security: {cli_allowed_commands: [tool]}
evolve:
  variation: {mode: single_agent, agent_id: worker}
  judge:
    stages:
      - {name: unit-tests, command: pytest}
      - {name: 2nd, command: pytest}
    comparator:
      - {component: unit_tests, direction: maximize}
"""
    said: list[str] = []
    evolve = parse_config(text, warn=said.append).evolve
    assert evolve is not None
    assert [s.provides for s in evolve.judge.stages] == [["unit_tests"], ["_2nd"]]
    assert len(said) == 2
