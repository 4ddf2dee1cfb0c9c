"""How many items `freemad eval run` debates at once (issue 42: the default started 16
llama.cpp processes on 2 cores): agents whose model runs on this machine are bounded by its
cores, hosted ones by budget.max_concurrent_agents; the report says which and why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from freemad.cli.eval import _concurrency
from freemad.config.models import FreemadConfig
from tests.conftest import make_config
from tests.eval.test_run import _run

SMOL = {"type": "llm", "cli_args": {"-m": "SmolLM2"}}


def config_of(*agents: dict[str, object]) -> FreemadConfig:
    return make_config(
        [{"id": f"a{n}", **agent} for n, agent in enumerate(agents)],
        security={"cli_allowed_commands": ["llm", "x"]},
    )


@pytest.mark.parametrize(("cores", "items"), [(2, 1), (8, 2), (64, 5)])
def test_local_models_take_the_cores(
    monkeypatch: pytest.MonkeyPatch, cores: int, items: int
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: cores)
    config = config_of(SMOL, SMOL, SMOL)
    chosen, why = _concurrency(config, None, most=5, agents=3)
    assert chosen == items  # never past what the budget allows (5 for 16 / 3)
    assert why.startswith(f"3 agent(s) run their model on this machine, which has {cores} core")


def test_hosted_models_take_the_budget_and_asking_is_capped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    hosted = config_of({"type": "llm", "cli_args": {"-m": "gpt-4o"}}, {"cli_command": "x"})
    assert _concurrency(hosted, None, most=8, agents=2) == (
        8,
        "budget.max_concurrent_agents (16) / 2 agent(s)",
    )
    local = config_of(SMOL, SMOL)
    assert _concurrency(local, 3, most=8, agents=2)[0] == 3  # asked for: as asked
    assert _concurrency(local, 30, most=8, agents=2)[0] == 8


def test_the_report_says_how_many_items_ran_at_once_and_why(tmp_path: Path) -> None:
    _run(tmp_path, "--limit", "1")
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["concurrency"]["items_at_once"] >= 1
    assert report["concurrency"]["why"].startswith("budget.max_concurrent_agents (16) / ")
