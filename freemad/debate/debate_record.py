"""What a debate records: each agent's turn, each round, and the result; serialised as the transcript."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from freemad.debate.transcript_format import expand

TurnStatus = Literal["ok", "failed", "cut"]
TurnAction = Literal["initial", "keep", "revise", "carried_forward", "none"]


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Response(Record):
    solution: str = ""
    reasoning: str = ""
    decision: Literal["keep", "revise"] | None = None
    # How a reply outside the contract was read (core.replies.recover); left out of the
    # transcript when None, as it was before there was such a reading.
    recovered: str | None = Field(default=None, exclude_if=lambda value: value is None)


class Failure(Record):
    """Why a turn gave no answer: the call's status (timeout, exit_error, ...) or `unparseable`."""

    cause: str
    detail: str = ""


class Tokens(Record):
    input: int = 0
    output: int = 0
    estimated: bool = True


class AgentTurn(Record):
    agent_id: str
    round: int
    status: TurnStatus
    action: TurnAction = "none"
    answer_id: str | None = None
    response: Response | None = None
    error: Failure | None = None
    deadline: Literal["soft", "hard"] | None = None
    peers_assigned: list[str] = Field(default_factory=list)
    peers_seen: list[str] = Field(default_factory=list)
    attempts: int = 0
    cached: bool = False
    truncated_prompt: bool = False
    duration_ms: int = 0
    tokens: Tokens = Field(default_factory=Tokens)
    exit_status: int | None = None
    # What the agent said, as it said it, parsed or not: each attempt's reply (its first and
    # last REPLY_END characters, the middle cut with a marker; PARSED_REPLY_END for the reply
    # that was read as the answer, which `response` holds anyway), and, when the call failed,
    # the last STDERR_TAIL characters of its stderr. Left out of the transcript when empty.
    replies: list[str] = Field(default_factory=list, exclude_if=lambda value: not value)
    stderr_tail: str = Field(default="", exclude_if=lambda value: not value)


REPLY_END = 8192
# A parsed reply's answer is in `response` already: its raw form is kept for what parsing
# dropped (chatter, fences), and a transcript keeps each answer's text about once (issue 19).
PARSED_REPLY_END = 2048
STDERR_TAIL = 4096
_CUT = "\n[... {n} characters of the reply cut by FREE-MAD ...]\n"


def kept_reply(text: str, end: int = REPLY_END) -> str:
    """`text` as a transcript keeps it: whole up to 2 * `end` characters, else its first and
    last `end` with a marker between, which says how much went."""
    if len(text) <= 2 * end:
        return text
    return text[:end] + _CUT.format(n=len(text) - 2 * end) + text[-end:]


class RoundRecord(Record):
    round: int
    type: Literal["generation", "critique"]
    agents: dict[str, AgentTurn]
    deadline_hit_soft: bool = False
    deadline_hit_hard: bool = False
    duration_ms: int = 0
    scores: dict[str, float] = Field(default_factory=dict)
    topology_info: dict[str, list[str]] | None = None


class ScoreDelta(Record):
    round: int
    agent: str
    action: str
    factor: float
    amount: float


class AnswerVariant(Record):
    agent_id: str
    round: int
    text: str


class AnswerRecord(Record):
    """One answer identity; `merged` when agents' texts differed but counted as the same answer."""

    canonical: str
    variants: list[AnswerVariant]
    merged: bool = False


class AgentTotals(Record):
    calls: int = 0
    failures: int = 0
    duration_ms: int = 0
    tokens: Tokens = Field(default_factory=Tokens)
    cost_usd: float | None = None


class Finalized(Record):
    """The finalizer's call (`debate.finalizer`): the final answer it wrote from the winner and
    the critiques the winner received, kept apart from the decision, which it never changes.
    `status` is ok with `text`, or failed with `error` (the call's failure, or `unparseable`)."""

    agent: str
    status: Literal["ok", "failed"]
    text: str = ""
    reasoning: str = ""
    critiques: int = 0  # how many critiques of the winner the prompt showed
    error: Failure | None = None
    duration_ms: int = 0
    tokens: Tokens = Field(default_factory=Tokens)
    exit_status: int | None = None

    def problem(self) -> str:
        """Why it failed, in one line ("cause: detail"); empty when it did not."""
        if self.error is None:
            return "" if self.status == "ok" else "no answer"
        return ": ".join(part for part in (self.error.cause, self.error.detail) if part)


class Flag(Record):
    """A warning about the winning answer, shown wherever the result is. `kind` is `secret`
    (credential-looking strings, `validation.secret_scan`); `kinds` what was found, never the
    text itself, which the transcript has redacted."""

    kind: str
    answer_id: str
    kinds: list[str] = Field(default_factory=list)
    message: str

    @classmethod
    def secret(cls, answer_id: str, kinds: list[str], what: str) -> Flag:
        """The warning that `what` (the winning answer, the finalized answer) holds
        credential-looking strings of `kinds`, redacted wherever it is shown."""
        return cls(
            kind="secret",
            answer_id=answer_id,
            kinds=kinds,
            message=(
                f"{what} holds what looks like a credential ({', '.join(kinds)}); it is "
                "redacted here, check the answer and revoke the credential if it is real"
            ),
        )


class DebateResult(Record):
    """The transcript. The reference implementation's fields, plus provenance and per-call metrics."""

    run_id: str
    status: Literal["completed", "failed"]
    error: str | None = None
    requirement: str
    config_digest: str
    started_at: str
    finished_at: str
    settings: dict[str, Any] = Field(default_factory=dict)
    final_answer_id: str | None = None
    final_solution: str | None = None
    scores: dict[str, float] = Field(default_factory=dict)
    raw_scores: dict[str, float] = Field(default_factory=dict)
    score_explainers: dict[str, list[ScoreDelta]] = Field(default_factory=dict)
    tied_answers: list[str] = Field(default_factory=list)
    winning_agents: list[str] = Field(default_factory=list)
    origin_agents: dict[str, list[str]] = Field(default_factory=dict)
    holders_history: list[dict[str, str]] = Field(default_factory=list)
    answers: dict[str, AnswerRecord] = Field(default_factory=dict)
    validation: dict[str, dict[str, Any]] = Field(default_factory=dict)
    validator_confidence: float | None = None  # the winner's
    answer_confidence: dict[str, float] = Field(default_factory=dict)  # each validated answer's
    # How a tie for the top score was broken: deterministic, random, or confidence (validator
    # confidence chose among the tied; scoring.tie_break: confidence); None without a tie.
    tie_broken_by: str | None = None
    flags: list[Flag] = Field(default_factory=list)  # warnings about the winner, e.g. a secret
    metrics: dict[str, Any] = Field(default_factory=dict)
    agents: dict[str, AgentTotals] = Field(default_factory=dict)
    early_stop_reason: str | None = None
    early_stop_note: str | None = None  # the early stop in words: which budget, when, what counts
    finalized: Finalized | None = None  # the finalizer's answer, apart from the decision
    transcript: list[RoundRecord] = Field(default_factory=list)
    transcript_path: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _full_shape(cls, data: Any) -> Any:
        """A format 2 transcript (each answer text once, see transcript_format) reads as the full one."""
        return expand(data) if isinstance(data, dict) and "format" in data else data

    def __repr__(self) -> str:
        # Short on purpose: asyncio formats the result's repr on its way out of asyncio.run,
        # and a full transcript's repr grows with every round (docs/benchmarks-history.md).
        return f"DebateResult(run_id={self.run_id!r}, status={self.status!r}, winner={self.final_answer_id!r})"
