"""`freemad eval report`: a real evaluation's report as HTML (table, comparisons, the accuracy
against cost plot) and as markdown; hostile labels stay text; a bad report is one line."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

from tests.cli.helpers import freemad
from tests.eval.agents import evaluate, write_items, write_setup
from tests.eval.test_run import ITEMS, TABLE

HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>'


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)


def _evaluation(tmp_path: Path) -> Path:
    config = write_setup(tmp_path / "agents", TABLE, debate={"rounds": 2})
    dataset = write_items(tmp_path / f"{HOSTILE.replace('/', '_')}.jsonl", ITEMS)
    home = tmp_path / "home"
    home.mkdir()
    out = tmp_path / "out"
    evaluate(
        str(dataset),
        str(config),
        str(out),
        cwd=tmp_path,
        home=home,
    )
    return out


def test_the_report_renders_as_html_and_markdown_with_hostile_labels_inert(
    tmp_path: Path,
) -> None:
    out = _evaluation(tmp_path)
    report = json.loads((out / "report.json").read_text())
    # A report passed around may carry anything: a hostile agent, reason and sentence.
    report["methods"]["single"]["agents"][HOSTILE] = report["methods"]["single"]["agents"]["a1"]
    report["unscorable"] = [{"id": HOSTILE, "reason": HOSTILE}]
    report["comparisons"]["majority_final"]["sentence"] = HOSTILE
    (out / "report.json").write_text(json.dumps(report))
    home = tmp_path / "home"
    done = freemad(
        "eval",
        "report",
        str(out),
        "--html",
        str(tmp_path / "r.html"),
        "--markdown",
        str(tmp_path / "r.md"),
        cwd=tmp_path,
        home=home,
    )
    assert "wrote" in done.stdout
    page = (tmp_path / "r.html").read_text()
    tags = _Tags()
    tags.feed(page)
    assert "script" not in tags.tags and "img" not in tags.tags
    assert "&lt;script&gt;" in page and "onerror" in page  # shown as text
    # The table: every method, with its interval and cost per correct answer.
    for name in ("single (mean)", "single: a1", "majority_initial", "majority_final", "freemad"):
        assert f'<th scope="row">{name}</th>' in page
    assert "[37.6%, 96.4%]" in page  # majority_initial: 4 of 5, Wilson
    assert "Free-MAD trails initial majority by 20.0 points, p = 1.00" in page
    # The plot: a point and a whisker per method, each labelled.
    assert page.count("<circle") == len([t for t in tags.tags if t == "circle"]) >= 6
    assert tags.tags.count("line") >= 2 + 6
    markdown = (tmp_path / "r.md").read_text()
    assert "<script" not in markdown and "<img" not in markdown
    assert "| majority_initial | 80.0% | 4/5 |" in markdown
    printed = freemad("eval", "report", str(out / "report.json"), cwd=tmp_path, home=home)
    assert printed.stdout == markdown


def test_a_missing_or_bad_report_is_one_line(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    missing = freemad("eval", "report", str(tmp_path), cwd=tmp_path, home=home, code=2)
    assert "no report at" in missing.stderr and missing.stderr.count("\n") <= 2
    (tmp_path / "report.json").write_text("[1, 2]")
    bad = freemad("eval", "report", str(tmp_path), cwd=tmp_path, home=home, code=2)
    assert "is not a freemad eval report" in bad.stderr and "Traceback" not in bad.stderr
