"""What the population tests share: a scripted worker whose candidates' speeds are known, keyed by
(generation, candidate), and judges that are slow, or noisy, on purpose."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from freemad.agents.agent_port import CallRequest, CallResult, CallStatus
from tests.evolve.runs import CALC, PY, Worker, request_of

# {generation: [the cost each candidate writes]}; "bug" makes add() wrong, so the gate fails it;
# None changes nothing. Generation 1: candidate 2 is fastest but wrong, candidate 1 wins.
# Generation 2: candidates 0 and 1 tie, the lower index wins. Generation 3: none beats 25.
SPEEDS: dict[int, list[Any]] = {
    1: [45, 30, ("bug", 20), 40],
    2: [25, 25, 28, 60],
    3: [26, 40, None, ("bug", 5)],
}


@dataclass
class ScriptedPopulation(Worker):
    """A worker that writes calc.py with the cost `speeds[generation][candidate]`."""

    speeds: dict[int, list[Any]] = field(default_factory=lambda: dict(SPEEDS))

    async def call(self, request: CallRequest) -> CallResult:
        data = request_of(request.prompt)
        self.requests.append(data)
        row = self.speeds.get(data["generation"], [])
        index = data["candidate"]
        speed = row[index] if index < len(row) else None
        if speed is not None:
            cost, bug = (speed[1], " + 1") if isinstance(speed, tuple) else (speed, "")
            root = Path(data["workspace_root"])
            (root / "calc.py").write_text(CALC.format(cost=cost, bug=bug))
        body = {"agent_id": self.agent_id, "content": f"candidate {index}"}
        return CallResult(CallStatus.OK, json.dumps(body))


def tests_stage() -> dict[str, Any]:
    return {"name": "tests", "command": f"{PY} tests/check.py", "provides": ["tests_pass"]}


def bench_stage(code: str) -> dict[str, Any]:
    """A json_stdout bench whose body is `code`, run with calc imported; it prints runtime_ms."""
    body = (
        "import json, os, sys, time; sys.path.insert(0, '.'); import calc; "
        + code
        + "; print(json.dumps(dict(components=dict(runtime_ms=float(cost)))))"
    )
    return {
        "name": "bench",
        "command": f'{PY} -c "{body}"',
        "parse": "json_stdout",
        "provides": ["runtime_ms"],
    }


def judge_with(code: str, **more: Any) -> dict[str, Any]:
    return {"stages": [tests_stage(), bench_stage(code)], "protected_paths": ["tests"], **more}


def outcomes(events: list[dict[str, Any]]) -> dict[int, list[tuple[int, str]]]:
    """{generation: [(candidate, outcome)]} from the `candidate_judged` events of generations."""
    return {
        d["iteration"]: [(c["candidate"], c["outcome"]) for c in d["generation"]["candidates"]]
        for d in events
        if "generation" in d
    }
