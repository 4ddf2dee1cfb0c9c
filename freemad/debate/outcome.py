"""The debate's state between rounds (who holds which answer) and the final decision and transcript."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from freemad.config.models import FreemadConfig
from freemad.core.answer_identity import answer_id, canonicalize
from freemad.core.scoring import Move, ScoreBoard, select_winner
from freemad.debate.clones import clone_flags
from freemad.debate.debate_record import (
    AgentTotals,
    AgentTurn,
    AnswerRecord,
    AnswerVariant,
    DebateResult,
    Flag,
    Response,
    RoundRecord,
    ScoreDelta,
    Tokens,
)
from freemad.debate.validation import confidence_of, scan_secrets, validate_answers
from freemad.redact import redact_secrets
from freemad.sandbox.sandbox_port import SandboxFactory


@dataclass(frozen=True, slots=True)
class Holding:
    answer_id: str
    solution: str
    reasoning: str


class Tally:
    """Folds rounds into holdings, answer identities and the score board."""

    def __init__(
        self, config: FreemadConfig, board: ScoreBoard, sandboxes: SandboxFactory | None
    ) -> None:
        self.config = config
        self.board = board
        self.sandboxes = sandboxes  # validation's, when it runs answers
        self.holdings: dict[str, Holding] = {}
        self.answers: dict[str, AnswerRecord] = {}
        self.rounds: list[RoundRecord] = []
        self.history: list[dict[str, str]] = []

    def tokens_used(self) -> int:
        return sum(t.tokens.input + t.tokens.output for r in self.rounds for t in r.agents.values())

    def _identify(self, text: str, agent_id: str, round_no: int) -> str:
        canonical = canonicalize(text, self.config.scoring.answer_identity)
        ident = answer_id(canonical)
        record = self.answers.get(ident)
        if record is None:
            record = self.answers[ident] = AnswerRecord(canonical=canonical, variants=[])
        if all(v.text != text for v in record.variants):
            record.variants.append(AnswerVariant(agent_id=agent_id, round=round_no, text=text))
            record.merged = len(record.variants) > 1
        return ident

    def apply_round(self, record: RoundRecord) -> None:
        moves: list[Move] = []
        for agent_id, turn in record.agents.items():
            previous = self.holdings.get(agent_id)
            if turn.status == "ok" and turn.response is not None:
                moves.append(self._answered(agent_id, turn, turn.response, previous, record.round))
            elif previous is not None:
                # A failed or cut critique turn carries the agent's answer forward as a keep.
                turn.action, turn.answer_id = "carried_forward", previous.answer_id
                moves.append(Move(record.round, agent_id, previous.answer_id, previous.answer_id))
        self.board.apply_all(moves)
        record.scores = dict(self._scores())
        self.rounds.append(record)
        self.history.append({a: h.answer_id for a, h in self.holdings.items()})

    def _answered(
        self,
        agent_id: str,
        turn: AgentTurn,
        response: Response,
        previous: Holding | None,
        round_no: int,
    ) -> Move:
        if previous is None:
            ident = self._identify(response.solution, agent_id, round_no)
            turn.action, turn.answer_id = "initial", ident
            self.holdings[agent_id] = Holding(ident, response.solution, response.reasoning)
            return Move(round_no, agent_id, ident)
        if response.decision == "revise":
            ident = self._identify(response.solution, agent_id, round_no)
        else:
            ident = previous.answer_id
        # A revision to an answer identical to the old one is a keep.
        turn.action = "keep" if ident == previous.answer_id else "revise"
        turn.answer_id = ident
        if turn.action == "keep":
            response.solution = previous.solution
        self.holdings[agent_id] = Holding(ident, response.solution, response.reasoning)
        return Move(round_no, agent_id, ident, previous.answer_id)

    def _scores(self) -> dict[str, float]:
        return self.board.normalized() if self.config.scoring.normalize else dict(self.board.raw)

    async def build(
        self,
        *,
        run_id: str,
        requirement: str,
        digest: str,
        started_at: str,
        wall_time: float,
        rounds_requested: int,
        error: str | None,
        early_stop: str | None,
    ) -> DebateResult:
        config = self.config
        result = DebateResult(
            run_id=run_id,
            status="failed" if error else "completed",
            error=error,
            requirement=requirement,
            config_digest=digest,
            started_at=started_at,
            finished_at=started_at,
            settings=self._settings(rounds_requested),
            early_stop_reason=early_stop,
            transcript=self.rounds,
            holders_history=self.history,
            answers=self.answers,
        )
        result.raw_scores = dict(self.board.raw)
        result.scores = self._scores()
        result.score_explainers = {
            ident: [
                ScoreDelta(
                    round=d.round,
                    agent=d.agent,
                    action=d.action.value,
                    factor=d.factor,
                    amount=d.amount,
                )
                for d in deltas
            ]
            for ident, deltas in self.board.explainers.items()
        }
        result.origin_agents = {
            ident: sorted({v.agent_id for v in rec.variants if v.round == rec.variants[0].round})
            for ident, rec in self.answers.items()
        }
        if not error and result.scores:
            # The answers tied for the top score are validated with the final ones, before the
            # choice among them: `scoring.tie_break: confidence` reads their confidence.
            _, tied = select_winner(result.scores, self.board.order)
            result.validation = await asyncio.to_thread(self._validate, self._final_answers(tied))
            confidence = {
                ident: value
                for ident, entry in result.validation.items()
                if (value := confidence_of(entry)) is not None
            }
            winner, tied = select_winner(
                result.scores,
                self.board.order,
                tie_break=config.scoring.tie_break,
                seed=config.scoring.random_seed,
                confidence=confidence,
            )
            result.final_answer_id = winner
            result.tied_answers = tied if len(tied) > 1 else []
            result.tie_broken_by = self._broken_by(tied, confidence)
            holders = [a for a, h in self.holdings.items() if h.answer_id == winner]
            result.winning_agents = holders or sorted(self.board.contributors.get(winner, ()))
            result.final_solution = self._solution_of(winner)
            result.answer_confidence = confidence
            result.validator_confidence = confidence.get(winner)
            result.flags = _flags(winner, result.validation.get(winner, {}))
        if self.rounds and self.rounds[0].round == 0:
            result.flags += clone_flags(config.enabled_agents, self.rounds[0])
        if config.validation.secret_scan:
            await asyncio.to_thread(_redact_secrets, result)
        result.agents = self._totals()
        result.metrics = self._metrics(wall_time, result.agents)
        result.finished_at = (
            datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        )
        return result

    def _final_answers(self, tied: list[str]) -> list[str]:
        """The answers held at the end, and those tied for the top score, in order."""
        held = {h.answer_id for h in self.holdings.values()} | set(tied)
        return [a for a in self.board.order if a in held]

    def _validate(self, final: list[str]) -> dict[str, dict[str, Any]]:
        """What validation found: the Python checks on the `final` answers, the secret scan on
        every answer (each text merged into it)."""
        checks = self.config.validation
        report: dict[str, dict[str, Any]] = {}
        if checks.enable_syntax_check or checks.enable_sandbox:
            sandbox = self.sandboxes.code(self.config.security.sandbox) if self.sandboxes else None
            solutions = {a: self._solution_of(a) for a in final}
            report, _ = validate_answers(solutions, final[0], checks, sandbox)
        if checks.secret_scan:
            for ident in self.board.order:
                texts = [(v.agent_id, v.round, v.text) for v in self.answers[ident].variants]
                report.setdefault(ident, {})["security"] = scan_secrets(texts)
        return report

    def _broken_by(self, tied: list[str], confidence: dict[str, float]) -> str | None:
        """How a tie for the top score was broken; None without one."""
        rule = self.config.scoring.tie_break
        if len(tied) < 2:
            return None
        if rule == "confidence" and len({confidence.get(a, 0.0) for a in tied}) > 1:
            return "confidence"
        return "random" if rule == "random" else "deterministic"

    def _solution_of(self, ident: str) -> str:
        for holding in self.holdings.values():
            if holding.answer_id == ident:
                return holding.solution
        return self.answers[ident].variants[0].text

    def _settings(self, rounds_requested: int) -> dict[str, object]:
        c = self.config
        finalizer = {} if c.debate.finalizer is None else {"finalizer": c.debate.finalizer}
        return {
            "rounds": rounds_requested,
            "agents": [a.id for a in c.enabled_agents],
            "topology": c.topology.model_dump(mode="json"),
            "prompt_mode": c.debate.prompt_mode,
            "weights": list(c.scoring.weights),
            "normalize": c.scoring.normalize,
            "tie_break": c.scoring.tie_break,
            "answer_identity": c.scoring.answer_identity.value,
            "min_agents": c.deadlines.min_agents,
            "soft_timeout_ms": c.deadlines.soft_timeout_ms,
            "hard_timeout_ms": c.deadlines.hard_timeout_ms,
            "accept_late_until_hard": c.deadlines.accept_late_until_hard,
            **finalizer,  # only when there is one: transcripts without it read as before
        }

    def _totals(self) -> dict[str, AgentTotals]:
        totals: dict[str, AgentTotals] = {}
        for record in self.rounds:
            for agent_id, turn in record.agents.items():
                total = totals.setdefault(agent_id, AgentTotals(tokens=Tokens(estimated=False)))
                total.calls += turn.attempts
                total.failures += turn.status != "ok"
                total.duration_ms += turn.duration_ms
                total.tokens.input += turn.tokens.input
                total.tokens.output += turn.tokens.output
                total.tokens.estimated |= turn.tokens.estimated
        for agent in self.config.agents:
            price = agent.pricing
            if agent.id in totals and price is not None:
                total = totals[agent.id]
                total.cost_usd = round(
                    (
                        total.tokens.input * price.input_per_mtok
                        + total.tokens.output * price.output_per_mtok
                    )
                    / 1e6,
                    6,
                )
        return totals

    def _metrics(self, wall_time: float, totals: dict[str, AgentTotals]) -> dict[str, object]:
        turns = [t for r in self.rounds for t in r.agents.values()]
        costs = [t.cost_usd for t in totals.values() if t.cost_usd is not None]
        return {
            "wall_time_ms": int(wall_time * 1000),
            "critical_path_ms": sum(
                max((t.duration_ms for t in r.agents.values()), default=0) for r in self.rounds
            ),
            "rounds_completed": len(self.rounds),
            "calls": sum(t.attempts for t in turns),
            "failures": sum(t.status == "failed" for t in turns),
            "cut": sum(t.status == "cut" for t in turns),
            "retries": sum(max(t.attempts - 1, 0) for t in turns),
            "cached_calls": sum(t.cached for t in turns),
            "tokens_total": self.tokens_used(),
            "tokens_estimated": any(t.tokens.estimated for t in turns),
            "cost_usd_total": round(sum(costs), 6) if costs else None,
        }


def _flags(winner: str, entry: dict[str, Any]) -> list[Flag]:
    """The warnings the winning answer's validation gives: credential-looking strings in it."""
    security = entry.get("security")
    if not security or security["passed"]:
        return []
    kinds = sorted({found["kind"] for found in security["found"]})
    return [Flag.secret(winner, kinds, "the winning answer")]


def _redact_secrets(result: DebateResult) -> None:
    """Every text agents wrote in `result` with credential-looking strings redacted: the
    transcript and all that shows it (CLI, comments, pages) are published."""
    if result.final_solution:
        result.final_solution = redact_secrets(result.final_solution)
    for record in result.answers.values():
        record.canonical = redact_secrets(record.canonical)
        for variant in record.variants:
            variant.text = redact_secrets(variant.text)
    for round_record in result.transcript:
        for turn in round_record.agents.values():
            if turn.response is not None:
                turn.response.solution = redact_secrets(turn.response.solution)
                turn.response.reasoning = redact_secrets(turn.response.reasoning)
            if turn.error is not None:
                turn.error.detail = redact_secrets(turn.error.detail)
            turn.replies = [redact_secrets(reply) for reply in turn.replies]
            turn.stderr_tail = redact_secrets(turn.stderr_tail)
