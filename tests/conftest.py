"""Shared test helpers: configs around the real mock agent, and a scripted in-process agent."""

from __future__ import annotations

import asyncio
import socket
import sys
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from freemad.agents.agent_port import CallRequest, CallResult, CallStatus
from freemad.config import FreemadConfig, parse_config
from freemad.sandbox.bubblewrap import BubblewrapSandbox

MOCK_AGENT = str(Path(sys.executable).parent / "freemad-mock-agent")
FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"
# The reference implementation's own files (configs, evolve config, transcripts), read in place.
REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "reference"


def reference_file(*parts: str) -> Path:
    """A file of the reference implementation beside the checkout, or skip saying where."""
    path = REFERENCE.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"the reference implementation's files are absent (expected {path})")
    return path


BWRAP_PROBLEM = BubblewrapSandbox(False, ()).problem()
# Tests that are not about the sandbox run under bubblewrap where it runs, as users' runs do,
# and on the host (on purpose, as a config would say) where it cannot, so they still run there.
SANDBOX = "auto" if BWRAP_PROBLEM is None else "host"
needs_bwrap = pytest.mark.skipif(
    BWRAP_PROBLEM is not None, reason=f"bubblewrap cannot run here: {BWRAP_PROBLEM}"
)


def mock_agent(agent_id: str, *args: str, **extra: Any) -> dict[str, Any]:
    """An agent entry that runs the bundled mock agent as a real subprocess."""
    words = " ".join([MOCK_AGENT, *args])
    return {"id": agent_id, "cli_command": words, "cli_mode_arg": True, **extra}


def free_port() -> int:
    """A TCP port free on loopback now (for a server a test starts)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for(check: Any, what: str, seconds: float = 60) -> Any:
    """What `check()` returns once it is true, asked every 50 ms; fail after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def recording_agent(folder: Path, log: Path) -> Path:
    """An agent CLI speaking the debate contract (a script, run as a real process) that appends
    its argv, prompt and environment to `log` (JSON lines) and answers with its environment."""
    agent = folder / "recording-agent"
    agent.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "prompt = sys.stdin.read()\n"
        f"open({str(log)!r}, 'a').write(json.dumps({{'argv': sys.argv, 'stdin': prompt, "
        "'env': dict(os.environ)}) + '\\n')\n"
        "if 'DECISION:' in prompt:\n"
        "    print('DECISION: KEEP\\n\\nREASONING:\\nfine')\n"
        "else:\n"
        "    print('SOLUTION:\\n' + json.dumps(dict(os.environ), sort_keys=True)"
        " + '\\n\\nREASONING:\\nmy environment')\n"
    )
    agent.chmod(0o755)
    return agent


def make_config(agents: Iterable[dict[str, Any]], **sections: Any) -> FreemadConfig:
    data: dict[str, Any] = {"agents": list(agents)}
    data.setdefault("security", {})
    for name, value in sections.items():
        data[name] = value
    allowed = {a["cli_command"].split()[0] for a in data["agents"] if "cli_command" in a}
    security = dict(data["security"])
    security.setdefault("cli_allowed_commands", sorted(allowed))
    security.setdefault("sandbox", SANDBOX)
    data["security"] = security
    data.setdefault("output", {"save_transcript": False})
    return parse_config(yaml.safe_dump(data))


@dataclass
class ScriptedAgent:
    """An in-process agent: a queue of replies (text, or a CallResult) and the history of calls."""

    agent_id: str
    replies: deque[str | CallResult | float] = field(default_factory=deque)
    calls: list[CallRequest] = field(default_factory=list)
    default: str | None = None

    def script(self, *replies: str | CallResult | float) -> ScriptedAgent:
        self.replies.extend(replies)
        return self

    async def call(self, request: CallRequest) -> CallResult:
        self.calls.append(request)
        reply = self.replies.popleft() if self.replies else self.default
        while isinstance(reply, float):  # a float is "think this long first", then the next reply
            await asyncio.sleep(reply)
            reply = self.replies.popleft() if self.replies else self.default
        if reply is None:
            raise AssertionError(f"{self.agent_id} was called more often than scripted")
        if isinstance(reply, CallResult):
            return reply
        return CallResult(CallStatus.OK, reply)


def generation(solution: str, reasoning: str = "because") -> str:
    return f"SOLUTION:\n{solution}\n\nREASONING:\n{reasoning}\n"


def keep(reasoning: str = "mine stands") -> str:
    return f"DECISION: KEEP\n\nREASONING:\n{reasoning}\n"


def revise(solution: str, reasoning: str = "the peer is right") -> str:
    return f"DECISION: REVISE\n\nREVISED_SOLUTION:\n{solution}\n\nREASONING:\n{reasoning}\n"


def scripted_config(ids: Iterable[str], **sections: Any) -> FreemadConfig:
    """A config whose agents are never started as processes (the test passes ScriptedAgents)."""
    return make_config(
        [{"id": i, "cli_command": "scripted"} for i in ids],
        **sections,
    )


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- GitHub's REST API description holds every exchange with the stand-in ----------------------
# Every StandIn a test starts is watched; when the test ends, each request FREE-MAD sent and each
# answer the stand-in gave is checked against @octokit/openapi (tests/github/openapi_contract.py),
# and a departure fails the test. Without the description (no npm), tests/github/
# test_openapi_contract.py says it is skipped; the exchanges then go unchecked.
CONTRACT_CHECKED: list[int] = [0]


@pytest.fixture(autouse=True)
def _rest_contract(monkeypatch: pytest.MonkeyPatch) -> Iterable[None]:
    from freemad.github.standin import StandIn
    from tests.github import openapi_contract

    if not openapi_contract.description_path().is_file():
        yield
        return
    started: list[StandIn] = []
    start = StandIn.start

    def watched(self: StandIn) -> StandIn:
        started.append(self)
        return start(self)

    monkeypatch.setattr(StandIn, "start", watched)
    yield
    found = []
    for api in started:
        for call in list(api.calls):
            found += openapi_contract.problems(call)
            CONTRACT_CHECKED[0] += 1
    if found:
        pytest.fail("GitHub's REST API description refuses:\n" + "\n".join(found[:20]))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if CONTRACT_CHECKED[0]:
        terminalreporter.write_line(
            f"{CONTRACT_CHECKED[0]} exchanges with the GitHub stand-in held to @octokit/openapi"
        )
