"""`die_with_parent`'s probe started ahead of time (`probe_die_with_parent`, from the console
script while it imports) gives the same prefix as the probe run when it is first needed."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from freemad.sandbox import host


@pytest.fixture
def fresh_probe(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(host, "_early_probe", [])
    host.die_with_parent.cache_clear()
    yield
    host.die_with_parent.cache_clear()


def test_a_probe_started_early_gives_the_same_prefix(fresh_probe: None) -> None:
    waited = host.die_with_parent()
    host.die_with_parent.cache_clear()
    host.probe_die_with_parent()
    host.probe_die_with_parent()  # a second start is ignored
    assert len(host._early_probe) == (1 if shutil.which("setpriv") else 0)
    assert host.die_with_parent() == waited
    for _setpriv, _pid, probe in host._early_probe:
        assert probe.returncode is not None  # collected: no zombie left


def test_without_setpriv_nothing_is_started(
    fresh_probe: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    host.probe_die_with_parent()
    assert host._early_probe == []
    assert host.die_with_parent() == []
