"""The reference implementation's remaining evolve settings on the toy, as a user runs it:
`freemad evolve validate|start|inspect|status|report` on a copy of examples/evolve_toy, its
agents the real freemad-evolve-mock processes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import needs_bwrap
from tests.evolve.runs import git
from tests.evolve.test_cli_evolve import GOAL, freemad, repository_of

pytestmark = needs_bwrap


def toy_config(tmp_path: Path, config_file: str, evolve: dict[str, Any], **agents: Any) -> Path:
    """The toy with `evolve` merged into its config's evolve section (one level deep) and
    `agents` merged into each agent, committed."""
    toy = repository_of("evolve_toy", tmp_path / "toy")
    config = yaml.safe_load((toy / config_file).read_text())
    for key, value in evolve.items():
        section = config["evolve"].get(key)
        if isinstance(value, dict) and isinstance(section, dict):
            section.update(value)
        else:
            config["evolve"][key] = value
    for agent in config["agents"]:
        agent.update(agents)
    (toy / config_file).write_text(yaml.safe_dump(config))
    git(toy, "-c", "user.name=u", "-c", "user.email=u@u", "commit", "-qam", "settings")
    return toy


def events(toy: Path, config_file: str, run_id: str, kind: str) -> list[dict[str, Any]]:
    shown = json.loads(freemad("evolve", "inspect", run_id, "-c", config_file, cwd=toy).stdout)
    return [e["data"] for e in shown["events"] if e["kind"] == kind]


def test_the_toy_on_its_own_branch_prefix_with_one_agent_intervening(tmp_path: Path) -> None:
    toy = toy_config(
        tmp_path,
        "evolve.yaml",
        {
            "run_branch_prefix": "toy-runs/evolve",
            "supervisor": {"intervention": "single_agent"},
            "stop": {"max_total_cost_usd": 5.0},
        },
    )
    validated = freemad("evolve", "validate", "-c", "evolve.yaml", cwd=toy)
    warning = "warning: evolve.stop.max_total_cost_usd is set, but agent(s) worker, planner-a, "
    assert warning in validated.stdout and "cannot be enforced" in validated.stdout

    started = freemad("evolve", "start", "-c", "evolve.yaml", "--json", GOAL, cwd=toy)
    run = json.loads(started.stdout)
    run_id = run["run_id"]
    assert run["stop_reason"] == "target" and run["cost_usd"] == 0.0  # nobody has pricing
    assert run["branch"] == f"toy-runs/evolve/{run_id}"
    tip = git(toy, "rev-parse", f"toy-runs/evolve/{run_id}")
    assert tip == run["incumbent"]["commit"]
    assert git(toy, "branch", "--list", "freemad/*") == ""
    [created] = events(toy, "evolve.yaml", run_id, "run_created")
    assert created["branch_prefix"] == "toy-runs/evolve"

    # The toy's stall (iterations 2 and 3 rejected) is answered by the worker alone.
    [intervention] = events(toy, "evolve.yaml", run_id, "intervention")
    assert (intervention["intervention"], intervention["agents"]) == ("single_agent", ["worker"])
    assert intervention["directions"] and intervention["error"] is None

    report = freemad("evolve", "report", run_id, "-c", "evolve.yaml", cwd=toy).stdout
    assert f"toy-runs/evolve/{run_id}" in report


def test_the_toy_debate_among_chosen_agents_stops_at_its_cost_cap(tmp_path: Path) -> None:
    pricing = {"input_per_mtok": 100.0, "output_per_mtok": 100.0}
    toy = toy_config(
        tmp_path,
        "evolve.debate.yaml",
        {
            "variation": {"debate_agent_ids": ["planner-b", "worker"]},
            "stop": {"max_total_cost_usd": 0.5, "target": []},
        },
        pricing=pricing,
    )
    validated = freemad("evolve", "validate", "-c", "evolve.debate.yaml", cwd=toy)
    assert "max_total_cost_usd" not in validated.stdout  # every agent is priced

    started = freemad("evolve", "start", "-c", "evolve.debate.yaml", "--json", GOAL, cwd=toy)
    run = json.loads(started.stdout)
    assert run["stop_reason"] == "max_total_cost" and run["cost_usd"] >= 0.5
    proposed = events(toy, "evolve.debate.yaml", run["run_id"], "candidate_proposed")
    assert proposed and all(p["debate_agents"] == ["worker", "planner-b"] for p in proposed)
    assert {p["agent"] for p in proposed} <= {"worker", "planner-b"}
    costs = [p["cost_usd"] for p in proposed] + [
        i["cost_usd"] for i in events(toy, "evolve.debate.yaml", run["run_id"], "intervention")
    ]
    assert all(cost > 0 for cost in costs)
    assert round(sum(costs), 6) == run["cost_usd"]
    assert run["cost_usd"] - proposed[-1]["cost_usd"] < 0.5  # the last iteration crossed it
    assert run["iterations_judged"] < 8  # the toy's max_iterations was not what stopped it
