"""The agents pages over every kind of run: tasks and an evolve run made through the real CLI with
the bundled mock agents (freemad-task-mock, freemad-evolve-mock), and a debate one of whose
agents also works on the tasks. The expected numbers are counted here, from the events the stores
hold and the transcript's JSON."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from freemad.dashboard.live.dashboard_settings import DashboardSettings
from freemad.dashboard.live.server import create_app
from freemad.dashboard.reading.sources import all_runs, build_sources
from freemad.dashboard.static_site import build_site
from freemad.dashboard.views.agent_views import agent_slug, agents_table, run_record
from freemad.store import StoreReader
from tests.conftest import SANDBOX
from tests.dashboard.browser import dom
from tests.dashboard.runs import FIB, FREEMAD, ROOT, TASK_GOAL, environment, git_repo, run
from tests.dashboard.test_agents import expected, quiet, renamed


@dataclass(frozen=True)
class Mixed:
    transcripts: Path
    task_store: Path
    evolve_store: Path

    def sources(self) -> list[Any]:
        return build_sources(
            transcripts=str(self.transcripts),
            task_store=str(self.task_store),
            evolve_store=str(self.evolve_store),
            warn=quiet,
        )


def task_config(work: Path, planner: str) -> Path:
    """Two canned agents and an arbiter; the planner's command line as given."""
    agents = [
        {"id": "planner", "cli_command": planner, "roles": ["planner", "researcher"]},
        {"id": "reviewer", "cli_command": "freemad-task-mock", "roles": ["reviewer"]},
        {"id": "arbiter", "cli_command": "freemad-task-mock", "roles": ["arbiter"]},
    ]
    config = {
        "agents": [{**agent, "timeout": 30} for agent in agents],
        "security": {"cli_allowed_commands": ["freemad-task-mock"], "sandbox": SANDBOX},
        "task": {
            "store_path": ".freemad/tasks/tasks.db",
            "artifacts_dir": ".freemad/tasks/artifacts",
            "max_stage_retries": 1,
            "max_total_iterations": 30,
        },
    }
    path = work / f"tasks-{len(list(work.glob('tasks-*.yaml')))}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> Mixed:
    root = tmp_path_factory.mktemp("mixed")
    env = environment(root)
    (root / "gitconfig").write_text("")
    work = root / "work"
    work.mkdir()
    (work / "README.md").write_text("a repository\n")
    (work / ".gitignore").write_text(".freemad/\ntranscripts/\n*.yaml\n")
    git_repo(work, env)

    def task(config: Path) -> str:
        argv = ["task", "start", "--config", str(config), "--task-type", "plan", "--json"]
        started = run(FREEMAD, *argv, "--workspace-root", str(work), TASK_GOAL, cwd=work, env=env)
        return str(json.loads(started)["task_id"])

    # One task carried to its end: the reviewer asks, the arbiter declines, a person answers,
    # the reviewer approves. One whose planner crashes at research until a person is asked.
    config = ["--config", str(task_config(work, "freemad-task-mock"))]
    answered = task(Path(config[1]))
    run(FREEMAD, "task", "answer", answered, "Use SQLite.", *config, cwd=work, env=env)
    run(FREEMAD, "task", "resume", answered, *config, cwd=work, env=env)
    task(task_config(work, "freemad-task-mock --fault crash --fault-at research"))

    # The evolve toy, its worker crashing at the first iteration (then the toy's script).
    toy = root / "toy"
    shutil.copytree(ROOT / "examples/evolve_toy", toy, ignore=shutil.ignore_patterns(".freemad"))
    steps = toy / "scripted" / "worker_steps.json"
    script = json.loads(steps.read_text())
    script["steps"].insert(0, {"fault": "crash"})
    steps.write_text(json.dumps(script))
    if SANDBOX == "host":
        evolve = toy / "evolve.yaml"
        evolve.write_text(evolve.read_text().replace("security:\n", "security:\n  sandbox: host\n"))
    git_repo(toy, env)
    run(
        FREEMAD, "evolve", "start", "--config", "evolve.yaml", "--json", "Faster.", cwd=toy, env=env
    )

    # A debate of the bundled mock agents; one of them, renamed, is also the tasks' planner.
    run(FREEMAD, FIB, "--rounds", "2", "--json", "--quiet", cwd=work, env=env)
    transcripts = work / "transcripts"
    [path] = transcripts.glob("*.json")
    data = renamed(json.loads(path.read_text()), {"mock-iterative": "planner"})
    path.write_text(json.dumps(data))
    return Mixed(transcripts, work / ".freemad/tasks/tasks.db", toy / ".freemad/evolve/evolve.db")


def store_events(store: Path, kind: str) -> list[list[tuple[str, dict[str, Any]]]]:
    """The events of each run of `kind` in a store, as the runtime appended them."""
    reader = StoreReader(store, store.parent / "artifacts")
    listed = [i.row.run_id for i in reader.runs((kind,))]
    return [[(e.kind, e.data) for e in reader.events(run_id)] for run_id in listed]


def expected_all(mixed: Mixed) -> dict[str, Counter[str]]:
    """What each agent did in every run: in the tasks and the evolve run counted from their
    events, in the debate from its transcript (`expected`)."""
    out: dict[str, Counter[str]] = {}
    for events in store_events(mixed.task_store, "task"):
        for name in {d["agent"] for k, d in events if k in ("agent_replied", "agent_failed")}:
            out.setdefault(name, Counter())["task runs"] += 1
        for kind, data in events:
            if kind not in ("agent_replied", "agent_failed"):
                continue
            row = out[data["agent"]]
            row["calls"] += 1
            if kind == "agent_failed":
                row[f"failed: {data['cause']}"] += 1
                continue
            approve = data["response"].get("review_decision") == "approve"
            if data["role"] == "arbiter":
                row["arbitrated"] += 1
                row["arbitrated approved"] += approve
            elif data["stage"] in ("plan_review", "code_review", "verify"):
                row["reviewed"] += 1
                row["approved"] += approve
            else:
                row["proposed"] += 1
    for events in store_events(mixed.evolve_store, "evolve"):
        proposals = [d for k, d in events if k == "candidate_proposed"]
        for name in {d["agent"] for d in proposals}:
            out.setdefault(name, Counter())["evolve runs"] += 1
        for data in proposals:
            row = out[data["agent"]]
            row["calls"] += 1
            if data["ok"]:
                row["candidates"] += 1
            else:
                row[f"failed: {data['cause']}"] += 1
        for kind, data in events:
            if kind == "candidate_judged" and data.get("agent") and data["verdict"]["admitted"]:
                out[data["agent"]]["admitted"] += 1
    debates = [json.loads(p.read_text()) for p in mixed.transcripts.glob("*.json")]
    for name, did in expected(debates).items():
        row = out.setdefault(name, Counter())
        row.update(
            {
                "debates": did["debates"],
                "won": did["won"],
                "switches": did["switches"],
                "to winner": did["to_winner"],
                "calls": len(did["ms"]),
            }
        )
        row.update({f"failed: {cause}": n for cause, n in did["causes"].items()})
    return {name: +row for name, row in out.items()}


def shown(row: dict[str, Any]) -> Counter[str]:
    """A row of the agents table in the terms of `expected_all`."""
    counts = Counter(
        {
            "debates": row["debate"]["runs"],
            "won": row["debate"]["won"],
            "switches": row["debate"]["switches"],
            "to winner": row["debate"]["to_winner"],
            "task runs": row["task"]["runs"],
            "evolve runs": row["evolve"]["runs"],
            "calls": row["calls"],
            "proposed": row["task"]["proposed"],
            "reviewed": row["task"]["reviewed"],
            "approved": row["task"]["approved"],
            "arbitrated": row["task"]["arbitrated"],
            "arbitrated approved": row["task"]["arbitrated_approved"],
            "candidates": row["evolve"]["candidates"],
            "admitted": row["evolve"]["admitted"],
        }
    )
    for cause, n in row["causes"]:
        counts[f"failed: {cause}"] += n
    return +counts


def cells(html: str, name: str) -> dict[str, str]:
    """The cells of an agent's row of the agents table (`data-col` named), as the page shows."""
    found = re.search(rf'<tr data-agent="{re.escape(name)}">(.*?)</tr>', html, re.S)
    assert found, f"no row for {name}"
    return dict(re.findall(r'data-col="([a-z]+)">([^<]*)</td>', found.group(1)))


def want_cells(want: Counter[str]) -> dict[str, str]:
    """The cells an agent's row should show, from `expected_all`."""
    return {
        "runs": f"{want['debates']} / {want['task runs']} / {want['evolve runs']}",
        "won": str(want["won"]),
        "switches": f"{want['switches']} ({want['to winner']})",
        "proposed": str(want["proposed"]),
        "reviewed": f"{want['reviewed']} ({want['approved']})",
        "arbitrated": f"{want['arbitrated']} ({want['arbitrated approved']})",
        "candidates": f"{want['candidates']} ({want['admitted']})",
        "calls": str(want["calls"]),
        "failures": str(sum(n for key, n in want.items() if key.startswith("failed: "))),
    }


def test_tasks_and_evolve_runs_count_as_their_events_say(mixed: Mixed) -> None:
    want = expected_all(mixed)
    # The mock runs did what the table should show: every kind of task reply, approved and not,
    # failures in a task and in the evolve run, candidates admitted and rejected.
    assert want["planner"]["proposed"] and want["planner"]["failed: exit_error"] >= 1
    assert 0 < want["reviewer"]["approved"] < want["reviewer"]["reviewed"]
    assert want["arbiter"]["arbitrated"] and want["worker"]["failed: exit_error"] == 1
    assert 0 < want["worker"]["admitted"] < want["worker"]["candidates"]
    assert want["planner"]["debates"] == 1 and want["planner"]["task runs"] == 2
    records = [run_record(r.load(), r.started) for r in all_runs(mixed.sources())]
    table = {row["name"]: row for row in agents_table(records)}
    assert set(table) == set(want)
    for name, row in table.items():
        assert shown(row) == want[name], name
    # Time, tokens and cost come from debates only: tasks and evolve runs record none.
    assert table["planner"]["median_ms"] != "-"
    assert (table["worker"]["median_ms"], table["worker"]["cost_usd"]) == ("-", "-")
    # The live server shows those numbers, cell by cell, and each agent's runs of every kind.
    client = create_app(DashboardSettings(mixed.sources(), warn=quiet)).test_client()
    listing = client.get("/agents.html")
    assert listing.status_code == 200 and "Agents across runs" in listing.text
    for name, counts in want.items():
        assert cells(listing.text, name) == want_cells(counts), name
    page = client.get(f"/agents/{agent_slug('planner')}.html").text
    assert page.count('data-kind="task"') == 2 and page.count('data-kind="debate"') == 1


def test_the_agents_page_of_every_kind_in_a_browser(mixed: Mixed, tmp_path: Path) -> None:
    out = tmp_path / "site"
    build_site(mixed.sources(), out, warn=quiet)
    rendered = dom((out / "agents.html").as_uri())
    want = expected_all(mixed)
    assert len(re.findall(r"<tr data-agent=", rendered)) == len(want)
    for name, counts in want.items():
        assert cells(rendered, name) == want_cells(counts), name
    page = dom((out / "agents" / f"{agent_slug('worker')}.html").as_uri())
    worker = want["worker"]
    assert f"{worker['candidates']} candidates, {worker['admitted']} admitted" in page
    assert page.count('href="../runs/') == 1 and 'data-kind="evolve"' in page
