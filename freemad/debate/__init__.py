"""The debate runtime: the library API that the CLI, the GitHub Action and the bot all call."""

from freemad.debate.debate_record import DebateResult
from freemad.debate.debate_runner import arun_debate, check_requirement, run_debate
from freemad.debate.transcript import write_transcript

__all__ = ["DebateResult", "arun_debate", "check_requirement", "run_debate", "write_transcript"]
