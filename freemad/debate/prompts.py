"""Debate prompts from Jinja2 templates, fitted to the per-call token budget with a visible marker."""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import jinja2

TRUNCATION_MARK = "[... {n} characters cut by FREE-MAD to fit the token budget ...]"


def estimate_tokens(text: str) -> int:
    """About four characters a token: the usual estimate when a CLI reports no usage."""
    return (len(text) + 3) // 4


@dataclass(frozen=True, slots=True)
class ShownAnswer:
    label: str
    solution: str
    reasoning: str


def truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    keep = max(limit, 0)
    return text[:keep] + "\n" + TRUNCATION_MARK.format(n=len(text) - keep)


class PromptBook:
    """Renders the three debate prompts; `templates_dir` may override any of them by file name."""

    def __init__(self, prompt_mode: str, templates_dir: str | None = None) -> None:
        self.env = template_environment(templates_dir)
        self.prompt_mode = prompt_mode

    def generate(self, requirement: str) -> str:
        return self.env.get_template("generate.j2").render(requirement=requirement)

    def critique(
        self,
        requirement: str,
        round_no: int,
        own: ShownAnswer,
        peers: Sequence[ShownAnswer],
        max_tokens: int | None = None,
    ) -> tuple[str, bool]:
        """The critique prompt, and whether answers were cut to fit `max_tokens`.

        Over the cap, every shown answer (the agent's own and its peers') is cut to the same
        length, the longest that fits; the cut is marked in the text.
        """
        template = self.env.get_template("critique.j2")

        def render(limit: int | None) -> str:
            return template.render(
                requirement=requirement,
                round=round_no,
                own=own if limit is None else _cut(own, limit),
                peers=peers if limit is None else [_cut(p, limit) for p in peers],
                prompt_mode=self.prompt_mode,
            )

        prompt = render(None)
        if max_tokens is None or estimate_tokens(prompt) <= max_tokens:
            return prompt, False
        low, high = 0, max(max(len(a.solution), len(a.reasoning)) for a in (own, *peers))
        while low < high:
            middle = (low + high + 1) // 2
            if estimate_tokens(render(middle)) <= max_tokens:
                low = middle
            else:
                high = middle - 1
        return render(low), True

    def clarify(self, prompt: str, problem: str) -> str:
        return self.env.get_template("clarify.j2").render(prompt=prompt, problem=problem)


@functools.lru_cache(maxsize=8)
def template_environment(templates_dir: str | None) -> jinja2.Environment:
    """One environment per template folder, so each template is compiled once per process."""
    loaders: list[jinja2.BaseLoader] = [jinja2.PackageLoader("freemad", "prompts")]
    if templates_dir:
        loaders.insert(0, jinja2.FileSystemLoader(str(Path(templates_dir))))
    return jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # noqa: S701 - plain text for agents, never HTML
        keep_trailing_newline=True,
    )


def _cut(answer: ShownAnswer, limit: int) -> ShownAnswer:
    return replace(
        answer,
        solution=truncate(answer.solution, limit),
        reasoning=truncate(answer.reasoning, limit),
    )
