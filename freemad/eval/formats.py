"""The formats benchmarks ship in, read from a file the user has (nothing is fetched): each record
made an `Item`, or a ValueError saying what is wrong with it (the caller names the line).

| format | file | a record |
|---|---|---|
| `gsm8k` | JSONL | `question`, `answer` ending `#### 72` |
| `math` | JSONL | `problem`, and `answer` or a `solution` with a `\\boxed{}` |
| `mcq` | CSV | question, 2 to 5 options, the right letter (MMLU's columns; a header row is skipped) |
| `yesno` | JSONL | `question`, `answer` true/false or yes/no (StrategyQA) |
| `code` | JSONL, or .jsonl.gz | `task_id`, `prompt`, `test`, `entry_point` (HumanEval's) |
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from freemad.eval.checkers import LETTERS, choice_letter
from freemad.eval.items import Item
from freemad.eval.math_text import last_boxed

HUMANEVAL_QUESTION = (
    "Complete the following Python function. Answer with the whole function, its imports, "
    "signature and body, in one ```python fenced block.\n\n```python\n{prompt}```"
)
_MATH_ASK = "{problem}\n\nGive the final answer in \\boxed{{}}."
_MCQ_ASK = "{question}\n\n{options}\n\nAnswer with the letter of the correct option."
_YES_NO_ASK = "{question}\n\nAnswer yes or no."
_GSM8K_ASK = "{question}\n\nEnd with the final answer as a number alone on the last line."


def guess_format(suffix: str, first: Any) -> str:
    """The format of a file from its name's end and its first record (a parsed JSON line)."""
    if suffix == ".csv":
        return "mcq"
    if not isinstance(first, dict) or "checker" in first:
        return "freemad"
    if "task_id" in first and "test" in first:
        return "code"
    if "problem" in first:
        return "math"
    answer = first.get("answer")
    if isinstance(answer, str) and "####" in answer:
        return "gsm8k"
    if isinstance(answer, bool) or str(answer).strip().lower() in ("yes", "no"):
        return "yesno"
    return "freemad"


def _text(record: Mapping[str, Any], key: str) -> str:
    value = record.get(key)
    if value is None:
        raise ValueError(f"missing {key}")
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{key} must be non-empty text")
    return value


def _ident(record: Mapping[str, Any], keys: Sequence[str], line: int) -> str:
    for key in keys:
        value = record.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
            return str(value)
    return str(line)


def _object(record: Any) -> Mapping[str, Any]:
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    return record


def gsm8k_item(record: Any, line: int) -> Item:
    data = _object(record)
    question, answer = _text(data, "question"), _text(data, "answer")
    if "####" not in answer:
        raise ValueError("answer has no '#### <final answer>'")
    final = answer.rsplit("####", 1)[1].strip().replace(",", "")
    if not final:
        raise ValueError("nothing after '####' in answer")
    ident = _ident(data, ("id",), line)
    return Item(ident, _GSM8K_ASK.format(question=question), "numeric", answer=final)


def math_item(record: Any, line: int) -> Item:
    data = _object(record)
    problem = _text(data, "problem")
    answer = data.get("answer")
    if answer is None:
        solution = _text(data, "solution")
        answer = last_boxed(solution)
        if answer is None:
            raise ValueError("solution has no \\boxed{} answer (and there is no answer field)")
    if isinstance(answer, (int, float)) and not isinstance(answer, bool):
        answer = str(answer)
    if not isinstance(answer, str) or not answer.strip():
        raise ValueError("answer must be non-empty text")
    ident = _ident(data, ("unique_id", "id"), line)
    return Item(ident, _MATH_ASK.format(problem=problem), "math", answer=answer)


def yesno_item(record: Any, line: int) -> Item:
    data = _object(record)
    question = _text(data, "question")
    if "answer" not in data:
        raise ValueError("missing answer")
    answer = data["answer"]
    if isinstance(answer, bool):
        answer = "yes" if answer else "no"
    if not isinstance(answer, str) or answer.strip().lower() not in ("yes", "no", "true", "false"):
        raise ValueError(f"answer {answer!r} is not yes/no or true/false")
    answer = {"true": "yes", "false": "no"}.get(answer.strip().lower(), answer.strip().lower())
    ident = _ident(data, ("qid", "id"), line)
    return Item(ident, _YES_NO_ASK.format(question=question), "yesno", answer=answer)


def code_item(record: Any, line: int) -> Item:
    data = _object(record)
    prompt, test, entry = _text(data, "prompt"), _text(data, "test"), _text(data, "entry_point")
    if not entry.isidentifier():
        raise ValueError(f"entry_point {entry!r} is not a Python name")
    solution = data.get("canonical_solution")
    return Item(
        id=_ident(data, ("task_id", "id"), line),
        question=HUMANEVAL_QUESTION.format(prompt=prompt),
        checker="code",
        answer=prompt + solution if isinstance(solution, str) else None,
        test=test,
        entry_point=entry,
        prompt=prompt,
    )


def mcq_item(row: Sequence[str], line: int, header: Sequence[str] | None) -> Item:
    """One CSV row: MMLU's columns (question, the options, the answer letter), or by a header
    naming `question`, `answer` and option columns `A`..`E`; `id` when the header has one."""
    cells = [cell.strip() for cell in row]
    if header is not None:
        named = {name: cells[i] for i, name in enumerate(header) if i < len(cells)}
        question, answer = named.get("question", ""), named.get("answer", "")
        options = [named[letter] for letter in LETTERS if named.get(letter)]
        ident = named.get("id") or str(line)
    else:
        if len(cells) < 4:
            raise ValueError(f"{len(cells)} column(s): want a question, 2 to 5 options, a letter")
        question, options, answer, ident = cells[0], cells[1:-1], cells[-1], str(line)
    if not question:
        raise ValueError("missing question")
    if not 2 <= len(options) <= len(LETTERS):
        raise ValueError(f"{len(options)} option(s): want 2 to {len(LETTERS)}")
    letter = choice_letter(answer.upper() if len(answer) == 1 else answer)
    if letter is None or LETTERS.index(letter) >= len(options):
        raise ValueError(
            f"answer {answer!r} is not one of {LETTERS[0]}-{LETTERS[len(options) - 1]}"
        )
    listed = "\n".join(f"{LETTERS[i]}) {text}" for i, text in enumerate(options))
    return Item(
        ident,
        _MCQ_ASK.format(question=question, options=listed),
        "choice",
        answer=letter,
        options=tuple(options),
    )


JSON_FORMATS = {"gsm8k": gsm8k_item, "math": math_item, "yesno": yesno_item, "code": code_item}
