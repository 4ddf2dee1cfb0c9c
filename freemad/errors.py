"""One exception tree for FREE-MAD; the surfaces (CLI, Action, bot) translate it into one clear line."""

from __future__ import annotations


class FreemadError(Exception):
    """Base of every error FREE-MAD raises on purpose. `exit_code` is what the CLI exits with."""

    exit_code = 1

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        text = " ".join(self.message.split())
        return f"{text} ({self.hint})" if self.hint else text


class UsageError(FreemadError):
    """The user asked for something that cannot work as asked: bad input, not a failure of the run."""

    exit_code = 2


class ConfigError(UsageError):
    """A configuration file is missing, unreadable, malformed or inconsistent."""


class AgentError(FreemadError):
    """An agent CLI could not be run or answered badly; recorded against the agent, never fatal alone."""


class QuorumError(FreemadError):
    """Fewer agents answered than `deadlines.min_agents`; the debate cannot decide."""

    def __init__(self, message: str, *, transcript_path: str | None = None) -> None:
        super().__init__(message)
        self.transcript_path = transcript_path
