"""The real agent adapter's environment: an agent CLI is given this process's environment less
FREE-MAD's own credentials, those named and any FREEMAD_* variable named like one."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from freemad.agents.agent_port import CallRequest, CallStatus
from freemad.agents.subprocess_agent import CliAgent
from freemad.config.models import AgentConfig, Mode
from tests.conftest import recording_agent


def test_freemad_credentials_never_reach_an_agent_its_own_keys_do(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    agent = recording_agent(tmp_path, log)
    config = AgentConfig(id="rec", cli_command=str(agent), cli_mode_arg=True)
    given = {
        "PATH": "/usr/bin:/bin",
        "FREEMAD_DASHBOARD_TOKEN": "the-dashboards-start-token",
        "FREEMAD_WEBHOOK_SECRET": "the-bots-webhook-secret",
        "GITHUB_TOKEN": "ghs_freemads_own",
        "FREEMAD_SOME_FUTURE_API_KEY": "named-like-a-credential",
        "FREEMAD_LOG_LEVEL": "debug",  # FREE-MAD's, but no credential
        "ANTHROPIC_API_KEY": "the-agents-own",
    }
    result = asyncio.run(
        CliAgent(config, max_output_bytes=100_000, env=given).call(
            CallRequest(Mode.GENERATE, "Hello.", 30)
        )
    )
    assert result.status is CallStatus.OK, result.detail
    (call,) = [json.loads(line) for line in log.read_text().splitlines()]
    seen = {name: call["env"].get(name) for name in given}
    assert seen == {
        "PATH": "/usr/bin:/bin",
        "FREEMAD_DASHBOARD_TOKEN": None,
        "FREEMAD_WEBHOOK_SECRET": None,
        "GITHUB_TOKEN": None,
        "FREEMAD_SOME_FUTURE_API_KEY": None,
        "FREEMAD_LOG_LEVEL": "debug",
        "ANTHROPIC_API_KEY": "the-agents-own",
    }
    assert "the-dashboards-start-token" not in result.text and "the-agents-own" in result.text
