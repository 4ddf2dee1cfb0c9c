"""The benchmark formats, read from small files written here: each item as the format says, and
each malformed record one problem naming its line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from freemad.errors import UsageError
from freemad.eval.datasets import load_dataset


def _jsonl(path: Path, records: list[object]) -> str:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return str(path)


def test_gsm8k_takes_the_answer_after_the_four_hashes(tmp_path: Path) -> None:
    source = _jsonl(
        tmp_path / "gsm8k.jsonl",
        [
            {"question": "Natalia sold 48 clips...", "answer": "48/2 = <<48/2=24>>24\n#### 72"},
            {"question": "A big sum?", "answer": "so it is\n#### 1,234"},
            {"question": "No final answer", "answer": "just words"},
            "{not json",
            {"answer": "#### 3"},
        ],
    )
    data = load_dataset(source)
    assert data.format == "gsm8k"
    assert [(i.id, i.checker, i.answer, i.expected) for i in data.items] == [
        ("1", "numeric", "72", "72"),
        ("2", "numeric", "1234", "1234"),
    ]
    assert data.items[0].question.startswith("Natalia sold 48 clips...")
    assert data.problems == [
        f"{source}:3: answer has no '#### <final answer>'",
        f"{source}:4: not JSON (Expecting property name enclosed in double quotes)",
        f"{source}:5: missing question",
    ]


def test_math_takes_the_last_boxed_answer_with_nested_braces(tmp_path: Path) -> None:
    source = _jsonl(
        tmp_path / "math.jsonl",
        [
            {"problem": "Half of one?", "solution": "It is $\\boxed{\\frac{1}{2}}$.", "level": 1},
            {"problem": "With an answer field", "answer": "3\\sqrt{2}", "unique_id": "test/1.json"},
            {"problem": "Unboxed", "solution": "the answer is 4"},
            {"problem": "Unclosed", "solution": "\\boxed{\\frac{1}{2}"},
        ],
    )
    data = load_dataset(source)
    assert data.format == "math"
    assert [(i.id, i.answer, i.expected) for i in data.items] == [
        ("1", "\\frac{1}{2}", "\\frac{1}{2}"),
        ("test/1.json", "3\\sqrt{2}", "3\\sqrt{2}"),
    ]
    assert "\\boxed{}" in data.items[0].question
    assert [p.split(": ", 1)[0] for p in data.problems] == [f"{source}:3", f"{source}:4"]
    assert "no \\boxed{} answer" in data.problems[0]


def test_mcq_csv_in_mmlu_columns_with_quoted_cells_spanning_lines(tmp_path: Path) -> None:
    path = tmp_path / "mmlu.csv"
    path.write_text(
        "What is 2+2?,3,4,5,6,B\n"
        '"A question\non two lines",yes,no,maybe,never,D\n'
        "Too few,1,A\n"
        "Bad letter,x,y,z,w,F\n"
        "Letter past the options,x,y,D\n"
    )
    data = load_dataset(str(path))
    assert data.format == "mcq"
    first, second = data.items
    assert (first.id, first.answer, first.options) == ("1", "B", ("3", "4", "5", "6"))
    assert "A) 3\nB) 4\nC) 5\nD) 6" in first.question
    assert (second.id, second.answer) == ("2", "D")
    assert [p.split(": ", 1)[0] for p in data.problems] == [
        f"{path}:4",
        f"{path}:5",
        f"{path}:6",
    ]
    assert "not one of A-D" in data.problems[1]


def test_mcq_csv_with_a_header_names_its_columns(tmp_path: Path) -> None:
    path = tmp_path / "header.csv"
    path.write_text("id,question,a,b,c,answer\nq7,Sky colour?,red,blue,green,b\n")
    (item,) = load_dataset(str(path)).items
    assert (item.id, item.answer, item.options) == ("q7", "B", ("red", "blue", "green"))


def test_yesno_reads_strategyqa_booleans_and_words(tmp_path: Path) -> None:
    source = _jsonl(
        tmp_path / "strategyqa.jsonl",
        [
            {"qid": "abc", "question": "Is the sky blue?", "answer": True},
            {"question": "Is fire cold?", "answer": "No"},
            {"question": "Maybe?", "answer": "perhaps"},
        ],
    )
    data = load_dataset(source, format="yesno")
    assert [(i.id, i.checker, i.expected) for i in data.items] == [
        ("abc", "yesno", "yes"),
        ("2", "yesno", "no"),
    ]
    assert data.problems == [f"{source}:3: answer 'perhaps' is not yes/no or true/false"]


def test_code_reads_humaneval_style_jsonl_gz(tmp_path: Path) -> None:
    path = tmp_path / "problems.jsonl.gz"
    record = {
        "task_id": "Mine/0",
        "prompt": "def add(a, b):\n",
        "canonical_solution": "    return a + b\n",
        "test": "def check(candidate):\n    assert candidate(1, 2) == 3\n",
        "entry_point": "add",
    }
    with gzip.open(path, "wt") as handle:
        handle.write(json.dumps(record) + "\n" + json.dumps({**record, "entry_point": "1x"}) + "\n")
    data = load_dataset(str(path))
    assert data.format == "code"
    (item,) = data.items
    assert (item.id, item.checker, item.entry_point) == ("Mine/0", "code", "add")
    assert item.answer == "def add(a, b):\n    return a + b\n"
    assert data.problems == [f"{path}:2: entry_point '1x' is not a Python name"]


def test_a_repeated_id_names_its_line(tmp_path: Path) -> None:
    source = _jsonl(
        tmp_path / "twice.jsonl",
        [
            {"qid": "same", "question": "One?", "answer": True},
            {"qid": "same", "question": "Two?", "answer": False},
        ],
    )
    data = load_dataset(source)
    assert len(data.items) == 1
    assert data.problems == [f"{source}:2: id 'same' again (ids must be unique)"]


def test_native_items_may_list_options(tmp_path: Path) -> None:
    source = _jsonl(
        tmp_path / "items.jsonl",
        [
            {
                "id": 1,
                "question": "Q",
                "answer": "Jupiter",
                "checker": "choice",
                "options": ["Mars", "Jupiter"],
            },
            {"id": 2, "question": "Q", "answer": "x", "checker": "choice", "options": "Mars"},
            {"id": 3, "question": "Q", "answer": 1, "checker": "astrology"},
        ],
    )
    data = load_dataset(source)
    assert [(i.id, i.expected) for i in data.items] == [("1", "B")]
    assert data.problems[0] == f"{source}:2: options must be a list of texts"
    assert data.problems[1].startswith(f"{source}:3: unknown checker 'astrology'")


def test_an_unknown_format_or_missing_file_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="unknown --format 'xml'"):
        load_dataset(str(tmp_path / "x.jsonl"), format="xml")
    with pytest.raises(UsageError, match="no dataset file"):
        load_dataset(str(tmp_path / "absent.jsonl"))
