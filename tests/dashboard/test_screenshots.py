"""The screenshots in docs/ show what the code renders today (scripts/screenshots.py makes them)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("screenshots", ROOT / "scripts/screenshots.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["debate", "evolve"])
def test_the_screenshot_is_of_the_page_the_code_renders_now(name: str) -> None:
    shots = script()
    with Image.open(ROOT / "docs" / "screenshots" / f"{name}.png") as image:
        recorded = image.text.get("freemad-page-sha256")
        assert image.size == shots.SIZE
    assert recorded == shots.page_digest(name), (
        f"docs/screenshots/{name}.png shows an older page: run "
        "`.venv/bin/python scripts/screenshots.py` and commit the new screenshots"
    )


def test_the_screenshot_data_are_real_runs() -> None:
    shots = script()
    debate = shots.page_data("debate").transcript
    assert debate is not None and debate["status"] == "completed" and debate["final_answer_id"]
    evolve = shots.page_data("evolve")
    kinds = [kind for kind, _ in evolve.events]
    assert kinds.count("version_admitted") >= 2 and "intervention" in kinds
