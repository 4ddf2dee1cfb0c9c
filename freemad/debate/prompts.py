"""Debate prompts from Jinja2 templates, fitted to the per-call token budget with a visible marker."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
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
        max_chars: int | None = None,
    ) -> tuple[str, bool]:
        """The critique prompt, and whether answers were cut to fit `max_tokens` or `max_chars`.

        Over the token cap, every shown answer (the agent's own and its peers') is cut to the
        same length, the longest that fits. Over `max_chars` (debate.max_prompt_chars), the
        peers' answers share what the template and the agent's own answer leave: answers shorter
        than an equal share stay whole, the others are cut to one length. Cuts are marked.
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

        if max_tokens is None and max_chars is not None and _chars(own, peers) > max_chars:
            # The answers alone pass the bound: no need to render them whole first.
            return fair_fit(self._renderer(requirement, round_no), own, peers, max_chars), True
        prompt = render(None)
        cut = False
        if max_tokens is not None and estimate_tokens(prompt) > max_tokens:
            low, high = 0, max(max(len(a.solution), len(a.reasoning)) for a in (own, *peers))
            while low < high:
                middle = (low + high + 1) // 2
                if estimate_tokens(render(middle)) <= max_tokens:
                    low = middle
                else:
                    high = middle - 1
            prompt, cut = render(low), True
        if max_chars is not None and len(prompt) > max_chars:
            limit = max_chars if max_tokens is None else min(max_chars, 4 * max_tokens)
            prompt = fair_fit(self._renderer(requirement, round_no), own, peers, limit)
            cut = True
        return prompt, cut

    def _renderer(
        self, requirement: str, round_no: int
    ) -> Callable[[ShownAnswer, Sequence[ShownAnswer]], str]:
        template = self.env.get_template("critique.j2")

        def render(own: ShownAnswer, peers: Sequence[ShownAnswer]) -> str:
            return template.render(
                requirement=requirement,
                round=round_no,
                own=own,
                peers=peers,
                prompt_mode=self.prompt_mode,
            )

        return render

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


# What one cut adds at most: the newline and the marker with a ten-digit count.
_MARK_CHARS = 1 + len(TRUNCATION_MARK.format(n=10**9))


def fair_fit(
    render: Callable[[ShownAnswer, Sequence[ShownAnswer]], str],
    own: ShownAnswer,
    peers: Sequence[ShownAnswer],
    limit: int,
) -> str:
    """`render(own, peers)` within `limit` characters, peers' texts cut to an equal share.

    The agent's own answer stays whole while the peers can make room; past that every text,
    its own included, is cut to one share. Rendering happens a few times, not per character."""
    empty = [replace(p, solution="", reasoning="") for p in peers]
    blank = replace(own, solution="", reasoning="")
    overhead = len(render(blank, empty))
    own_chars = len(own.solution) + len(own.reasoning)
    keep_own = limit - overhead - own_chars >= 0
    texts = [len(t) for p in peers for t in (p.solution, p.reasoning)]
    if not keep_own:
        texts += [len(own.solution), len(own.reasoning)]
    room = limit - overhead - (own_chars if keep_own else 0)
    share = _water_level(texts, room)
    while True:
        shown_own = own if keep_own else _cut(own, share)
        prompt = render(shown_own, [_cut(p, share) for p in peers])
        over = len(prompt) - limit
        if over <= 0 or share == 0:
            return prompt
        cut = max(1, sum(1 for n in texts if n > share))
        share = max(0, share - -(-over // cut))


def _chars(own: ShownAnswer, peers: Sequence[ShownAnswer]) -> int:
    return sum(len(a.solution) + len(a.reasoning) for a in (own, *peers))


def _water_level(lengths: Sequence[int], room: int) -> int:
    """The largest length L with sum(min(n, L)) plus a marker for every n > L within `room`."""
    remaining, ordered = room, sorted(lengths)
    for i, length in enumerate(ordered):
        left = len(ordered) - i
        level = (remaining - left * _MARK_CHARS) // left
        if length > level:
            return max(level, 0)
        remaining -= length
    return max(ordered, default=0)


def _cut(answer: ShownAnswer, limit: int) -> ShownAnswer:
    return replace(
        answer,
        solution=truncate(answer.solution, limit),
        reasoning=truncate(answer.reasoning, limit),
    )
