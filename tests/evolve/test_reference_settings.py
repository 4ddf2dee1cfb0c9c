"""The reference implementation's remaining evolve settings, each on a real run (a git
repository in a tmp folder, the real judge, the SQLite store, workers that record what they are
sent): run_branch_prefix, variation.debate_agent_ids, supervisor.intervention,
context_budget_chars and stop.max_total_cost_usd."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from freemad.agents.agent_port import CallRequest, CallResult, CallStatus
from freemad.config import FreemadConfig, parse_config
from freemad.core.evolve.fold import Status
from freemad.errors import ConfigError
from freemad.evolve.call_costs import cap_warning
from freemad.tasks.task_protocol import MARKER
from tests.conftest import make_config
from tests.evolve.runs import (
    Harness,
    Worker,
    calc,
    evolve_config,
    evolve_section,
    git,
    harness,
    make_repo,
    request_of,
)


@dataclass
class Recorder(Worker):
    """A worker that also keeps every prompt it is sent, debates included."""

    prompts: list[str] = field(default_factory=list)

    async def call(self, request: CallRequest) -> CallResult:
        self.prompts.append(request.prompt)
        return await super().call(request)

    @property
    def debate_prompts(self) -> list[str]:
        return [p for p in self.prompts if MARKER not in p]


def again(h: Harness, workers: list[Worker], config: FreemadConfig) -> Harness:
    """Another runner (as a later process would be) over the same repository and store."""
    return harness(h.root, workers, config)


# --- run_branch_prefix ------------------------------------------------------------------------


def test_the_prefix_names_the_branch_and_a_resume_under_another_prefix_keeps_it(
    tmp_path: Path,
) -> None:
    make_repo(tmp_path / "repo")
    worker = Worker("worker", [calc(40), calc(30)])
    first = harness(
        tmp_path,
        [worker],
        evolve_config(run_branch_prefix="team.x/evolve-runs", stop={"max_iterations": 1}),
    )
    state = first.runner.start("faster")
    run = state.run_id
    [created] = first.events(run, "run_created")
    assert created["branch_prefix"] == "team.x/evolve-runs"
    assert state.branch == created["branch"] == f"team.x/evolve-runs/{run}"
    assert git(first.repo, "rev-parse", state.branch) == state.versions[-1].commit
    assert git(first.repo, "branch", "--list", "freemad/*") == ""

    # The config's prefix changed since: the run's branch is the one its start recorded.
    later = again(
        first,
        [worker],
        evolve_config(run_branch_prefix="elsewhere", stop={"max_iterations": 2}),
    )
    state = later.runner.resume(run)
    assert state.stop_reason == "max_iterations" and state.versions[-1].version == 2
    assert git(later.repo, "rev-parse", f"team.x/evolve-runs/{run}") == state.versions[-1].commit
    assert git(later.repo, "branch", "--list", "elsewhere/*") == ""


def test_the_guard_watches_the_prefixed_branch(tmp_path: Path) -> None:
    """A worker (or anyone) moving the run's prefixed branch is found, undone and named."""
    make_repo(tmp_path / "repo")
    worker = Worker("worker", [calc(40), calc(30)])
    config = evolve_config(run_branch_prefix="mine", stop={"max_iterations": 1})
    h = harness(tmp_path, [worker], config)
    state = h.runner.start("faster")
    branch, admitted = f"mine/{state.run_id}", state.versions[-1].commit
    git(h.repo, "update-ref", f"refs/heads/{branch}", state.seed_commit)

    state = again(h, [worker], evolve_config(stop={"max_iterations": 2})).runner.resume(
        state.run_id
    )
    assert state.stop_reason == "tampered"
    assert state.error is not None and f"branch {branch} is " in state.error
    assert git(h.repo, "rev-parse", branch) == admitted


def test_a_run_from_before_prefixes_keeps_the_default_branch(tmp_path: Path) -> None:
    """A run whose start recorded no prefix (an older FREE-MAD) is found on freemad/evolve/."""
    make_repo(tmp_path / "repo")
    worker = Worker("worker", [calc(40), calc(30)])
    h = harness(tmp_path, [worker], evolve_config(stop={"max_iterations": 1}))
    state = h.runner.start("faster")
    [created] = h.events(state.run_id, "run_created")
    assert created["branch_prefix"] == "freemad/evolve"
    assert git(h.repo, "rev-parse", f"freemad/evolve/{state.run_id}") == state.versions[-1].commit


HOSTILE_PREFIXES = [
    "",
    "a..b",
    "two words",
    "-delete",
    "--force",
    "a~1",
    "a^",
    "a:b",
    "a?",
    "a*",
    "a[b",
    "a\\b",
    "a/",
    "/a",
    "a//b",
    "a.lock",
    "a/b.lock/c",
    "a/.hidden",
    ".a",
    "a.",
    "a@{1}",
    "tab\there",
    "line\nbreak",
    "nul\x01",
    "caf\u00e9",
    "x" * 101,
    "a/../../b",
]


@pytest.mark.parametrize("prefix", HOSTILE_PREFIXES)
def test_a_hostile_prefix_is_a_one_line_config_error(prefix: str) -> None:
    with pytest.raises(ConfigError) as caught:
        evolve_config(run_branch_prefix=prefix)
    message = caught.value.one_line()
    assert "evolve.run_branch_prefix" in message and "git branch name" in message
    assert "\n" not in message


@pytest.mark.parametrize("prefix", ["freemad/evolve", "team.x/evolve-runs", "a", "A_b/c-d.e"])
def test_a_fair_prefix_makes_a_branch_name_git_accepts(prefix: str) -> None:
    config = evolve_config(run_branch_prefix=prefix)
    assert config.evolve is not None and config.evolve.run_branch_prefix == prefix
    subprocess.run(
        ["git", "check-ref-format", "--branch", f"{prefix}/0123456789abcdef"],
        check=True,
        capture_output=True,
    )


# --- variation.debate_agent_ids and supervisor.intervention -----------------------------------


def bob_and_carol_debate(tmp_path: Path) -> tuple[list[Recorder], FreemadConfig]:
    """Alice, Bob and Carol in a repository; Carol and Bob debate each plan."""
    make_repo(tmp_path / "repo")
    workers = [
        Recorder("alice", [calc(25)]),
        Recorder("bob", [calc(45)]),
        Recorder("carol", [calc(35)]),
    ]
    config = evolve_config(
        ["alice", "bob", "carol"],
        variation={"mode": "debate", "agent_id": None, "debate_agent_ids": ["carol", "bob"]},
        stop={"max_iterations": 1},
    )
    return workers, config


def test_debate_agent_ids_pick_who_debates_the_plan(tmp_path: Path) -> None:
    (alice, bob, carol), config = bob_and_carol_debate(tmp_path)
    h = harness(tmp_path, [alice, bob, carol], config)
    state = h.runner.start("faster")

    assert alice.prompts == []  # not a debate agent, so never asked anything
    assert len(bob.debate_prompts) == 2 and len(carol.debate_prompts) == 2  # generate, critique
    [proposed] = h.events(state.run_id, "candidate_proposed")
    assert proposed["debate_agents"] == ["bob", "carol"]
    assert proposed["agent"] == "bob"  # both proposed the same plan: the first by id
    assert bob.requests[0]["plan"] == "Lower COST in calc.py." and carol.requests == []
    assert state.versions[-1].components["runtime_ms"] == 45.0


@pytest.mark.parametrize("finalizer", ["alice", "bob"])
def test_an_evolve_debate_never_calls_the_finalizer(tmp_path: Path, finalizer: str) -> None:
    """A planning debate's decision picks the plan; the config's `debate.finalizer` (outside
    the debate agents, or one of them) is not asked to write a text nothing reads."""
    (alice, bob, carol), config = bob_and_carol_debate(tmp_path)
    config = config.model_copy(
        update={"debate": config.debate.model_copy(update={"finalizer": finalizer})}
    )
    h = harness(tmp_path, [alice, bob, carol], config)
    state = h.runner.start("faster")

    assert alice.prompts == []
    assert len(bob.debate_prompts) == 2 and len(carol.debate_prompts) == 2  # no third call
    assert state.versions[-1].components["runtime_ms"] == 45.0


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"debate_agent_ids": ["alice", "zed"]}, "'zed' is not an enabled agent"),
        ({"debate_agent_ids": ["alice", "off"]}, "'off' is not an enabled agent"),
        ({"debate_agent_ids": ["alice", "alice"]}, "'alice' is listed twice"),
        ({"debate_agent_ids": ["alice"]}, "1 agent(s), fewer than the 2 a debate round needs"),
    ],
)
def test_bad_debate_agent_ids_are_one_line_errors(change: dict[str, Any], expected: str) -> None:
    agents = [
        {"id": "alice", "cli_command": "scripted"},
        {"id": "bob", "cli_command": "scripted"},
        {"id": "off", "cli_command": "scripted", "enabled": False},
    ]
    variation = {"mode": "debate", "agent_id": None, **change}
    with pytest.raises(ConfigError) as caught:
        make_config(agents, evolve=evolve_section(variation=variation), deadlines={"min_agents": 2})
    message = caught.value.one_line()
    assert "evolve.variation.debate_agent_ids" in message and expected in message


def test_the_reference_empty_list_of_debate_agents_reads_as_every_agent() -> None:
    """The reference implementation wrote `debate_agent_ids: []` for every agent."""
    config = evolve_config(
        ["alice", "bob"], variation={"mode": "debate", "agent_id": None, "debate_agent_ids": []}
    )
    said: list[str] = []
    text = yaml.safe_dump(config.model_dump(mode="json", exclude_none=True))
    text = text.replace("mode: debate", "mode: debate\n    debate_agent_ids: []")
    read = parse_config(text, name="evolve.yaml", warn=said.append)
    assert read.evolve is not None and read.evolve.variation.debate_agent_ids is None
    [line] = said
    assert "evolve.variation.debate_agent_ids" in line and "read as null" in line


def test_single_agent_intervention_needs_an_enabled_agent_to_call() -> None:
    variation = {"mode": "debate", "agent_id": "ghost"}  # ignored by a debate, not by this
    supervisor = {"intervention": "single_agent"}
    with pytest.raises(ConfigError) as caught:
        evolve_config(["alice", "bob"], variation=variation, supervisor=supervisor)
    message = caught.value.one_line()
    assert "evolve.variation.agent_id" in message and "'ghost' is not an enabled agent" in message
    evolve_config(["alice", "bob"], variation=variation)  # a debate intervention never calls it


@pytest.mark.parametrize(
    ("topology", "expected"),
    [
        ({"type": "star", "hub": "carol"}, "leaves out 'carol', the star's hub"),
        ({"type": "k_reviewers", "k": 2}, "2 agents leave too few peers for topology.k = 2"),
    ],
)
def test_debate_agent_ids_must_fit_the_topology(topology: dict[str, Any], expected: str) -> None:
    agents = [{"id": name, "cli_command": "scripted"} for name in ("alice", "bob", "carol")]
    variation = {"mode": "debate", "agent_id": None, "debate_agent_ids": ["alice", "bob"]}
    with pytest.raises(ConfigError, match=expected):
        make_config(agents, evolve=evolve_section(variation=variation), topology=topology)
    variation["debate_agent_ids"] = ["alice", "bob", "carol"]  # all three fit
    make_config(agents, evolve=evolve_section(variation=variation), topology=topology)


@pytest.mark.parametrize("how", ["debate", "single_agent"])
def test_an_intervention_asks_the_debate_or_one_agent(tmp_path: Path, how: str) -> None:
    make_repo(tmp_path / "repo")
    worker = Recorder("worker", [calc(60), calc(61), calc(62), calc(40)])
    peer = Recorder("peer")
    supervisor = {"intervention": how} if how == "single_agent" else {}
    config = evolve_config(["worker", "peer"], supervisor=supervisor, stop={"max_iterations": 4})
    h = harness(tmp_path, [worker, peer], config)
    state = h.runner.start("faster")

    [intervention] = h.events(state.run_id, "intervention")
    assert intervention["intervention"] == how
    assert intervention["directions"] == ["try a cache", "drop the loop"]
    assert worker.requests[3]["directions"] == ["try a cache", "drop the loop"]
    if how == "single_agent":  # one call of the worker, no critique, nobody else
        assert intervention["agents"] == ["worker"]
        assert len(worker.debate_prompts) == 1 and "DECISION" not in worker.debate_prompts[0]
        assert peer.prompts == []
    else:  # what a config without the setting does: a debate among every enabled agent
        assert intervention["agents"] == ["worker", "peer"]
        assert len(worker.debate_prompts) == 2 and len(peer.debate_prompts) == 2
    assert state.versions[-1].components["runtime_ms"] == 40.0


def test_single_agent_intervention_asks_the_first_debate_agent_without_a_worker(
    tmp_path: Path,
) -> None:
    make_repo(tmp_path / "repo")
    alice, bob, carol = Recorder("alice", [calc(60)] * 4), Recorder("bob"), Recorder("carol")
    config = evolve_config(
        ["alice", "bob", "carol"],
        variation={"mode": "debate", "agent_id": None, "debate_agent_ids": ["alice", "bob"]},
        supervisor={"intervention": "single_agent", "max_interventions_before_human": 1},
        stop={"max_iterations": 3},
    )
    h = harness(tmp_path, [alice, bob, carol], config)
    state = h.runner.start("faster")
    [intervention] = h.events(state.run_id, "intervention")
    assert intervention["agents"] == ["alice"] and carol.prompts == []
    directions = [p for p in alice.debate_prompts if '"directions"' in p]
    assert len(directions) == 1 and not any('"directions"' in p for p in bob.debate_prompts)


# --- stop.max_total_cost_usd ------------------------------------------------------------------


def priced(tokens_in: int, tokens_out: int, costs: list[int]) -> Worker:
    """A worker that lowers calc.py's COST through `costs` and reports the usage given."""

    def reply(data: dict[str, Any]) -> CallResult:
        index = min(data["iteration"] - 1, len(costs) - 1)
        (Path(data["workspace_root"]) / "calc.py").write_text(calc(costs[index])["calc.py"])
        body = json.dumps({"agent_id": "worker", "content": f"cost {costs[index]}"})
        return CallResult(CallStatus.OK, body, input_tokens=tokens_in, output_tokens=tokens_out)

    return Worker("worker", reply=reply)


def cost_config(cap: float | None, pricing: bool = True, **stop: Any) -> FreemadConfig:
    agent: dict[str, Any] = {"id": "worker", "cli_command": "scripted"}
    if pricing:  # $1 per million input tokens, $2 per million output tokens
        agent["pricing"] = {"input_per_mtok": 1.0, "output_per_mtok": 2.0}
    limits = {"max_iterations": 20, "max_total_cost_usd": cap, **stop}
    return make_config([agent], evolve=evolve_section(stop=limits))


def test_a_cost_cap_stops_the_run_after_the_call_that_reaches_it_and_a_resume_keeps_counting(
    tmp_path: Path,
) -> None:
    make_repo(tmp_path / "repo")
    # 100,000 tokens in and out: $0.10 + $0.20 = $0.30 a call.
    worker = priced(100_000, 100_000, list(range(49, 30, -1)))
    h = harness(tmp_path, [worker], cost_config(1.0))
    state = h.runner.start("faster")
    assert (state.status, state.stop_reason) == (Status.STOPPED, "max_total_cost")
    assert len(worker.requests) == 4  # $0.90 after three calls goes on; $1.20 after four stops
    assert [e["cost_usd"] for e in h.events(state.run_id, "candidate_proposed")] == [0.3] * 4
    assert state.cost_usd == pytest.approx(1.2) and state.view()["cost_usd"] == 1.2
    assert state.versions[-1].version == 4  # the iteration in flight was judged and admitted

    # A resume under a higher cap counts on from the store's $1.20, not from zero.
    later = again(h, [worker], cost_config(2.0))
    state = later.runner.resume(state.run_id)
    assert state.stop_reason == "max_total_cost" and len(worker.requests) == 7
    assert state.cost_usd == pytest.approx(2.1)


def test_reported_negative_usage_buys_no_budget_back(tmp_path: Path) -> None:
    """A hostile agent reporting negative tokens costs nothing rather than less than nothing."""
    make_repo(tmp_path / "repo")
    worker = priced(-10_000_000, -10_000_000, list(range(49, 40, -1)))
    h = harness(tmp_path, [worker], cost_config(0.5, max_iterations=3))
    state = h.runner.start("faster")
    assert state.stop_reason == "max_iterations" and state.cost_usd == 0.0
    assert [e["cost_usd"] for e in h.events(state.run_id, "candidate_proposed")] == [0.0] * 3


def test_an_unpriced_agent_costs_nothing_and_validate_warns_about_the_cap(tmp_path: Path) -> None:
    make_repo(tmp_path / "repo")
    worker = priced(10_000_000, 10_000_000, list(range(49, 45, -1)))
    config = cost_config(0.01, pricing=False, max_iterations=2)
    warning = cap_warning(config)
    assert warning is not None and "worker" in warning and "cannot be enforced" in warning
    assert cap_warning(cost_config(0.01)) is None and cap_warning(cost_config(None)) is None
    state = harness(tmp_path, [worker], config).runner.start("faster")
    assert state.stop_reason == "max_iterations" and state.cost_usd == 0.0


# --- context_budget_chars ---------------------------------------------------------------------


def rejected_run(root: Path, budget: int | None) -> tuple[Recorder, Harness, str]:
    make_repo(root / "repo")
    worker = Recorder("worker", [calc(60)] * 4)
    config = evolve_config(
        stop={"max_iterations": 4},
        supervisor={"stall_window": 9, "loop_threshold": 9},
        knowledge_paths=["calc.py", "tests"],
        context_budget_chars=budget,
    )
    h = harness(root, [worker], config)
    state = h.runner.start("make calc faster")
    return worker, h, state.run_id


def test_a_context_budget_cuts_the_oldest_rejection_first_and_says_so(tmp_path: Path) -> None:
    # Two runs in folders of the same length: their prompts differ only in what the cap cuts.
    free, _, _ = rejected_run(tmp_path / "a", None)
    full = [len(p) for p in free.prompts]
    assert full == sorted(full) and len(full) == 4  # each rejection makes the prompt longer
    budget = full[3] - 1  # only the fourth prompt, with three rejections, is over

    capped, h, run = rejected_run(tmp_path / "b", budget)
    assert [len(p) for p in capped.prompts[:3]] == full[:3]
    assert "context was cut" not in "".join(capped.prompts[:3])
    last = capped.prompts[3]
    assert len(last) <= budget
    assert f"context was cut to fit evolve.context_budget_chars ({budget})" in last
    request = request_of(last)
    # The note itself takes room (in the text and the JSON): two rejections make way for it.
    assert [r["iteration"] for r in request["recent_rejections"]] == [3]
    assert request["goal"] == "make calc faster" and "<goal>\nmake calc faster\n</goal>" in last
    assert request["protected_paths"] == ["tests", "bench.py"]
    assert request["knowledge_paths"] == ["calc.py", "tests"]
    assert "the 2 oldest rejected candidate(s)" in request["context_note"]
    proposed = h.events(run, "candidate_proposed")
    assert "context_cut" not in proposed[2]
    assert proposed[3]["context_cut"] == ["the 2 oldest rejected candidate(s)"]
