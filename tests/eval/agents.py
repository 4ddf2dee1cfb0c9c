"""Scripted agents for the evaluation tests: real processes speaking the debate contract, each
answering from a table (a JSON list of `{"match": text in the requirement, "answers": {agent:
[round 0, round 1, ...]}, "delay": seconds to think first, "final": the finalizer's answer,
"judge": a judge's reply, "draws": {agent: [the answer of each round-0 call, in turn]}}`), so every
method's accuracy is known before the run. Each call is
logged to `calls.log` beside the table, so a test can count them."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import SANDBOX

_SCRIPT = """\
import json, os, re, sys, time
table_path, me = sys.argv[1], sys.argv[2]
prompt = sys.stdin.read()
requirement = re.search(r"<requirement(_\\w+)?>\\s*(.*?)\\s*</requirement", prompt, re.S).group(2)
found = re.search(r"This is critique round (\\d+)", prompt)
round_no = int(found.group(1)) if found else 0
final = "<winning_answer_" in prompt
with open(table_path, encoding="utf-8") as handle:
    entry = next(e for e in json.load(handle) if e["match"] in requirement)
with open(os.path.join(os.path.dirname(table_path), "calls.log"), "a") as log:
    log.write(json.dumps([me, "final" if final else round_no, entry["match"]]) + "\\n")
time.sleep(entry.get("delay", 0))
if final:  # the finalizer: the table's "final" text, or a crash when it has none
    print("SOLUTION:\\n" + entry["final"] + "\\n\\nREASONING:\\nthe table")
    sys.exit(0)
if "Several answers to the question above" in prompt:  # a judge: the table's "judge" reply
    print("SOLUTION:\\n" + entry["judge"] + "\\n\\nREASONING:\\nthe table")
    sys.exit(0)
answers = entry["answers"][me]
answer = answers[min(round_no, len(answers) - 1)]
if round_no == 0 and me in entry.get("draws", {}):  # each round-0 call draws the next answer
    import fcntl  # copies of one agent draw at once: one at a time through the counter
    counter = os.path.join(os.path.dirname(table_path), "draws-" + me + "-" + entry["match"])
    with open(counter, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        count = len(handle.read())
        handle.write("x")
    answer = entry["draws"][me][count]
if round_no == 0:
    print("SOLUTION:\\n" + answer + "\\n\\nREASONING:\\nfrom the table")
else:
    own = re.search(r"<your_answer>\\s*SOLUTION:\\s*\\n(.*?)\\n\\s*REASONING:", prompt, re.S)
    if own and own.group(1).strip() == answer.strip():
        print("DECISION: KEEP\\n\\nREASONING:\\nthe table keeps it")
    else:
        print("DECISION: REVISE\\n\\nREVISED_SOLUTION:\\n" + answer + "\\n\\nREASONING:\\nthe table")
"""


def table_agent(folder: Path) -> Path:
    agent = folder / "table-agent"
    agent.write_text(f"#!{sys.executable}\n{_SCRIPT}")
    agent.chmod(0o755)
    return agent


def write_setup(
    folder: Path,
    table: Sequence[dict[str, Any]],
    agents: Sequence[str] = ("a1", "a2", "a3"),
    **sections: Any,
) -> Path:
    """The table, its agent and a config of `agents` answering from it; the config's path."""
    folder.mkdir(parents=True, exist_ok=True)
    table_path = folder / "table.json"
    table_path.write_text(json.dumps(list(table)))
    agent = table_agent(folder)
    config = {
        "agents": [
            {"id": name, "cli_command": f"{agent} {table_path} {name}", "timeout": 60}
            for name in agents
        ],
        "security": {"cli_allowed_commands": [str(agent)], "sandbox": SANDBOX},
        "deadlines": {"soft_timeout_ms": 60000, "hard_timeout_ms": 120000, "min_agents": 1},
        "output": {"save_transcript": False},
        **sections,
    }
    path = folder / "freemad.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def calls(folder: Path) -> list[list[Any]]:
    log = folder / "calls.log"
    if not log.is_file():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


def write_items(path: Path, items: Sequence[dict[str, Any] | str]) -> Path:
    path.write_text("".join((i if isinstance(i, str) else json.dumps(i)) + "\n" for i in items))
    return path


def evaluate(
    dataset: Path | str, config: Path, out: Path, *extra: str, cwd: Path, home: Path, code: int = 0
) -> subprocess.CompletedProcess[str]:
    """`freemad eval run --dataset DATASET --config CONFIG --out OUT EXTRA...` as a user runs
    it (tests.cli.helpers.freemad), held to exit with `code`."""
    from tests.cli.helpers import freemad

    return freemad(
        "eval",
        "run",
        "--dataset",
        str(dataset),
        "--config",
        str(config),
        "--out",
        str(out),
        *extra,
        cwd=cwd,
        home=home,
        code=code,
    )
