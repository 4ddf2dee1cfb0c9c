"""`freemad agents`: which agent CLIs are installed and logged in, and the config entry for each."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

import click


@click.command("agents")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list instead of text.")
def agents_command(as_json: bool) -> None:
    """List every agent CLI FREE-MAD has a preset for: installed (on PATH or beside this
    Python), its version, whether it is logged in where it can tell offline, and the config
    entry to paste into freemad.yaml. Never calls a model."""
    from freemad.agents.catalog import find_agents

    found = find_agents()
    if as_json:
        click.echo(json.dumps([asdict(agent) for agent in found], indent=2))
        return
    for agent in found:
        if not agent.installed:
            click.echo(f"✗ {agent.program:<9} {agent.type:<13} not installed: {agent.install}")
            continue
        mark = "✓" if not agent.problem else "!"
        version = agent.version or agent.problem
        click.echo(f"{mark} {agent.program:<9} {agent.type:<13} {version}  ({agent.path})")
        if agent.warning:
            click.echo(f"    version:   {agent.warning}")
        login = {True: "yes", False: "no", None: "unknown"}[agent.logged_in]
        click.echo(f"    logged in: {login} ({agent.login})")
        if agent.logged_in is not True:
            click.echo(f"    to log in: {agent.login_hint}")
        click.echo(f"    config:    agents: [{_flow(agent.entry)}]")


def _flow(entry: Mapping[str, Any]) -> str:
    """A config entry as one YAML flow mapping: {id: llm, type: llm, cli_args: {-m: MODEL}}."""
    parts = []
    for key, value in entry.items():
        shown = _flow(value) if isinstance(value, Mapping) else str(value)
        parts.append(f"{key}: {shown}")
    return "{" + ", ".join(parts) + "}"
