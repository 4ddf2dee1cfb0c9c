"""Debate prompts from Jinja2 templates, fitted to the per-call token budget with a visible marker."""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import jinja2

from freemad.core.replies import prompt_lines

TRUNCATION_MARK = "[... {n} characters cut by FREE-MAD to fit the token budget ...]"
# The most of a parse problem the retry's note quotes, so the note has a known size.
PROBLEM_CHARS = 200
_COMPACT = "critique_compact.j2"


def estimate_tokens(text: str) -> int:
    """About four characters a token: the usual estimate when a CLI reports no usage."""
    return (len(text) + 3) // 4


@dataclass(frozen=True, slots=True)
class ShownAnswer:
    label: str
    solution: str
    reasoning: str


# The tags the generate and critique prompts put around the requirement and the answers (the
# contract agents read, docs/agents.md). In a text they fence, each such tag's `<` is written
# `&lt;`: a requirement or an answer can neither close its own fence nor forge another's.
_FENCE_TAG = re.compile(r"<(\s*/?\s*)(requirement|your_answer|peer_answer)\b", re.IGNORECASE)


def defang(text: str) -> str:
    """`text` with every opening or closing fence tag in it made plain text."""
    return _FENCE_TAG.sub(r"&lt;\1\2", text) if "<" in text else text


def _defanged(answer: ShownAnswer, clean: Callable[[str], str]) -> ShownAnswer:
    solution, reasoning = clean(answer.solution), clean(answer.reasoning)
    if solution is answer.solution and reasoning is answer.reasoning:
        return answer  # the usual case: nothing to defang, nothing to copy
    return ShownAnswer(answer.label, solution, reasoning)


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
        # A round's answers, defanged once: every agent's prompt shows the same peers' answers.
        self._defanged: dict[str, str] = {}
        self._defanged_round = -1
        self._own_text: dict[str, frozenset[str]] = {}

    def _defang(self, text: str) -> str:
        found = self._defanged.get(text)
        if found is None:
            found = self._defanged[text] = defang(text)
        return found

    def generate(self, requirement: str) -> str:
        return self.env.get_template("generate.j2").render(requirement=defang(requirement))

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
        if round_no != self._defanged_round:
            self._defanged, self._defanged_round = {}, round_no
        requirement, own = self._defang(requirement), _defanged(own, self._defang)
        peers = [_defanged(peer, self._defang) for peer in peers]
        name = self._critique_template(requirement, round_no, len(peers), max_tokens)
        template = self.env.get_template(name)

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
        if name == _COMPACT:  # a small model: its reasoning goes, its answers stay as they fit
            own = replace(own, reasoning="")
            peers = [replace(peer, reasoning="") for peer in peers]
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
            prompt = fair_fit(self._renderer(requirement, round_no, name), own, peers, limit)
            cut = True
        return prompt, cut

    def _critique_template(
        self, requirement: str, round_no: int, peers: int, max_tokens: int | None
    ) -> str:
        """The critique template: the compact one when the full one's own text, with nothing
        in its answers, would take more than half of `max_tokens` (a model with a small
        context window), so that the answers keep the other half."""
        if max_tokens is None:
            return "critique.j2"
        blank = ShownAnswer("A", "", "")
        overhead = estimate_tokens(self._renderer(requirement, round_no)(blank, [blank] * peers))
        return _COMPACT if 2 * overhead > max_tokens else "critique.j2"

    def _renderer(
        self, requirement: str, round_no: int, name: str = "critique.j2"
    ) -> Callable[[ShownAnswer, Sequence[ShownAnswer]], str]:
        template = self.env.get_template(name)

        def render(own: ShownAnswer, peers: Sequence[ShownAnswer]) -> str:
            return template.render(
                requirement=requirement,
                round=round_no,
                own=own,
                peers=peers,
                prompt_mode=self.prompt_mode,
            )

        return render

    def finalize(
        self,
        requirement: str,
        winner: ShownAnswer,
        critiques: Sequence[ShownAnswer],
        max_chars: int | None = None,
    ) -> tuple[str, bool]:
        """The finalizer's prompt (`debate.finalizer`), and whether texts were cut to fit
        `max_chars`: the critiques share the room the winning answer leaves, as peers' answers
        do in a critique prompt. Every untrusted text is fenced by tags no text contains."""
        template = self.env.get_template("finalize.j2")

        def render(own: ShownAnswer, shown: Sequence[ShownAnswer]) -> str:
            texts = [requirement, own.solution, own.reasoning]
            texts += [c.reasoning for c in shown]
            return template.render(
                requirement=requirement,
                winner=own,
                critiques=shown,
                fence=unforgeable_fence(texts),
            )

        prompt = render(winner, critiques)
        if max_chars is None or len(prompt) <= max_chars:
            return prompt, False
        return fair_fit(render, winner, critiques, max_chars), True

    def clarify(self, prompt: str, problem: str) -> str:
        """`prompt` again, with a note naming what was wrong with the reply (at most
        PROBLEM_CHARS of it), so that the note is never longer than `retry_room` allows."""
        if len(problem) > PROBLEM_CHARS:
            problem = problem[: PROBLEM_CHARS - 3] + "..."
        return self.env.get_template("clarify.j2").render(prompt=prompt, problem=problem)

    def retry_room(self) -> int:
        """The estimated tokens the retry's note adds to a prompt, at most: a cap on the first
        prompt less this keeps the retry within the cap too."""
        return estimate_tokens(self.clarify("", "x" * PROBLEM_CHARS)) + 1

    def prompt_cap(self, budget: int | None) -> int | None:
        """The first prompt's cap under a `budget` of estimated tokens per call: what leaves
        room for the retry's note, so that no call, the retry included, passes the budget."""
        return None if budget is None else max(budget - self.retry_room(), 1)

    def window_cap(self, window: int | None) -> int | None:
        """The prompt tokens a model with a `window`-token context takes: a quarter of it is
        kept for the reply, and room for the retry's note, so the retry fits too."""
        return None if window is None else self.prompt_cap(window * 3 // 4)

    def own_text(self, mode: str) -> frozenset[str]:
        """The lines of the `mode` prompt's own text (instructions, example, the retry's note),
        without the requirement or any answer: what a reply that merely echoes it is made of."""
        found = self._own_text.get(mode)
        if found is None:
            blank = ShownAnswer("", "", "")
            if mode == "critique":
                prompt = self._renderer("", 1)(blank, [blank])
                prompt += "\n" + self._renderer("", 1, _COMPACT)(blank, [blank])
            else:
                prompt = self.generate("")
            found = prompt_lines(prompt + "\n" + self.clarify("", ""))
            self._own_text[mode] = found
        return found


def unforgeable_fence(texts: Sequence[str]) -> str:
    """A tag suffix found in none of `texts`: hex digits of a hash of them all. A text would have
    to contain the hash of itself to close its fence early; on the chance that one holds the
    suffix anyway, the next hash is tried."""
    digest = hashlib.sha256("\x00".join(texts).encode("utf-8", "surrogatepass")).hexdigest()
    while any(digest[:16] in text for text in texts):
        digest = hashlib.sha256(digest.encode("ascii")).hexdigest()
    return digest[:16]


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
