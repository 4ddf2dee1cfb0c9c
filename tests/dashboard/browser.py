"""Headless Chromium (Debian's `chromium` package) for the dashboards' tests and screenshots."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

WINNER_GREEN = (0x1A, 0x6E, 0x2E)  # --ok in site.css: the winner box's border


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no headless Chromium here: install Debian's `chromium` package (.ci/run does)")


def _run(url: str, *args: str, width: int, height: int) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="freemad-chromium-") as profile:
        return subprocess.run(
            [
                chromium(),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                "--force-device-scale-factor=1",
                f"--user-data-dir={profile}",
                f"--window-size={width},{height}",
                "--virtual-time-budget=3000",
                *args,
                url,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


def screenshot(url: str, out: Path, *, width: int = 1100, height: int = 1400) -> Path:
    done = _run(url, f"--screenshot={out}", width=width, height=height)
    assert out.is_file(), f"chromium made no screenshot: {done.stderr[-2000:]}"
    return out


def dom(url: str, *, width: int = 1100, height: int = 1400) -> str:
    """The page's DOM after its scripts ran."""
    done = _run(url, "--dump-dom", width=width, height=height)
    assert done.returncode == 0 and "<html" in done.stdout, done.stderr[-2000:]
    return done.stdout


def longest_run(png: Path, colour: tuple[int, int, int]) -> int:
    """The longest horizontal run of pixels of exactly `colour` in the image."""
    from PIL import Image

    with Image.open(png) as image:
        rgb = image.convert("RGB")
        width, height = rgb.size
        pixels = rgb.load()
        assert pixels is not None
        best = 0
        for y in range(height):
            run = 0
            for x in range(width):
                run = run + 1 if pixels[x, y] == colour else 0
                best = max(best, run)
        return best
