"""Running an evaluation: one debate per item, graded by every method, kept one file per item so a
rerun resumes. The debate's agents and the sandbox come from the adapters the surface hands in.

An output folder holds `run.json` (what was evaluated: dataset, config digest, rounds),
`items/*.json` (one graded row per finished item), `transcripts/` (each debate's transcript and
`index.jsonl`, item id to transcript) and `report.json`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from freemad import runner
from freemad.adapters import Adapters
from freemad.config.models import FreemadConfig
from freemad.debate import arun_debate, write_transcript
from freemad.debate.debate_record import DebateResult
from freemad.debate.transcript import transcript_data
from freemad.errors import FreemadError, UsageError
from freemad.eval.accuracy_report import build_report
from freemad.eval.baselines import (
    Baselines,
    candidates,
    copies_config,
    judge_pick,
    judge_prompt,
    self_consistency,
)
from freemad.eval.grading import Progress, code_sandbox, failed_row, grade, quiet, write_json
from freemad.eval.items import Dataset, Item
from freemad.eval.methods import trajectory
from freemad.eval.progress import Tracker
from freemad.eval.rescore import INDEX
from freemad.redact import Redactor
from freemad.sandbox.sandbox_port import Sandbox

Unit = tuple[Item, int]  # an item and its repeat (0, 1, ...)


def unit_key(item: Item, repeat: int) -> str:
    """Repeat 0 is the item's id (so a folder of one repeat is the same as before repeats), then
    `id#1`, `id#2`, ..."""
    return item.id if repeat == 0 else f"{item.id}#{repeat}"


def _right(rows: Iterable[dict[str, Any]]) -> int:
    return sum(bool(row["methods"].get("freemad", {}).get("correct")) for row in rows)


def item_file(out: Path, item_id: str) -> Path:
    """Where an item's graded row is kept: its id made safe for a file name, and a hash of it."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", item_id)[:60]
    digest = hashlib.sha256(item_id.encode("utf-8")).hexdigest()[:10]
    return out / "items" / f"{safe}-{digest}.json"


def settings_digest(config: FreemadConfig) -> str:
    """A fingerprint of the config's settings that can change an answer: all of it but where
    transcripts and logs go and how verbose they are."""
    data = config.model_dump(mode="json", exclude={"output", "logging"})
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class Evaluation:
    """One output folder: what it holds, what is left to run, and running it."""

    def __init__(
        self,
        dataset: Dataset,
        config: FreemadConfig,
        out: Path,
        *,
        rounds: int | None,
        adapters: Adapters,
        progress: Progress = quiet,
        baselines: Baselines | None = None,
        repeats: int = 1,
        seed: int | None = None,
        live: Progress | None = None,
        resume: bool = True,
    ) -> None:
        self.resume = resume
        self.baselines = baselines or Baselines()
        self.repeats = repeats
        self.seed = seed
        self.live = live or progress
        self.dataset = dataset
        self.config = config
        self.out = out
        self.rounds = config.debate.rounds if rounds is None else rounds
        self.adapters = adapters
        self.progress = progress
        self.header = {
            "dataset": dataset.name,
            "config_digest": settings_digest(config),
            "rounds": self.rounds,
            "agents": [a.id for a in config.enabled_agents],
            **self.baselines.header(),
            "seed": seed,
            "repeats": repeats,
        }
        self.redactor = Redactor(config.security.redact_patterns)
        self.finalizer = config.debate.finalizer is not None  # grade `freemad_finalized` too
        self.output = config.output.model_copy(
            update={"transcript_dir": str(out / "transcripts"), "format": "json"}
        )

    def claim_folder(self) -> None:
        """Refuse a folder that holds an evaluation of something else; mark it as ours."""
        marker = self.out / "run.json"
        if marker.is_file():
            try:
                before = json.loads(marker.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                before = None
            # A folder from before the baselines and seeds existed ran none. More --repeats
            # may be asked for later: the repeats done are kept.
            before = (
                {**Baselines().header(), "seed": None, **before}
                if isinstance(before, dict)
                else None
            )
            keys = ("dataset", "config_digest", "rounds", "seed", *self.baselines.header())
            if before is None or any(before.get(key) != self.header[key] for key in keys):
                raise UsageError(
                    f"{self.out} holds an evaluation of another dataset, config, --rounds, "
                    "--seed or baselines; give another --out, or remove it to start again"
                )
        elif self.out.exists() and not self.out.is_dir():
            raise UsageError(f"--out {self.out} is a file, not a folder")
        try:
            write_json(marker, self.header)
        except OSError as exc:
            raise UsageError(f"cannot write into {self.out}: {exc.strerror or exc}") from None

    def units(self) -> list[Unit]:
        """Every (item, repeat) to grade, in dataset order, repeats together."""
        return [(item, r) for item in self.dataset.items for r in range(self.repeats)]

    def finished(self) -> dict[str, dict[str, Any]]:
        """The rows kept from an earlier run, for the items they still describe."""
        kept: dict[str, dict[str, Any]] = {}
        for item, repeat in self.units():
            path = item_file(self.out, unit_key(item, repeat))
            try:
                row = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(row, dict) and row.get("fingerprint") == item.fingerprint():
                kept[unit_key(item, repeat)] = row
        return kept

    def run(self, concurrency: int, why: str = "") -> dict[str, Any]:
        """Run what is left; `why` says how `concurrency` was chosen, in the report."""
        self.header["concurrency"] = {"items_at_once": concurrency, "why": why}
        sandbox = code_sandbox(self.dataset, self.config, self.adapters)
        self.claim_folder()
        rows = self.finished()
        if rows and not self.resume:
            raise UsageError(
                f"{self.out} holds {len(rows)} finished item(s) of this evaluation",
                hint="pass --resume to keep them and run the rest, or give another --out",
            )
        pending = [unit for unit in self.units() if unit_key(*unit) not in rows]
        total = len(self.units())
        repeats = f" x {self.repeats} repeats" if self.repeats > 1 else ""
        self.progress(
            f"{len(self.dataset.items)} item(s){repeats}: {len(rows)} already done, "
            f"{len(pending)} to run, up to {concurrency} at a time"
        )
        tracker = Tracker(total=total, done=len(rows), correct=_right(rows.values()))
        rows |= runner.run(self._run_all(pending, concurrency, sandbox, tracker))
        report = build_report([rows[unit_key(*unit)] for unit in self.units()], self.header)
        write_json(self.out / "report.json", report)
        return report

    async def _run_all(
        self, pending: list[Unit], concurrency: int, sandbox: Sandbox | None, tracker: Tracker
    ) -> dict[str, dict[str, Any]]:
        limit = asyncio.Semaphore(concurrency)
        rows: dict[str, dict[str, Any]] = {}
        tracker.start(time.monotonic())

        async def one(item: Item, repeat: int) -> None:
            async with limit:
                rows[unit_key(item, repeat)] = row = await self._run_item(item, repeat, sandbox)
                tracker.finished(right=_right([row]) == 1, now=time.monotonic())
                self.live(tracker.line(unit_key(item, repeat), row["status"], time.monotonic()))

        await asyncio.gather(*(one(item, repeat) for item, repeat in pending))
        return rows

    def _config(self, repeat: int) -> FreemadConfig:
        """The config of one repeat: with `--seed S`, the topology's and the tie-break's seeds are
        S + repeat, so repeats differ where the harness draws and a rerun draws the same."""
        if self.seed is None:
            return self.config
        data = self.config.model_dump(mode="json")
        data["topology"]["seed"] = self.seed + repeat
        data["scoring"]["random_seed"] = self.seed + repeat
        return FreemadConfig.model_validate(data)

    async def _run_item(self, item: Item, repeat: int, sandbox: Sandbox | None) -> dict[str, Any]:
        try:
            result = await arun_debate(
                item.question, self._config(repeat), rounds=self.rounds, adapters=self.adapters
            )
        except FreemadError as exc:
            # Not kept: a rerun tries the item again.
            return {**failed_row(item, exc.one_line(), finalizer=self.finalizer), "repeat": repeat}
        data = transcript_data(result, self.redactor)
        path = await asyncio.to_thread(write_transcript, result, self.output, self.redactor)
        recorded = DebateResult.model_validate(data)
        extra, extra_cost = await self._baselines(item, recorded)
        row = await asyncio.to_thread(
            grade, item, recorded, sandbox, finalizer=self.finalizer, extra=extra
        )
        if extra_cost:
            row["extra_cost"] = extra_cost
        row["transcript"] = str(Path("transcripts") / path.name)
        row["fingerprint"] = item.fingerprint()
        row["repeat"] = repeat
        write_json(item_file(self.out, unit_key(item, repeat)), row)
        entry: dict[str, Any] = {"id": item.id, "run_id": result.run_id, "transcript": path.name}
        if repeat:
            entry["repeat"] = repeat
        with (self.out / "transcripts" / INDEX).open("a", encoding="utf-8") as index:
            index.write(json.dumps(entry) + "\n")
        return row

    async def _baselines(
        self, item: Item, result: DebateResult
    ) -> tuple[dict[str, str | None], dict[str, dict[str, Any]]]:
        """The baselines' answers (normal forms) and what their extra calls cost."""
        chosen: dict[str, str | None] = {}
        costs: dict[str, dict[str, Any]] = {}
        path = trajectory(result)
        plan = self.baselines
        if plan.samples >= 2 and plan.sampler is not None:
            config = copies_config(self.config, plan.sampler, plan.samples - 1, "sample")
            more = await self._extra_call(item.question, config)
            texts = [path.initial(plan.sampler)]
            if more is not None and more.transcript:
                first = more.transcript[0].agents
                replies = [first[a].response for a in sorted(first)]
                texts += [reply.solution if reply is not None else None for reply in replies]
            chosen["self_consistency"] = self_consistency(texts, item.normal)
            costs["self_consistency"] = _cost(more)
        if plan.judge is not None:
            options = candidates(path, item.normal)
            if len(options) <= 1:
                chosen["judge"] = options[0][0] if options else None
                costs["judge"] = _cost(None)
            else:
                config = copies_config(self.config, plan.judge, 1, "judge")
                picked = await self._extra_call(judge_prompt(item.question, options), config)
                reply = picked.final_solution if picked is not None else None
                chosen["judge"] = judge_pick(reply, options, item.normal)
                costs["judge"] = _cost(picked)
        return chosen, costs

    async def _extra_call(self, prompt: str, config: FreemadConfig) -> DebateResult | None:
        """Round 0 of `config`'s agents on `prompt`, its transcript kept under
        transcripts/extra/; None when it could not run."""
        try:
            result = await arun_debate(prompt, config, rounds=0, adapters=self.adapters)
        except FreemadError:
            return None
        output = self.output.model_copy(
            update={"transcript_dir": str(self.out / "transcripts" / "extra")}
        )
        await asyncio.to_thread(write_transcript, result, output, self.redactor)
        return result


def _cost(result: DebateResult | None) -> dict[str, Any]:
    metrics = result.metrics if result is not None else {}
    return {
        "calls": metrics.get("calls", 0),
        "tokens": metrics.get("tokens_total", 0),
        "cost_usd": metrics.get("cost_usd_total"),
        "wall_time_ms": metrics.get("wall_time_ms", 0),
    }


def run_evaluation(
    dataset: Dataset,
    config: FreemadConfig,
    out: Path,
    *,
    rounds: int | None,
    adapters: Adapters,
    concurrency: int,
    why_concurrency: str = "",
    progress: Progress = quiet,
    baselines: Baselines | None = None,
    repeats: int = 1,
    seed: int | None = None,
    live: Progress | None = None,
    resume: bool = True,
) -> dict[str, Any]:
    """Evaluate `dataset` into `out`, skipping the items finished there before (refused, when
    there are some, unless `resume`); the report."""
    return Evaluation(
        dataset,
        config,
        out,
        rounds=rounds,
        adapters=adapters,
        progress=progress,
        baselines=baselines,
        repeats=repeats,
        seed=seed,
        live=live,
        resume=resume,
    ).run(concurrency, why_concurrency)
