"""Validation of Python answers: a syntax check, and a sandboxed run that never happens in-process."""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

from freemad.config.models import ValidationConfig
from freemad.debate.validation import (
    check_syntax,
    python_source,
    run_sandboxed,
    validate_answers,
)
from freemad.sandbox import code_sandbox
from freemad.sandbox.host import network_isolation
from tests.conftest import SANDBOX

# What `security.sandbox: auto` chooses for code; the host, on purpose, where bwrap cannot run.
CODE_SANDBOX = code_sandbox(SANDBOX)


def test_python_is_found_in_fences_or_as_plain_code() -> None:
    assert python_source("Here:\n```python\nx = 1\n```\nthanks") == "x = 1\n"
    assert python_source("def f():\n    return 1") == "def f():\n    return 1"
    assert python_source("The answer is 42.") is None


def test_syntax_errors_name_the_line() -> None:
    assert check_syntax("def f(:\n    pass") == "line 1: invalid syntax"
    assert check_syntax("x = 1") is None
    assert "null" in (check_syntax("x = 1\x00") or "")


def test_syntax_check_never_runs_the_code(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    source = f"open({str(marker)!r}, 'w').write('x')"
    report, confidence = validate_answers(
        {"a": f"```python\n{source}\n```"}, "a", ValidationConfig(enable_sandbox=False)
    )
    assert report["a"]["syntax_ok"] is True
    assert confidence == 1.0
    assert not marker.exists()


def test_the_sandbox_runs_in_a_child_with_a_time_limit() -> None:
    result = run_sandboxed("import time\ntime.sleep(60)", timeout_ms=500, sandbox=CODE_SANDBOX)
    assert result["timed_out"] is True and result["ok"] is False
    result = run_sandboxed("print('hi')", timeout_ms=10_000, sandbox=CODE_SANDBOX)
    assert result["ok"] is True and result["exit_code"] == 0
    result = run_sandboxed("raise SystemExit(3)", timeout_ms=10_000, sandbox=CODE_SANDBOX)
    assert result["exit_code"] == 3 and result["ok"] is False


def test_the_sandbox_has_no_secrets_in_its_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FREEMAD_TEST_SECRET", "hunter2")
    source = "import os, sys\nsys.exit(7 if 'FREEMAD_TEST_SECRET' in os.environ else 0)"
    assert run_sandboxed(source, timeout_ms=10_000, sandbox=CODE_SANDBOX)["exit_code"] == 0
    assert os.environ["FREEMAD_TEST_SECRET"] == "hunter2"


@pytest.mark.skipif(not network_isolation(), reason="this system gives no network namespace")
def test_the_sandbox_cannot_open_a_socket_to_the_outside() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    source = (
        "import socket, sys\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
        "except OSError:\n"
        "    sys.exit(0)\n"
        "sys.exit(9)\n"
    )
    with server:
        result = run_sandboxed(source, timeout_ms=10_000, sandbox=CODE_SANDBOX)
    assert result["network_isolated"] is True
    assert result["exit_code"] == 0, result


def test_validation_reports_each_final_answer_and_a_confidence_for_the_winner() -> None:
    solutions = {
        "good": "```python\ndef f():\n    return 1\n```",
        "bad": "```python\ndef f(:\n```",
        "prose": "Forty-two.",
    }
    report, confidence = validate_answers(
        solutions, "bad", ValidationConfig(enable_sandbox=True), CODE_SANDBOX
    )
    assert report["good"]["syntax_ok"] is True and report["good"]["sandbox"]["ok"] is True
    assert report["bad"]["syntax_ok"] is False and "sandbox" not in report["bad"]
    assert report["prose"] == {"language": None}
    assert confidence == 0.0
    _, confidence = validate_answers(solutions, "prose", ValidationConfig())
    assert confidence is None


def test_unshare_is_only_used_where_it_works() -> None:
    prefix = network_isolation()
    assert prefix == [] or (prefix[0] == shutil.which("unshare") and prefix[-1] == "--")
