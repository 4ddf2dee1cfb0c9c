"""The screenshots in docs/screenshots/: a debate page and an evolve page, as the code renders them.

Each page is rendered from the run data kept beside its screenshot (debate-transcript.json, a
real debate of the bundled mock agents; evolve-events.json, the evolve toy run to its target, with
the diffs of its versions)
and photographed by headless Chromium. The PNG records the SHA-256 of the HTML it shows
(`freemad-page-sha256`), and tests/dashboard/test_screenshots.py checks that rendering the data
today still gives that page: change a template and the test says to run this again.

Run: .venv/bin/python scripts/screenshots.py [--refresh-data]
  --refresh-data  make the run data anew (a mock debate and the evolve toy, in a temporary folder)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from freemad.dashboard.reading.sources import Artifact, RunData  # noqa: E402
from freemad.dashboard.views.html_pages import render_run  # noqa: E402
from freemad.dashboard.views.run_views import version_diff_ids  # noqa: E402

FOLDER = ROOT / "docs" / "screenshots"
SIZE = (1100, 1500)


def page_data(name: str) -> RunData:
    if name == "debate":
        transcript = json.loads((FOLDER / "debate-transcript.json").read_text())
        return RunData("debate", transcript["run_id"], transcript=transcript)
    stored = json.loads((FOLDER / "evolve-events.json").read_text())
    events = [(str(kind), dict(data)) for kind, data in stored["events"]]
    artifacts = [
        Artifact(f"{ident}.diff", len(body.encode()), body.encode, ident)
        for ident, body in stored.get("diffs", {}).items()
    ]
    return RunData("evolve", stored["run_id"], events=events, artifacts=artifacts)


def page_html(name: str) -> str:
    return render_run(page_data(name))


def page_digest(name: str) -> str:
    return hashlib.sha256(page_html(name).encode()).hexdigest()


def refresh_data() -> None:
    from freemad.dashboard.reading.sources import StoreSource
    from tests.dashboard.runs import make_runs, transcript_of

    with tempfile.TemporaryDirectory(prefix="freemad-shots-") as tmp:
        runs = make_runs(Path(tmp))
        transcript = transcript_of(runs)
        (FOLDER / "debate-transcript.json").write_text(json.dumps(transcript, indent=1) + "\n")
        store = StoreSource(runs.evolve_store, print)
        data = store.load(runs.evolve_id, "evolve", "stopped")
        events = [[kind, event] for kind, event in data.events]
        wanted = version_diff_ids(data.events)
        diffs = {
            a.ident: (a.read() or b"").decode("utf-8", "replace")
            for a in data.artifacts
            if a.ident in wanted
        }
        (FOLDER / "evolve-events.json").write_text(
            json.dumps({"run_id": runs.evolve_id, "events": events, "diffs": diffs}, indent=1)
            + "\n"
        )


def photograph(html: Path, png: Path) -> None:
    browser = next(
        (
            shutil.which(n)
            for n in ("chromium", "chromium-browser", "google-chrome")
            if shutil.which(n)
        ),
        None,
    )
    if browser is None:
        sys.exit("no Chromium: install Debian's `chromium` package")
    with tempfile.TemporaryDirectory(prefix="freemad-chromium-") as profile:
        subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--force-device-scale-factor=1",
                f"--user-data-dir={profile}",
                f"--window-size={SIZE[0]},{SIZE[1]}",
                f"--screenshot={png}",
                html.as_uri(),
            ],
            capture_output=True,
            timeout=120,
            check=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--refresh-data", action="store_true")
    args = parser.parse_args()
    from PIL import Image, PngImagePlugin

    if args.refresh_data:
        refresh_data()
    with tempfile.TemporaryDirectory(prefix="freemad-shots-") as tmp:
        for name in ("debate", "evolve"):
            html = Path(tmp) / "runs" / f"{name}.html"
            html.parent.mkdir(exist_ok=True)
            html.write_text(page_html(name))
            raw = Path(tmp) / f"{name}.png"
            photograph(html, raw)
            info = PngImagePlugin.PngInfo()
            info.add_text("freemad-page-sha256", page_digest(name))
            with Image.open(raw) as image:
                image.save(FOLDER / f"{name}.png", pnginfo=info, optimize=True)
            print(f"docs/screenshots/{name}.png")


if __name__ == "__main__":
    main()
