"""Routers for the behaviours' tests: a config (debate or tasks, with the bundled mock agents),
a router over a recording forge, and the comments it posted; on real git for evolve runs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from freemad.github.forge import PullRequestDetails, RecordingForge
from freemad.github.router import Router
from freemad.github.thread import Settings
from freemad.wiring import ADAPTERS
from tests.conftest import make_config, mock_agent
from tests.evolve.runs import Worker, evolve_config
from tests.github.payloads import issue_comment
from tests.github.test_evolve_pr import REPO, Origin

TASK_MOCK = str(Path(sys.executable).parent / "freemad-task-mock")


def debate_config() -> Any:
    agents = [
        mock_agent("alpha", "--persona", "iterative"),
        mock_agent("beta", "--persona", "recursive"),
    ]
    return make_config(agents)


def task_config(tmp_path: Path) -> Any:
    roles = {"planner": ["planner", "researcher"], "reviewer": ["reviewer"], "arbiter": ["arbiter"]}
    agents = [{"id": a, "cli_command": TASK_MOCK, "roles": r} for a, r in roles.items()]
    task = {"store_path": str(tmp_path / "t.db"), "max_stage_retries": 1}
    return make_config(agents, task=task)


def router(
    config: Any, store: Any, tmp_path: Path, job_url: str | None = None, **permissions: str
) -> tuple[Router, RecordingForge]:
    forge = RecordingForge(permissions={"alice": "write", **permissions})
    settings = Settings(
        self_login="freemad[bot]",
        run_url=lambda kind, run_id: f"https://octo-org.github.io/octo-repo/{kind}/{run_id}.html",
        workspace=tmp_path,
        job_url=job_url,
    )
    return Router(config, forge, store, settings, adapters=ADAPTERS), forge


def bodies(forge: RecordingForge) -> list[str]:
    return [body for (_, _, body) in forge.comments.values()]


def comment_on_pull(body: str, author: str = "alice") -> dict[str, Any]:
    payload = issue_comment(body, author=author, on_pull_request=True)
    payload["repository"]["full_name"] = REPO
    return payload


def router_for(origin: Origin, workspace: Path, worker: Worker, **config: Any) -> Router:
    forge: RecordingForge = origin.forge
    forge.permissions["alice"] = "write"
    forge.details[(REPO, 7)] = PullRequestDetails(
        7, f"https://github.com/{REPO}/pull/7", "feature", origin.head, "main", REPO
    )
    settings = Settings(self_login="freemad[bot]", workspace=workspace)
    return Router(
        evolve_config(**config),
        forge,
        origin.store,
        settings,
        adapters=ADAPTERS,
        ports={"worker": worker},
    )
