"""What the judge tests share: stage configs, judge configs and measurements."""

from __future__ import annotations

from typing import Any

from freemad.config.evolve_section import JudgeConfig, StageConfig
from freemad.core.evolve import (
    Measurement,
)

TESTS = StageConfig(name="tests", command="pytest -q", provides=["tests_pass"])
BENCH = StageConfig(
    name="bench",
    command="python bench.py",
    parse="json_stdout",
    timeout_sec=30,
    provides=["runtime_ms", "memory_mb"],
)


def judge_config(comparator: list[dict[str, Any]], gate: list[str] | None = None) -> JudgeConfig:
    return JudgeConfig(
        stages=[
            TESTS,
            StageConfig(
                name="bench",
                command="b",
                parse="json_stdout",
                provides=["runtime_ms", "accuracy", "memory_mb"],
            ),
        ],
        gate=gate if gate is not None else ["tests_pass == 1"],
        comparator=comparator,  # validated from plain dicts
    )


SPEED = judge_config([{"component": "runtime_ms", "direction": "minimize", "epsilon": 1.0}])


def ok(**components: float) -> Measurement:
    return Measurement(True, {"tests_pass": 1.0, **components})


def failed(stage: str, reason: str) -> Measurement:
    return Measurement(False, {}, stage, reason)
