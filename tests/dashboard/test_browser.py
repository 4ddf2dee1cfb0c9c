"""The static site in a real browser: headless Chromium from file:// and from a Pages sub-path."""

from __future__ import annotations

import functools
import http.server
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.dashboard.browser import (
    WINNER_GREEN,
    LivePage,
    assert_fits_a_phone,
    dom,
    longest_run,
    screenshot,
)
from tests.dashboard.runs import Runs, site_build, transcript_of, winner_line


@pytest.fixture(scope="module")
def site(real_runs: Runs, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("browser") / "site"
    done = site_build(
        "--transcripts",
        str(real_runs.transcripts),
        "--task-store",
        str(real_runs.task_store),
        "--evolve-store",
        str(real_runs.evolve_store),
        "--out",
        str(out),
        cwd=real_runs.root,
    )
    assert done.returncode == 0, done.stderr
    return out


def test_the_debate_page_shows_the_winner(real_runs: Runs, site: Path, tmp_path: Path) -> None:
    page = site / "runs" / f"{real_runs.debate_id}.html"
    shot = screenshot(page.as_uri(), tmp_path / "debate.png")
    # The winner's box, drawn with its green border across the page near the top.
    assert longest_run(shot, WINNER_GREEN) >= 600
    rendered = dom(page.as_uri())
    assert winner_line(transcript_of(real_runs)) in rendered


def test_the_debate_page_highlights_its_code_with_its_own_stylesheet(
    real_runs: Runs, site: Path
) -> None:
    """Fenced code is <pre><code> with Pygments' classes, coloured by the page's stylesheet
    (allowed by its hash in the page's CSP: no inline style, nothing loaded)."""
    page = LivePage((site / "runs" / f"{real_runs.debate_id}.html").as_uri())
    try:
        page.wait_for("!!document.querySelector('pre.code code .k')", "highlighted code")
        keyword = "getComputedStyle(document.querySelector('pre.code .k')).color"
        assert page.evaluate(keyword) == "rgb(138, 43, 132)"  # #8a2b84, in site.css
        text = "document.querySelector('.winner').textContent"
        assert "```" not in str(page.evaluate(text))
    finally:
        page.close()


def test_the_evolve_page_draws_its_chart(real_runs: Runs, site: Path, tmp_path: Path) -> None:
    page = site / "runs" / f"{real_runs.evolve_id}.html"
    shot = screenshot(page.as_uri(), tmp_path / "evolve.png")
    incumbent_blue = (0x00, 0x72, 0xB2)  # the incumbent's line in the score chart
    assert longest_run(shot, incumbent_blue) >= 20


def test_the_index_filters_without_a_server(site: Path) -> None:
    rendered = dom((site / "index.html").as_uri())
    # The filter script ran (its CSP hash matched) from file:// and counted the rows.
    assert "3 of 3 runs shown" in rendered
    assert '<form id="filters" class="filters" role="search">' in rendered


def test_the_index_shows_outcomes_and_finds_a_run_by_its_agent(real_runs: Runs, site: Path) -> None:
    page = LivePage((site / "index.html").as_uri())
    shown = "document.getElementById('shown').textContent"
    try:
        page.wait_for(
            f"document.getElementById('shown') && {shown} === '3 of 3 runs shown'", "the filters"
        )
        rows = str(page.evaluate("document.getElementById('runs').textContent"))
        assert f"winner {transcript_of(real_runs)['final_answer_id']}" in rows
        page.evaluate(
            "var q = document.getElementById('q'); q.value = 'worker';"
            " q.dispatchEvent(new Event('input')); 0"
        )
        assert page.evaluate(shown) == "1 of 3 runs shown"  # the evolve run's worker agent
        visible = (
            "Array.from(document.querySelectorAll('#runs tbody tr'))"
            ".filter(function (r) { return !r.hidden; })"
            ".map(function (r) { return r.getAttribute('data-kind'); }).join()"
        )
        assert page.evaluate(visible) == "evolve"
    finally:
        page.close()


def test_pages_fit_a_phone_screen(real_runs: Runs, site: Path, tmp_path: Path) -> None:
    """No page is wider than a phone's screen: wide tables and code scroll inside themselves.
    (Headless Chromium's narrowest window is 500 px, whatever is asked for.)"""
    for page in [site / "index.html", *(site / "runs").iterdir()]:
        assert_fits_a_phone(page, tmp_path)


@pytest.fixture
def pages_server(site: Path, tmp_path: Path) -> Iterator[str]:
    """The site under a sub-path, as GitHub Pages serves a project site: /<repo>/."""
    root = tmp_path / "www"
    shutil.copytree(site, root / "myrepo")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/myrepo/"
    finally:
        server.shutdown()
        server.server_close()


def test_the_site_works_from_a_pages_sub_path(real_runs: Runs, pages_server: str) -> None:
    rendered = dom(pages_server + "index.html")
    assert "3 of 3 runs shown" in rendered
    page = dom(f"{pages_server}runs/{real_runs.debate_id}.html")
    assert winner_line(transcript_of(real_runs)) in page and 'href="../index.html"' in page
