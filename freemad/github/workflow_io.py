"""Talking to the GitHub Actions runner: step outputs, the job summary, masks and annotations.

Outputs go to the file named by `GITHUB_OUTPUT` in the heredoc form, with a random delimiter so a
value (an agent's answer) can never end the block early and set outputs of its own. Annotations
are workflow commands on stdout; their text is escaped so an agent's answer cannot issue one.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, out: TextIO | None = None, **properties: str) -> None:
    """One workflow command: `::name key=value,...::message`."""
    props = ",".join(f"{key}={_escape_property(value)}" for key, value in properties.items())
    head = f"::{name} {props}::" if props else f"::{name}::"
    print(head + _escape_data(message), file=out or sys.stdout, flush=True)


def mask(secret: str, out: TextIO | None = None) -> None:
    """Ask the runner to mask `secret` in every later log line."""
    for line in secret.splitlines() or [secret]:
        if line.strip():
            command("add-mask", line, out)


def error(message: str, *, title: str = "FREE-MAD", out: TextIO | None = None) -> None:
    command("error", message, out, title=title)


def notice(message: str, *, title: str = "FREE-MAD", out: TextIO | None = None) -> None:
    command("notice", message, out, title=title)


def set_outputs(path: str | None, values: Mapping[str, str]) -> None:
    """Append `values` to the `GITHUB_OUTPUT` file; without one (a local run) nothing is written."""
    if not path:
        return
    with open(path, "a", encoding="utf-8") as handle:
        for name, value in values.items():
            delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
            while delimiter in value:  # pragma: no cover - 128 random bits
                delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
            handle.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")


def add_summary(path: str | None, markdown: str) -> None:
    """Append markdown to the job summary (`GITHUB_STEP_SUMMARY`)."""
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(markdown.rstrip() + "\n")


def read_outputs(path: Path) -> dict[str, str]:
    """Parse a `GITHUB_OUTPUT` file back, as the runner does (for tests and `simulate`)."""
    values: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        if "<<" in line:
            name, delimiter = line.split("<<", 1)
            body: list[str] = []
            while index < len(lines) and lines[index] != delimiter:
                body.append(lines[index])
                index += 1
            index += 1
            values[name] = "\n".join(body)
        elif "=" in line:
            name, value = line.split("=", 1)
            values[name] = value
    return values
