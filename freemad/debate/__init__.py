"""The debate runtime: the library API that the CLI, the GitHub Action and the bot all call."""

from freemad.debate.records import DebateResult
from freemad.debate.runtime import arun_debate, check_requirement, run_debate
from freemad.debate.transcript import write_transcript

__all__ = ["DebateResult", "arun_debate", "check_requirement", "run_debate", "write_transcript"]
