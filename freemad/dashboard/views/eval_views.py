"""An evaluation's page (`freemad eval run`/`rescore`'s `report.json`): the methods' accuracy
with their 95% intervals as a table and a chart, each agent alone, the items' rows and the cost.
Pure: a report in, a mapping out.

The report is read as untrusted data: its methods must have the shape `freemad.eval.accuracy_report`
gives them (else `ReportShapeError`, which names the field), and its rows are read defensively
(a missing or mistyped field shows as "-"). Answers are agent output; the template escapes them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from freemad.dashboard.views.viewdata import as_list, as_map, as_number, as_text
from freemad.eval.methods import EXTRA_METHODS, FINALIZED, FREEMAD_DEBATE, METHODS
from freemad.store.store_port import RUN_ID
from freemad.svg_chart import AXIS, GRID, svg_document, svg_head, xml_text

LABELS = {
    "single": "single (mean of the agents)",
    "majority_initial": "majority of round 0",
    "majority_final": "majority of the last round",
    "freemad": "Free-MAD rule, answers told apart by the checker",
    FREEMAD_DEBATE: "the debate's own Free-MAD decision (scoring.answer_identity)",
    FINALIZED: "finalizer's answer (debate.finalizer)",
    "self_consistency": "self-consistency (one agent sampled N times; extra calls)",
    "judge": "judge (one agent picks a final answer; an extra call)",
}


class ReportShapeError(ValueError):
    """The report is not what `freemad eval` writes; the message names the field."""


def check_report(report: Any) -> None:
    """Raise ReportShapeError unless `report` has every method's score as `build_report` makes it."""
    if not isinstance(report, Mapping):
        raise ReportShapeError("not a JSON object")
    methods = report.get("methods")
    if not isinstance(methods, Mapping):
        raise ReportShapeError("no `methods` object")
    for name in shown_methods(methods):
        _check_score(methods.get(name), f"methods.{name}")
    agents = methods["single"].get("agents")
    if not isinstance(agents, Mapping):
        raise ReportShapeError("no `methods.single.agents` object")
    for agent, score in agents.items():
        _check_score(score, f"methods.single.agents.{agent}")
    if not isinstance(report.get("rows", []), list):
        raise ReportShapeError("`rows` is not a list")


def shown_methods(methods: Mapping[str, Any]) -> list[str]:
    """Every method of a report: the debate's, and the finalizer's and the baselines' when the
    report has them."""
    return [*METHODS, *(m for m in (FREEMAD_DEBATE, FINALIZED, *EXTRA_METHODS) if m in methods)]


def _check_score(score: Any, where: str) -> None:
    if not isinstance(score, Mapping):
        raise ReportShapeError(f"no `{where}` object")
    for key in ("correct", "total"):
        value = score.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ReportShapeError(f"`{where}.{key}` is not a whole number")
    accuracy = as_number(score.get("accuracy"))
    if accuracy is None or not 0 <= accuracy <= 1:
        raise ReportShapeError(f"`{where}.accuracy` is not a number from 0 to 1")
    interval = score.get("interval")
    if (
        not isinstance(interval, list)
        or len(interval) != 2
        or any(as_number(v) is None or not 0 <= v <= 1 for v in interval)
    ):
        raise ReportShapeError(f"`{where}.interval` is not two numbers from 0 to 1")


def percent(value: Any) -> str:
    found = as_number(value)
    return "-" if found is None else f"{found:.1%}"


def score_row(key: str, label: str, score: Mapping[str, Any]) -> dict[str, Any]:
    low, high = score["interval"]
    return {
        "key": key,
        "label": label,
        "accuracy": float(score["accuracy"]),
        "low": float(low),
        "high": float(high),
        "shown": percent(score["accuracy"]),
        "correct": score["correct"],
        "total": score["total"],
        "interval": f"[{percent(low)}, {percent(high)}]",
    }


def eval_view(name: str, report: Mapping[str, Any], runs: Collection[str]) -> dict[str, Any]:
    """The page of the evaluation `name`; `runs` are the run ids that have a page (an item's
    debate is linked when its transcript is among them). `report` passed `check_report`."""
    methods = report["methods"]
    agents = [str(a) for a in methods["single"]["agents"]]
    names = shown_methods(methods)
    table = [score_row(m, LABELS[m], methods[m]) for m in names]
    alone = [score_row(a, a, methods["single"]["agents"][a]) for a in agents]
    cost = as_map(report.get("cost"))
    votes = names[1:]
    rows = [_row(as_map(row), agents, runs, votes) for row in as_list(report.get("rows"))]
    return {
        "name": name,
        "dataset": as_text(report.get("dataset")) or "-",
        "rounds": as_text(report.get("rounds")) or "-",
        "config_digest": as_text(report.get("config_digest")),
        "transcripts": as_text(report.get("transcripts")),
        "agents": agents,
        # Not "items": in a template `e.items` would be the mapping's method.
        "item_count": _count(report.get("items")),
        "failed_items": _count(report.get("failed_items")),
        "interval_name": as_text(report.get("interval")) or "95% Wilson score interval",
        "methods": table,
        "alone": alone,
        "chart": eval_chart_svg([*table[:1], *alone, *table[1:]]),
        "cost": {
            "usd": _usd(cost.get("usd")),
            "tokens": _count(cost.get("tokens")),
            "calls": _count(cost.get("calls")),
            "seconds": _seconds(cost.get("debate_time_ms")),
        },
        "votes": votes,
        "rows": rows,
        "missing": [as_text(m) for m in as_list(report.get("missing"))],
    }


def _row(
    row: Mapping[str, Any], agents: list[str], runs: Collection[str], votes: list[str]
) -> dict[str, Any]:
    methods, single = as_map(row.get("methods")), as_map(row.get("single"))
    run_id = as_text(row.get("run_id"))
    return {
        "id": as_text(row.get("id")) or "-",
        "checker": as_text(row.get("checker")) or "-",
        "expected": as_text(row.get("expected")) if row.get("expected") is not None else "-",
        "status": as_text(row.get("status")) or "-",
        "error": as_text(row.get("error")),
        "methods": [_verdict(methods.get(m)) for m in votes],
        "single": [_verdict(single.get(a)) for a in agents],
        "calls": _count(row.get("calls")),
        "tokens": _count(row.get("tokens")),
        "usd": _usd(row.get("cost_usd")),
        "seconds": _seconds(row.get("wall_time_ms")),
        "run_id": run_id if RUN_ID.fullmatch(run_id) and run_id in runs else None,
    }


def _verdict(value: Any) -> dict[str, Any]:
    found = as_map(value)
    answer = found.get("answer")
    return {
        "answer": None if answer is None else as_text(answer),
        "correct": found.get("correct") is True,
    }


def _count(value: Any) -> str:
    found = as_number(value)
    return "-" if found is None else str(round(found))


def _usd(value: Any) -> str:
    found = as_number(value)
    return "not recorded" if found is None else f"${found:.4f}"


def _seconds(ms: Any) -> float | None:
    found = as_number(ms)
    return None if found is None else found / 1000


def eval_summary(report: Mapping[str, Any]) -> dict[str, Any]:
    """What the index says of an evaluation (its report passed `check_report`)."""
    methods = report["methods"]
    return {
        "dataset": as_text(report.get("dataset")) or "-",
        "item_count": _count(report.get("items")),
        "accuracy": {m: percent(methods[m]["accuracy"]) for m in METHODS},
    }


# --- the chart --------------------------------------------------------------------------------

BAR, WHISKER = "#0072B2", "#000000"
_LEFT, _RIGHT, _TOP, _ROW = 230, 150, 16, 26


def eval_chart_svg(
    rows: list[dict[str, Any]],
    *,
    width: int = 720,
    title: str = "Accuracy of each method with its 95% interval",
    caption: str = "accuracy (bar) and 95% interval (whisker)",
    chart_id: str = "eval-chart",
) -> str:
    """Each row's accuracy as a bar from 0 and its interval as a whisker, on a 0-100% axis
    (`title`, `caption` and `chart_id` let other rates than accuracies use it)."""
    height = _TOP + _ROW * len(rows) + 34
    left, right = _LEFT, width - _RIGHT

    def x(value: float) -> str:
        return f"{left + (right - left) * value:.1f}"

    out = svg_head(
        width,
        height,
        name=chart_id,
        title=title,
        desc=title + ". " + _describe(rows),
    )
    bottom = _TOP + _ROW * len(rows)
    for tick in range(0, 101, 20):
        out.append(
            f'<line x1="{x(tick / 100)}" y1="{_TOP}" x2="{x(tick / 100)}" y2="{bottom}" '
            f'stroke="{GRID}"/>'
        )
        out.append(
            f'<text x="{x(tick / 100)}" y="{bottom + 16}" text-anchor="middle" '
            f'fill="{AXIS}">{tick}%</text>'
        )
    for n, row in enumerate(rows):
        top = _TOP + _ROW * n
        middle = top + _ROW / 2
        label = row["label"] if len(row["label"]) <= 32 else row["label"][:31] + "…"
        out.append(f'<g class="method"><title>{xml_text(row["label"])}</title>')
        out.append(
            f'<text x="{left - 8}" y="{middle + 4:.1f}" text-anchor="end" '
            f'fill="{AXIS}">{xml_text(label)}</text>'
        )
        out.append(
            f'<rect x="{left}" y="{top + 5}" width="{float(x(row["accuracy"])) - left:.1f}" '
            f'height="{_ROW - 10}" fill="{BAR}"/>'
        )
        low, high = x(row["low"]), x(row["high"])
        out.append(
            f'<line x1="{low}" y1="{middle}" x2="{high}" y2="{middle}" stroke="{WHISKER}" '
            'stroke-width="1.5"/>'
        )
        for end in (low, high):
            out.append(
                f'<line x1="{end}" y1="{top + 7}" x2="{end}" y2="{top + _ROW - 7}" '
                f'stroke="{WHISKER}" stroke-width="1.5"/>'
            )
        out.append(
            f'<text x="{right + 8}" y="{middle + 4:.1f}" fill="{AXIS}">'
            f"{xml_text(row['shown'])} ({row['correct']}/{row['total']})</text>"
        )
        out.append("</g>")
    out.append(
        f'<text x="{(left + right) / 2:.1f}" y="{height - 4}" text-anchor="middle" '
        f'fill="{AXIS}">{xml_text(caption)}</text>'
    )
    return svg_document(out, [])


def _describe(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "None."
    parts = [
        f"{row['label']}: {row['shown']}, {row['correct']} of {row['total']}, interval "
        f"{row['interval']}"
        for row in rows
    ]
    return "; ".join(parts) + "."
