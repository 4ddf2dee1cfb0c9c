"""An evaluation's page (`freemad site build --eval DIR`, `freemad-dashboard --eval DIR`): the
methods' table and chart match report.json, the items link to their debates, hostile answers
stay text, and a missing or garbled report is one line (site) or an honest error page (live)."""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from freemad.dashboard.live.dashboard_settings import DashboardSettings
from freemad.dashboard.live.server import create_app
from freemad.dashboard.live.wsgi import app_from_env
from freemad.dashboard.reading.eval_folders import EvalReportError, eval_folders
from freemad.dashboard.views.eval_views import (
    ReportShapeError,
    check_report,
    eval_view,
    shown_methods,
)
from freemad.dashboard.views.html_pages import render_eval, render_index
from freemad.errors import UsageError
from freemad.eval.methods import METHODS
from tests.cli.helpers import freemad
from tests.dashboard.browser import LivePage
from tests.dashboard.served import serve
from tests.dashboard.test_escaping import PAYLOAD, assert_inert, parse
from tests.eval.agents import write_items, write_setup
from tests.eval.test_run import ITEMS, TABLE

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(2)>'
HOSTILE_TABLE = [
    *TABLE,
    {"match": "Q-xss", "answers": {"a1": [SCRIPT], "a2": [IMG], "a3": [IMG]}},
]
HOSTILE_ITEMS = [
    *ITEMS,
    {"id": f"xss{SCRIPT}", "question": "Q-xss: say it", "answer": IMG, "checker": "exact"},
]


def quiet(_line: str) -> None:
    return None


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real `freemad eval run` folder: scripted agents, six items (one whose agents answer
    with markup), one critique round. Shared: read, don't write."""
    root = tmp_path_factory.mktemp("eval-pages")
    config = write_setup(root / "agents", HOSTILE_TABLE, debate={"rounds": 1})
    dataset = write_items(root / "items.jsonl", HOSTILE_ITEMS)
    home = root / "home"
    home.mkdir()
    out = root / "my-eval"
    freemad(
        "eval", "run", "--dataset", str(dataset), "--config", str(config), "--out", str(out),
        "--quiet", cwd=root, home=home,
    )  # fmt: skip
    return out


def report_of(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "report.json").read_text())
    return data


def expected_methods(report: dict[str, Any]) -> list[list[str]]:
    """The methods' table as report.json says it: key, accuracy, correct / total, interval."""
    rows = []
    for name in shown_methods(report["methods"]):
        score = report["methods"][name]
        low, high = score["interval"]
        rows.append(
            [
                name,
                f"{score['accuracy']:.1%}",
                f"{score['correct']} / {score['total']}",
                f"[{low:.1%}, {high:.1%}]",
            ]
        )
    return rows


def methods_table(html: str) -> list[list[str]]:
    body = re.search(r'<table id="methods">.*?<tbody>(.*?)</tbody>', html, re.S)
    assert body is not None
    rows = []
    for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body.group(1), re.S):
        cells = [
            re.sub(r"<[^>]+>", "", c).strip()
            for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)
        ]
        rows.append([cells[0], *cells[2:]])  # the key, then past "What it is"
    return rows


def hand_report() -> dict[str, Any]:
    """A small report.json as `freemad eval` writes it, every text of it hostile."""

    def score(correct: int, total: int) -> dict[str, Any]:
        return {
            "accuracy": correct / total,
            "correct": correct,
            "total": total,
            "interval": [0.1, 0.9],
        }

    agent = f"agent{PAYLOAD}"
    verdict = {"answer": f"{SCRIPT}{IMG}", "correct": False}
    return {
        "dataset": f"data{PAYLOAD}",
        "rounds": 1,
        "agents": [agent],
        "interval": "95% Wilson score interval",
        "items": 1,
        "failed_items": 0,
        "methods": {
            "single": {**score(1, 2), "agents": {agent: score(1, 2)}},
            "majority_initial": score(1, 2),
            "majority_final": score(0, 2),
            "freemad": score(2, 2),
        },
        "cost": {"usd": None, "tokens": 10, "calls": 3, "debate_time_ms": 1500},
        "rows": [
            {
                "id": f"item{PAYLOAD}",
                "checker": "exact",
                "expected": f"exp{PAYLOAD}",
                "status": "completed",
                "error": f"err{PAYLOAD}",
                "run_id": "../../etc/passwd",
                "single": {agent: verdict},
                "methods": dict.fromkeys(METHODS[1:], verdict),
                "cost_usd": 0.5,
                "tokens": 10,
                "calls": 3,
                "wall_time_ms": 1500,
            }
        ],
        "missing": [f"gone{PAYLOAD}"],
    }


# --- the static site --------------------------------------------------------------------------


def test_the_site_shows_a_real_evaluation_as_report_json_says(
    evaluation: Path, tmp_path: Path
) -> None:
    out = tmp_path / "site"
    done = freemad(
        "site", "build", "--eval", str(evaluation), "--out", str(out), cwd=tmp_path, home=tmp_path
    )
    assert "6 run(s)" in done.stdout  # the items' debates, from the folder's transcripts/
    report = report_of(evaluation)
    page = (out / "evals" / "my-eval.html").read_text()
    assert methods_table(page) == expected_methods(report)
    for agent, score in report["methods"]["single"]["agents"].items():
        row = re.search(rf'<tr data-agent="{agent}">(.*?)</tr>', page, re.S)
        assert row is not None and f"{score['accuracy']:.1%}" in row.group(1)
        assert f"{score['correct']} / {score['total']}" in row.group(1)
    # Every item's debate is linked, and its page is there.
    for row in report["rows"]:
        assert f'href="../runs/{row["run_id"]}.html"' in page
        assert (out / "runs" / f"{row['run_id']}.html").is_file()
    assert f"{report['cost']['calls']} call(s)" in page
    assert f"; {report['items']} item(s), {report['failed_items']} failed debate(s)" in page
    index = (out / "index.html").read_text()
    row = re.search(r'<tr data-eval="my-eval">(.*?)</tr>', index, re.S)
    assert row is not None and 'href="evals/my-eval.html"' in row.group(1)
    cells = re.findall(r'<td class="num">([^<]*)</td>', row.group(1))
    assert cells == [
        str(report["items"]),
        *(f"{report['methods'][m]['accuracy']:.1%}" for m in METHODS),
    ]


def test_hostile_answers_of_a_real_evaluation_stay_text(evaluation: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    freemad(
        "site", "build", "--eval", str(evaluation), "--out", str(out), cwd=tmp_path, home=tmp_path
    )
    html = (out / "evals" / "my-eval.html").read_text()
    page = parse(html)
    for tag, attrs in page.elements:
        assert tag not in ("img", "script", "iframe"), tag
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
    text = "".join(page.text)
    assert SCRIPT in text and IMG in text and f"xss{SCRIPT}" in text
    assert "&lt;script&gt;" in html and "&#34;&gt;&lt;img" in html


def test_a_hostile_report_renders_as_text() -> None:
    report = hand_report()
    check_report(report)
    view = eval_view(f"name{PAYLOAD}", report, {"../../etc/passwd"})
    html = render_eval(view, "x")
    page = assert_inert(html)
    assert "../../etc/passwd" not in html  # not a run id: never a link
    assert [tag for tag, _ in page.elements if tag == "svg"] == ["svg"]
    assert 'role="img"' in html and 'aria-labelledby="eval-chart-title eval-chart-desc"' in html
    assert "'unsafe-inline'" not in html
    assert page.headings == sorted(page.headings) and page.headings.count(1) == 1
    index = render_index([], evals=[{"name": f"n{PAYLOAD}", "slug": "n", "error": f"e{PAYLOAD}"}])
    assert_inert(
        index.replace("</body>", f"<p>{SCRIPT.replace('<', '&lt;')}{{{{ 7*7 }}}}</p></body>")
    )


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda r: r["methods"].pop("freemad"), "no `methods.freemad` object"),
        (lambda r: r["methods"]["single"].update(correct="2"), "methods.single.correct"),
        (lambda r: r["methods"]["freemad"].update(interval=[0, 2]), "methods.freemad.interval"),
        (lambda r: r["methods"]["single"].pop("agents"), "methods.single.agents"),
        (lambda r: r.update(rows={}), "`rows` is not a list"),
    ],
)
def test_a_report_of_the_wrong_shape_is_named(change: Any, said: str) -> None:
    report = copy.deepcopy(hand_report())
    change(report)
    with pytest.raises(ReportShapeError, match=re.escape(said)):
        check_report(report)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (None, "report.json does not exist"),
        ("{not json", "is not valid JSON"),
        ('{"methods": {}}', "is not an evaluation's report: no `methods.single` object"),
        ("[1, 2]", "not a JSON object"),
    ],
)
def test_a_missing_or_garbled_report_stops_the_site_build_in_one_line(
    tmp_path: Path, content: str | None, said: str
) -> None:
    folder = tmp_path / "ev"
    folder.mkdir()
    if content is not None:
        (folder / "report.json").write_text(content)
    done = freemad(
        "site", "build", "--eval", str(folder), "--out", str(tmp_path / "site"),
        cwd=tmp_path, home=tmp_path, code=2,
    )  # fmt: skip
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and said in lines[0] and "Traceback" not in done.stderr, done.stderr
    assert not (tmp_path / "site" / "index.html").exists()
    gone = freemad(
        "site", "build", "--eval", str(tmp_path / "nope"), cwd=tmp_path, home=tmp_path, code=2
    )
    assert "evaluation folder" in gone.stderr and "does not exist" in gone.stderr
    assert len(gone.stderr.strip().splitlines()) == 1


def test_folders_of_one_name_get_pages_of_their_own_and_stale_pages_go(
    evaluation: Path, tmp_path: Path
) -> None:
    twin = tmp_path / "other" / "my-eval"
    shutil.copytree(evaluation, twin)
    report = report_of(twin)
    report["dataset"] = "the twin"
    (twin / "report.json").write_text(json.dumps(report))
    assert [f.slug for f in eval_folders([evaluation, twin, tmp_path / "other"])] == [
        "my-eval",
        "my-eval-2",
        "other",
    ]
    out = tmp_path / "site"
    args = ("site", "build", "--eval", str(evaluation), "--out", str(out))
    freemad(*args, "--eval", str(twin), cwd=tmp_path, home=tmp_path)
    assert "the twin" in (out / "evals" / "my-eval-2.html").read_text()
    assert "the twin" not in (out / "evals" / "my-eval.html").read_text()
    freemad(*args, cwd=tmp_path, home=tmp_path)
    assert not (out / "evals" / "my-eval-2.html").exists()
    assert (out / "evals" / "my-eval.html").exists()


# --- the live dashboard -----------------------------------------------------------------------


def test_the_live_dashboard_serves_the_page_and_an_honest_error(
    evaluation: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "report.json").write_text('{"methods": "<b>no</b>"}')
    client = create_app(
        DashboardSettings([], evals=eval_folders([evaluation, broken]), warn=quiet)
    ).test_client()
    page = client.get("/evals/my-eval.html")
    assert page.status_code == 200
    assert methods_table(page.text) == expected_methods(report_of(evaluation))
    run_id = report_of(evaluation)["rows"][0]["run_id"]
    assert f'href="../runs/{run_id}.html"' in page.text
    assert client.get(f"/runs/{run_id}.html").status_code == 200  # its transcripts/ are read
    error = client.get("/evals/broken.html")
    assert error.status_code == 503
    assert "broken/report.json is not an evaluation&#39;s report: no `methods` object" in error.text
    assert "<b>" not in error.text
    index = client.get("/index.html").text
    assert 'href="evals/my-eval.html"' in index and 'href="evals/broken.html"' in index
    assert "no `methods` object" in index
    assert client.get("/evals/nothing.html").status_code == 404
    assert client.get("/evals/..%2Fx.html").status_code == 404
    # A report written later (an evaluation still running) is shown once it is there.
    shutil.copy(evaluation / "report.json", broken / "report.json")
    assert client.get("/evals/broken.html").status_code == 200


def test_gunicorns_app_reads_the_evaluations_from_its_environment(
    evaluation: Path, tmp_path: Path
) -> None:
    app = app_from_env({"FREEMAD_DASHBOARD_EVALS": json.dumps([str(evaluation)])})
    assert app.test_client().get("/evals/my-eval.html").status_code == 200
    with pytest.raises(UsageError, match="FREEMAD_DASHBOARD_EVALS must be a JSON list"):
        app_from_env({"FREEMAD_DASHBOARD_EVALS": "not json"})
    with pytest.raises(Exception, match="does not exist or is not a folder"):
        app_from_env({"FREEMAD_DASHBOARD_EVALS": json.dumps([str(tmp_path / "nope")])})


def test_the_eval_page_in_chromium_against_gunicorn_matches_report_json(
    evaluation: Path, tmp_path: Path
) -> None:
    report = report_of(evaluation)
    with serve(tmp_path, "--eval", str(evaluation)) as served:
        # A live page keeps its event stream open: read it over DevTools, not --dump-dom.
        page = LivePage(f"{served.url}/evals/my-eval.html")
        try:
            rendered = page.wait_for(
                "document.querySelector('#items') && document.documentElement.outerHTML",
                "the evaluation's page",
            )
            cells = page.evaluate(
                "Array.from(document.querySelectorAll('#methods tbody tr')).map(r => "
                "Array.from(r.cells).map(c => c.textContent.trim()))"
            )
            live = page.wait_for(
                "document.getElementById('live').textContent.startsWith('Live:') && "
                "!document.getElementById('live').textContent.includes('connecting') && "
                "document.getElementById('live').textContent",
                "the page's event stream",
            )
        finally:
            page.close()
        assert [[c[0], *c[2:]] for c in cells] == expected_methods(report)
        assert methods_table(rendered) == expected_methods(report)
        assert "Live" in live
        assert "<h1>Evaluation: my-eval</h1>" in rendered
        links = re.findall(r'href="\.\./runs/([^"]+)\.html"', rendered)
        assert sorted(links) == sorted(row["run_id"] for row in report["rows"])
        assert served.get(f"/runs/{links[0]}.html")[0] == 200
        status, body = served.get("/evals/none.html")
        assert status == 404 and b"no evaluation none" in body


def test_an_eval_report_error_is_an_eval_report_error(tmp_path: Path) -> None:
    (folder,) = eval_folders([tmp_path])
    with pytest.raises(EvalReportError, match="does not exist"):
        folder.report()


def test_the_dashboard_command_refuses_an_eval_path_that_is_not_a_folder(tmp_path: Path) -> None:
    import subprocess

    from tests.cli.helpers import user_env
    from tests.dashboard.served import DASHBOARD

    done = subprocess.run(
        [*DASHBOARD, "--eval", str(tmp_path / "nope"), "--port", "1"],
        cwd=tmp_path,
        env=user_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "evaluation folder" in lines[0] and "Traceback" not in done.stderr


def test_the_eval_page_and_index_fit_a_phone_screen(evaluation: Path, tmp_path: Path) -> None:
    """Its wide tables scroll inside themselves and its chart shrinks (as test_browser's check)."""
    from tests.dashboard.browser import assert_fits_a_phone

    out = tmp_path / "site"
    freemad(
        "site", "build", "--eval", str(evaluation), "--out", str(out), cwd=tmp_path, home=tmp_path
    )
    for page in (out / "evals" / "my-eval.html", out / "index.html"):
        assert_fits_a_phone(page, tmp_path)
