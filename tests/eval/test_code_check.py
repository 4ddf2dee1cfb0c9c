"""The `code` checker by attack: code that reads a file outside its folder, writes one, runs
forever, or fakes a pass must fail, in the real sandbox."""

from __future__ import annotations

from pathlib import Path

import pytest

from freemad.eval.code_check import passes
from freemad.eval.datasets import Item
from freemad.sandbox.sandbox_port import Sandbox
from freemad.wiring import ADAPTERS
from tests.conftest import needs_bwrap

pytestmark = needs_bwrap

TEST = "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(-1, 1) == 0\n"
ITEM = Item(id="add", question="Add two numbers.", checker="code", test=TEST, entry_point="add")
RIGHT = "def add(a, b):\n    return a + b"


@pytest.fixture
def sandbox() -> Sandbox:
    return ADAPTERS.sandboxes.code("auto")


def test_right_code_passes_and_wrong_code_fails(sandbox: Sandbox) -> None:
    assert passes(ITEM, RIGHT, sandbox)
    assert not passes(ITEM, "def add(a, b):\n    return a - b", sandbox)
    assert not passes(ITEM, "def add(a, b) return", sandbox)  # a syntax error
    assert not passes(ITEM, None, sandbox)


def test_a_prompt_goes_before_the_answer_as_in_humaneval(sandbox: Sandbox) -> None:
    item = Item(
        id="p",
        question="q",
        checker="code",
        test=TEST,
        entry_point="add",
        prompt="from typing import List\nOFFSET = 0\n",
    )
    assert passes(item, "def add(a: int, b: int) -> int:\n    return a + b + OFFSET", sandbox)


def test_reading_a_file_outside_its_folder_fails(sandbox: Sandbox, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("5")
    code = f"def add(a, b):\n    return int(open({str(secret)!r}).read())\n"
    item = Item(
        id="s",
        question="q",
        checker="code",
        entry_point="add",
        test="def check(candidate):\n    assert candidate(2, 3) == 5\n",
    )
    assert not passes(item, code, sandbox)


def test_writing_outside_its_folder_fails_and_leaves_nothing(
    sandbox: Sandbox, tmp_path: Path
) -> None:
    target = tmp_path / "pwned"
    code = f"open({str(target)!r}, 'w').write('x')\n{RIGHT}"
    assert not passes(ITEM, code, sandbox)
    assert not target.exists()
    home_file = Path.home() / ".freemad-eval-pwned"
    assert not passes(ITEM, f"open({str(home_file)!r}, 'w').write('x')\n{RIGHT}", sandbox)
    assert not home_file.exists()


def test_running_forever_fails_within_the_timeout(sandbox: Sandbox) -> None:
    import time

    started = time.monotonic()
    assert not passes(ITEM, "def add(a, b):\n    while True:\n        pass", sandbox, timeout=2)
    assert time.monotonic() - started < 30


@pytest.mark.parametrize(
    "fake",
    [
        # Says it passed, then stops before the tests run.
        "print('passed')\nimport os\nos._exit(0)",
        "import sys\nprint('passed')\nsys.exit(0)",
        "raise SystemExit(0)",
        # Looks for the token where it was: the file is gone before any candidate code runs.
        "import os\nprint(open('token').read() if os.path.exists('token') else 'no token')\n"
        "os._exit(0)",
    ],
)
def test_a_faked_pass_fails(sandbox: Sandbox, fake: str) -> None:
    assert not passes(ITEM, fake, sandbox)


def test_without_a_sandbox_nothing_runs_and_nothing_passes() -> None:
    from freemad.sandbox.choose import Unavailable

    assert not passes(ITEM, RIGHT, Unavailable("no sandbox here"))
