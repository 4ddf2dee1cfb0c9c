"""`freemad site build` on runs the other runtimes made: pages, links, rebuilds and bad input."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from tests.dashboard.runs import FIB, Runs, site_build, transcript_of, winner_line


class Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.resources: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        values = dict(attrs)
        if tag == "a" and values.get("href"):
            self.hrefs.append(str(values["href"]))
        if tag in ("img", "iframe", "embed", "object", "audio", "video", "source"):
            self.resources.append(tag)
        if tag in ("script", "link") and (values.get("src") or values.get("rel") == "stylesheet"):
            self.resources.append(f"{tag} {values}")


def parse(path: Path) -> Links:
    links = Links()
    links.feed(path.read_text(encoding="utf-8"))
    return links


def build_all(runs: Runs, out: Path, *extra: str) -> str:
    done = site_build(
        "--transcripts",
        str(runs.transcripts),
        "--task-store",
        str(runs.task_store),
        "--evolve-store",
        str(runs.evolve_store),
        "--out",
        str(out),
        *extra,
        cwd=runs.root,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr
    return done.stdout


def test_every_runtime_gets_a_page_and_the_index_lists_them_newest_first(
    real_runs: Runs, tmp_path: Path
) -> None:
    out = tmp_path / "site"
    said = build_all(real_runs, out, "--commit-url", "https://github.com/o/r/commit/{commit}")
    assert "3 run(s); 3 page(s) rendered, 0 unchanged" in said
    ids = [real_runs.debate_id, real_runs.task_id, real_runs.evolve_id]
    assert sorted(p.stem for p in (out / "runs").iterdir()) == sorted(ids)
    index = (out / "index.html").read_text()
    # Made in this order, so listed the other way round.
    positions = [index.index(f"runs/{run_id}.html") for run_id in reversed(ids)]
    assert positions == sorted(positions)
    assert "3 runs: 1 debate, 1 evolve, 1 task." in index
    # Each run's outcome, duration and agents, whichever its runtime.
    rows = {
        run_id: row
        for row in re.findall(r"<tr data-kind.*?</tr>", index, re.S)
        for run_id in ids
        if f"runs/{run_id}.html" in row
    }
    transcript = transcript_of(real_runs)
    assert f"<td>winner {transcript['final_answer_id']}</td>" in rows[real_runs.debate_id]
    assert f"<td>{', '.join(transcript['settings']['agents'])}</td>" in rows[real_runs.debate_id]
    assert re.search(r'<td class="num nowrap">[\d.]+ m?s</td>', rows[real_runs.debate_id])
    assert "<td>at stage plan_review</td>" in rows[real_runs.task_id]
    assert "<td>planner, reviewer" in rows[real_runs.task_id]
    assert "<td>incumbent v" in rows[real_runs.evolve_id] and "stopped: target" in index
    assert "<td>worker</td>" in rows[real_runs.evolve_id]

    debate = (out / "runs" / f"{real_runs.debate_id}.html").read_text()
    assert f"<h1>Debate: {FIB}</h1>" in debate
    assert winner_line(transcript) in debate
    assert "Running total" in debate and 'aria-labelledby="debate-chart-title' in debate
    for agent in transcript["settings"]["agents"]:
        assert f"<h3>{agent}, round by round</h3>" in debate

    task = (out / "runs" / f"{real_runs.task_id}.html").read_text()
    assert "Critique this &lt;b&gt;architecture&lt;/b&gt;" in task
    assert "Waiting for an answer" in task
    assert "Which storage backend should we use first? (SQLite, Postgres)" in task
    assert 'class="current">plan_review' in task and "intake-planner-1.md" in task

    evolve = (out / "runs" / f"{real_runs.evolve_id}.html").read_text()
    assert "Evolve: make slow_sum as fast as possible" in evolve
    assert re.search(r'href="https://github.com/o/r/commit/[0-9a-f]{40}"', evolve)
    assert "intervention: stall" in evolve and "admitted v1" in evolve
    # Each version's diff against its parent, from the artifact the run recorded.
    assert '<pre class="diff" aria-label="Diff of v1 against v0">' in evolve
    assert '<span class="hunk">diff --git a/slow_sum.py b/slow_sum.py</span>' in evolve
    assert "No diff shown" not in evolve and "The seed as it was" in evolve


def test_the_site_is_self_contained_and_its_links_are_relative(
    real_runs: Runs, tmp_path: Path
) -> None:
    out = tmp_path / "site"
    build_all(real_runs, out, "--base-url", "https://me.github.io/repo/")
    pages = [out / "index.html", *(out / "runs").iterdir()]
    for page in pages:
        links = parse(page)
        assert links.resources == [], page
        text = page.read_text()
        assert "url(" not in text and "@import" not in text
        for href in links.hrefs:
            assert not urlsplit(href).scheme and not href.startswith("/"), href
            target = (page.parent / unquote(href)).resolve()
            assert target.is_file(), f"{page.name}: {href} leads nowhere"
    index = (out / "index.html").read_text()
    assert '<link rel="canonical" href="https://me.github.io/repo/index.html">' in index


def test_a_rebuild_renders_only_what_changed_and_drops_what_is_gone(
    real_runs: Runs, tmp_path: Path
) -> None:
    transcripts = tmp_path / "transcripts"
    shutil.copytree(real_runs.transcripts, transcripts)
    out = tmp_path / "site"

    def build() -> str:
        done = site_build("--transcripts", str(transcripts), "--out", str(out), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "1 run(s); 1 page(s) rendered, 0 unchanged, 0 removed" in build()
    page = out / "runs" / f"{real_runs.debate_id}.html"
    before = page.stat().st_mtime_ns
    assert "1 run(s); 0 page(s) rendered, 1 unchanged, 0 removed" in build()
    assert page.stat().st_mtime_ns == before

    data = transcript_of(real_runs)
    data["run_id"] = "0" * 32
    data["requirement"] = "A second debate"
    (transcripts / "second.json").write_text(json.dumps(data))
    assert "2 run(s); 1 page(s) rendered, 1 unchanged, 0 removed" in build()
    assert "A second debate" in (out / "index.html").read_text()

    (transcripts / "second.json").unlink()
    assert "1 run(s); 0 page(s) rendered, 1 unchanged, 1 removed" in build()
    assert not (out / "runs" / f"{'0' * 32}.html").exists()
    assert "A second debate" not in (out / "index.html").read_text()


def test_runs_on_the_state_branch_are_built_too(real_runs: Runs, tmp_path: Path) -> None:
    """The layout freemad/github/state_branch.py writes, as the Pages workflow checks it out."""
    state = tmp_path / "state"
    folder = state / "runs" / real_runs.debate_id
    folder.mkdir(parents=True)
    transcript = transcript_of(real_runs)
    (folder / "run.json").write_text(
        json.dumps(
            {
                "run_id": real_runs.debate_id,
                "kind": "debate",
                "status": "completed",
                "created_at": 1.0,
                "updated_at": 2.0,
                "summary": {"goal": FIB, "issue": {"repo": "o/r", "number": 7}},
                "issue": {"repo": "o/r", "number": 7},
                "artifacts": [],
            }
        )
    )
    event = {"seq": 0, "time": 2.0, "kind": "debate_finished", "data": {"transcript": transcript}}
    (folder / "events.jsonl").write_text(json.dumps(event) + "\n")
    out = tmp_path / "site"
    done = site_build("--state-dir", str(state), "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = (out / "runs" / f"{real_runs.debate_id}.html").read_text()
    assert winner_line(transcript) in page
    # The index has what the run's row does not say (read from its events): winner, agents.
    index = (out / "index.html").read_text()
    assert f"<td>winner {transcript['final_answer_id']}</td>" in index
    assert ", ".join(transcript["settings"]["agents"]) in index


def test_bad_transcripts_are_skipped_with_a_warning_and_the_rest_built(
    real_runs: Runs, tmp_path: Path
) -> None:
    transcripts = tmp_path / "transcripts"
    shutil.copytree(real_runs.transcripts, transcripts)
    (transcripts / "garbled.json").write_text('{"run_id": ')
    (transcripts / "list.json").write_text("[1, 2]")
    (transcripts / "hostile.json").write_text(json.dumps({"run_id": "../../etc/passwd"}))
    (transcripts / "old.md").write_text("# a markdown transcript\n")
    out = tmp_path / "site"
    done = site_build("--transcripts", str(transcripts), "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    warnings = done.stderr.splitlines()
    assert all(line.startswith("freemad: warning: ") for line in warnings), warnings
    assert any("garbled.json: not valid JSON" in line for line in warnings)
    assert any("list.json: not a FREE-MAD debate transcript" in line for line in warnings)
    assert any("hostile.json: not a FREE-MAD debate transcript" in line for line in warnings)
    assert any("1 markdown transcript(s) skipped" in line for line in warnings)
    assert "Traceback" not in done.stderr
    assert [p.stem for p in (out / "runs").iterdir()] == [real_runs.debate_id]


def test_bad_sources_and_options_are_one_line_errors(real_runs: Runs, tmp_path: Path) -> None:
    not_a_db = tmp_path / "tasks.db"
    not_a_db.write_text("this is not SQLite")
    cases = [
        (("--out", str(tmp_path / "o")), "name at least one source"),
        (("--transcripts", str(not_a_db), "--out", str(tmp_path / "o")), "is not a folder"),
        (("--task-store", str(not_a_db), "--out", str(tmp_path / "o")), "is not a FREE-MAD store"),
        (
            (
                "--transcripts",
                str(real_runs.transcripts),
                "--out",
                str(tmp_path / "o"),
                "--commit-url",
                "https://x/commit/",
            ),
            "must contain {commit}",
        ),
        (
            (
                "--transcripts",
                str(real_runs.transcripts),
                "--out",
                str(tmp_path / "o"),
                "--base-url",
                "javascript:alert(1)",
            ),
            "an http(s) URL",
        ),
    ]
    for args, words in cases:
        done = site_build(*args, cwd=tmp_path)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("freemad: error: "), done.stderr
        assert words in lines[0], lines[0]
    assert not (tmp_path / "o" / "index.html").exists()


def test_an_unwritable_output_is_a_one_line_error(real_runs: Runs, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("a file where the site's folder would go")
    done = site_build(
        "--transcripts", str(real_runs.transcripts), "--out", str(blocker), cwd=tmp_path
    )
    assert done.returncode != 0
    assert (
        done.stderr.startswith("freemad: error: cannot create") and "Traceback" not in done.stderr
    )


def test_a_named_source_must_exist_and_the_configs_own_are_read_where_they_exist(
    real_runs: Runs, tmp_path: Path
) -> None:
    """A path the user typed that names nothing is a mistake; the config's own stores that no
    run has made yet (no task has run here, say) are simply not read."""
    out = tmp_path / "site"
    done = site_build(
        "--transcripts",
        str(real_runs.transcripts),
        "--task-store",
        str(tmp_path / "tasks.db"),
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"freemad: error: --task-store {tmp_path / 'tasks.db'}: no such file or folder"
    ]
    assert not out.exists()
    done = site_build("--transcripts", str(real_runs.transcripts), "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "1 run(s); 1 page(s) rendered" in done.stdout
    assert not (tmp_path / "tasks.db").exists()  # read-only: nothing was created
    assert not (tmp_path / ".freemad").exists()


def test_a_tampered_manifest_cannot_remove_files_outside_the_site(
    real_runs: Runs, tmp_path: Path
) -> None:
    out = tmp_path / "site"
    assert (
        site_build(
            "--transcripts", str(real_runs.transcripts), "--out", str(out), cwd=tmp_path
        ).returncode
        == 0
    )
    victim = tmp_path / "victim.html"
    victim.write_text("keep me")
    manifest = json.loads((out / ".freemad-site.json").read_text())
    manifest["runs"]["../../victim"] = {"fingerprint": "x"}
    (out / ".freemad-site.json").write_text(json.dumps(manifest))
    done = site_build("--transcripts", str(real_runs.transcripts), "--out", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert victim.read_text() == "keep me"
