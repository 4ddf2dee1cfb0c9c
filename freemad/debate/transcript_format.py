"""The transcript's shape on disk: each distinct answer text stored once, rounds referring to it.

Format 1 (no `format` field) repeated every answer up to four times: each turn's
`response.solution` (a kept answer again every round), `answers[id].canonical` and each
`answers[id].variants[i].text`. Format 2 keeps the text once per variant: `answers[id].text`
is the first variant's text, a variant carries `text` only where it differs, `canonical` only
where it differs from `text`, and a turn's response names its answer by `answer_id` (and
`variant`, when not the first) instead of repeating the solution. `final_solution`, a field
the reference implementation's readers know, stays: one more copy of one answer. `expand` turns either format into the full (format 1) shape every
reader and `DebateResult` use, so old and new transcripts read alike. Pure: dicts in, dicts out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

FORMAT = 2  # the shape `compact` writes; a transcript without `format` is format 1


def compact(data: dict[str, Any]) -> dict[str, Any]:
    """A full transcript (a `DebateResult` dumped as JSON) in format 2; `data` is changed in place."""
    answers = data.get("answers") or {}
    texts: dict[str, list[str]] = {}  # answer id -> its variants' texts, in order
    for ident, record in answers.items():
        variants = record.get("variants") or []
        if not variants:
            continue
        texts[ident] = [v["text"] for v in variants]
        primary = texts[ident][0]
        compacted: dict[str, Any] = {"text": primary}
        if record.get("canonical") != primary:
            compacted["canonical"] = record.get("canonical", "")
        compacted["variants"] = [
            {k: v for k, v in variant.items() if k != "text" or v != primary}
            for variant in variants
        ]
        compacted["merged"] = record.get("merged", False)
        answers[ident] = compacted
    for round_record in data.get("transcript") or []:
        for turn in (round_record.get("agents") or {}).values():
            response = turn.get("response")
            if not response or turn.get("answer_id") not in texts:
                continue
            index = _index(texts[turn["answer_id"]], response.get("solution"))
            if index is not None:
                del response["solution"]
                if index:
                    response["variant"] = index
    data["format"] = FORMAT
    return data


def expand(data: Mapping[str, Any]) -> dict[str, Any]:
    """Any transcript in the full shape: format 1 as it is, format 2 with its texts put back.

    Never raises on a malformed transcript (the dashboard reads files from anywhere): a
    reference that leads nowhere becomes an empty text."""
    if data.get("format") != FORMAT:
        return dict(data)
    full = {k: v for k, v in data.items() if k != "format"}
    texts: dict[str, list[str]] = {}
    answers: dict[str, Any] = {}
    for ident, entry in _map(data.get("answers")).items():
        record = _map(entry)
        primary = record.get("text", "")
        variants = [{"text": primary, **_map(v)} for v in _list(record.get("variants"))]
        texts[ident] = [str(v["text"]) for v in variants]
        answers[ident] = {
            "canonical": record.get("canonical", primary),
            "variants": variants,
            "merged": record.get("merged", False),
        }
    full["answers"] = answers
    rounds = []
    for entry in _list(data.get("transcript")):
        round_record = dict(_map(entry))
        round_record["agents"] = {
            agent_id: _full_turn(_map(turn), texts)
            for agent_id, turn in _map(round_record.get("agents")).items()
        }
        rounds.append(round_record)
    full["transcript"] = rounds
    return full


def _full_turn(turn: Mapping[str, Any], texts: Mapping[str, list[str]]) -> dict[str, Any]:
    full = dict(turn)
    response = turn.get("response")
    if isinstance(response, Mapping) and "solution" not in response:
        shown = {k: v for k, v in response.items() if k != "variant"}
        shown["solution"] = _text(texts, turn.get("answer_id"), response.get("variant", 0))
        full["response"] = shown
    return full


def _index(texts: list[str], text: object) -> int | None:
    try:
        return texts.index(text)  # type: ignore[arg-type]
    except ValueError:
        return None


def _text(texts: Mapping[str, list[str]], ident: object, index: object) -> str:
    variants = texts.get(ident, []) if isinstance(ident, str) else []
    if isinstance(index, int) and 0 <= index < len(variants):
        return variants[index]
    return ""


def _map(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []
