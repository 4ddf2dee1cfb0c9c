"""Headless Chromium (Debian's `chromium` package) for the dashboards' tests and screenshots."""

from __future__ import annotations

import itertools
import json
import os
import re
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

WINNER_GREEN = (0x1A, 0x6E, 0x2E)  # --ok in site.css: the winner box's border


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    pytest.skip("no headless Chromium here: install Debian's `chromium` package (.ci/run does)")


def headless() -> list[str]:
    """Chromium without a screen, a sandbox (root in CI) or a GPU, and no first-run screens."""
    return [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-dev-shm-usage",
    ]


def _run(url: str, *args: str, width: int, height: int) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="freemad-chromium-") as profile:
        return subprocess.run(  # a fixed argv
            [
                *headless(),
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


class LivePage:
    """A page kept open in headless Chromium, read while it runs: the DevTools protocol over
    `--remote-debugging-pipe` (JSON messages ending in NUL on fds 3 and 4; no websocket)."""

    def __init__(self, url: str) -> None:
        self._profile = tempfile.mkdtemp(prefix="freemad-chromium-")
        to_child, self._to_browser = os.pipe()
        self._from_browser, from_child = os.pipe()

        def wire() -> None:  # in the child, before exec: its fds 3 and 4 are the pipe
            os.dup2(to_child, 3)
            os.dup2(from_child, 4)

        self.process = subprocess.Popen(  # a fixed argv
            [
                *headless(),
                f"--user-data-dir={self._profile}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=wire,  # noqa: PLW1509  # dup2 only
            close_fds=False,  # else fds 3 and 4 are closed after `wire` made them (pipes are
            # not inheritable, so no other descriptor of ours leaks into the browser)
        )
        os.close(to_child)
        os.close(from_child)
        self._buffer, self._ids = b"", itertools.count(1)
        target = self._call("Target.createTarget", {"url": url})["targetId"]
        self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]

    def _call(self, method: str, params: dict[str, Any], session: str | None = None) -> Any:
        number = next(self._ids)
        message: dict[str, Any] = {"id": number, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                answer = json.loads(raw)
                if answer.get("id") == number:
                    assert "error" not in answer, answer
                    return answer.get("result", {})
            ready, _, _ = select.select([self._from_browser], [], [], 1.0)
            if ready:
                chunk = os.read(self._from_browser, 65536)
                assert chunk, "chromium closed its DevTools pipe"
                self._buffer += chunk
        raise AssertionError(f"chromium did not answer {method}")

    def evaluate(self, expression: str) -> Any:
        result = self._call(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, self._session
        )
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, what: str, seconds: float = 30) -> Any:
        """`expression`'s value once it is true in a page parsed to its end: an element the parser
        has reached may still lack the children it has not (a table's last rows)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            value = self.evaluate(f"document.readyState === 'complete' && ({expression})")
            if value:
                return value
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}")

    def close(self) -> None:
        self.process.kill()
        self.process.wait(timeout=30)
        for fd in (self._to_browser, self._from_browser):
            os.close(fd)
        shutil.rmtree(self._profile, ignore_errors=True)


_WIDTH_PROBE = (
    "<script>document.body.setAttribute('data-width', "
    "document.documentElement.scrollWidth + ' ' + window.innerWidth)</script>"
)


def assert_fits_a_phone(page: Path, scratch: Path) -> None:
    """`page` (a built site's HTML file) is no wider than a phone's screen in headless Chromium:
    a copy in `scratch`, without its script-blocking policy, reports its width (Chromium's
    narrowest window is 500 px, whatever is asked for)."""
    copy = scratch / page.name
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page.read_text())
    copy.write_text(html.replace("</body>", _WIDTH_PROBE + "</body>"))
    rendered = dom(copy.as_uri(), width=390, height=844)
    found = re.search(r'data-width="(\d+) (\d+)"', rendered)
    assert found, rendered[:500]
    width, screen = int(found.group(1)), int(found.group(2))
    assert screen <= 500 and width <= screen, f"{page.name}: {width} px on a {screen} px screen"


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
