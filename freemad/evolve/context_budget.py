"""`evolve.context_budget_chars`: a cap on the prompt a worker receives.

Over the cap, the least important parts go first: the oldest rejected candidates, then the
knowledge paths, the best scores ever, the directions (the last listed first: a candidate's own
comes first) and finally the plan's end. The goal, the objective, the incumbent and the
protected paths (the rules of what the worker may change) are never cut, so a goal longer than
the cap is sent whole, over it. The prompt says what was left out, so the worker knows.
"""

from __future__ import annotations

from collections import Counter

from freemad.evolve.worker_protocol import EvolveRequest, render_worker_prompt

_PLAN_END = " [...]"


def fit(request: EvolveRequest, budget: int | None) -> tuple[str, list[str]]:
    """The worker's prompt for `request`, within `budget` characters where cutting can get it
    there, and what was cut, in words (empty when nothing was)."""
    prompt = render_worker_prompt(request)
    if budget is None or len(prompt) <= budget:
        return prompt, []
    cut: Counter[str] = Counter()
    while len(prompt) > budget:
        step = _shorter(request)
        if step is None:
            break
        label, request = step
        cut[label] += 1
        request, prompt = _noted(request, budget, cut)
    if len(prompt) > budget and request.plan:
        request, prompt = _cut_plan(request, budget, cut)
    return prompt, _said(cut)


def _shorter(request: EvolveRequest) -> tuple[str, EvolveRequest] | None:
    if request.recent_rejections:  # oldest first: they are in iteration order
        return "rejection", request.model_copy(
            update={"recent_rejections": request.recent_rejections[1:]}
        )
    if request.knowledge_paths:
        return "knowledge path", request.model_copy(
            update={"knowledge_paths": request.knowledge_paths[:-1]}
        )
    if request.best_ever:
        return "best scores", request.model_copy(update={"best_ever": {}})
    if request.directions:
        return "direction", request.model_copy(update={"directions": request.directions[:-1]})
    return None


def _cut_plan(request: EvolveRequest, budget: int, cut: Counter[str]) -> tuple[EvolveRequest, str]:
    """The plan shortened from its end until the prompt fits (it appears twice: in the text and
    in the request's JSON), or until nothing of it is left."""
    plan = request.plan or ""
    cut["plan's end"] = 1
    prompt = ""
    while True:
        over = len(render_worker_prompt(request)) - budget
        keep = max(0, len(plan) - max(over, 2) // 2 - len(_PLAN_END))
        plan = plan[:keep]
        request = request.model_copy(update={"plan": plan + _PLAN_END})
        request, prompt = _noted(request, budget, cut)
        if len(prompt) <= budget or not plan:
            return request, prompt


def _noted(request: EvolveRequest, budget: int, cut: Counter[str]) -> tuple[EvolveRequest, str]:
    note = f"to fit evolve.context_budget_chars ({budget}), left out: " + ", ".join(_said(cut))
    request = request.model_copy(update={"context_note": note})
    return request, render_worker_prompt(request)


def _said(cut: Counter[str]) -> list[str]:
    words = []
    for label, count in cut.items():
        if label == "rejection":
            words.append(f"the {count} oldest rejected candidate(s)")
        elif label in ("knowledge path", "direction"):
            words.append(f"{count} {label}(s)")
        else:
            words.append(f"the {label}")
    return words
