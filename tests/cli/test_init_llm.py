"""`freemad init` where `llm` is installed: it says so, lists the models `llm models` reports,
and writes agents on the model that answers with no more set-up (issue 42: it wrote the mock
agents and said no agent CLI was found, while `freemad agents` showed llm). A real program
named llm on PATH, answering `llm models` as llm 0.36 does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from freemad.agents.llm_models import parse_models
from freemad.config import load_config
from tests.cli.helpers import BIN, freemad
from tests.cli.test_init_and_examples import fake_cli

# As `llm models --options` prints them (llm 0.36; the options' descriptions shortened).
OPENAI = (
    "OpenAI Chat: gpt-4o (aliases: 4o)\n"
    "  Options:\n    temperature: float\n      What sampling temperature to use.\n"
    "    seed: int\n      Integer seed to attempt to sample deterministically\n"
    "  Features:\n  - streaming\n  Keys:\n    key: openai\n    env_var: OPENAI_API_KEY\n"
    "OpenAI Chat: gpt-4o-mini (aliases: 4o-mini)\n"
    "  Options:\n    temperature: float\n    seed: int\n"
    "OpenAI Completion: gpt-3.5-turbo-instruct (aliases: 3.5-instruct, chatgpt-instruct)\n"
    "  Options:\n    temperature: float\n"
)
LOCAL = "SmolLM2: SmolLM2\n  Features:\n  - streaming\n"


def fake_llm(
    folder: Path, models: str, monkeypatch: pytest.MonkeyPatch, default: str = "gpt-4o-mini"
) -> str:
    folder.mkdir(exist_ok=True)
    program = folder / "llm"
    program.write_text(
        "#!/bin/sh\n"
        'if [ "$1 $2" = "models --options" ]; then printf %s "$LISTING"; exit 0; fi\n'
        'if [ "$1 $2" = "models default" ]; then echo "$DEFAULT"; exit 0; fi\n'
        'if [ "$1" = --version ]; then echo "llm, version 0.36"; exit 0; fi\n'
        "exit 1\n"
    )
    program.chmod(0o755)
    monkeypatch.setenv("LISTING", models)  # the helpers pass the test's environment on
    monkeypatch.setenv("DEFAULT", default)
    for name in ("OPENAI_API_KEY", "LLM_OPENAI_API_KEY", "LLM_USER_PATH"):
        monkeypatch.delenv(name, raising=False)
    return f"{folder}{os.pathsep}{BIN}{os.pathsep}/usr/bin:/bin"


def agents_of(folder: Path) -> list[dict[str, object]]:
    load_config(folder / "freemad.yaml")  # what init writes must load
    return list(yaml.safe_load((folder / "freemad.yaml").read_text())["agents"])


def test_a_local_model_is_written_when_no_openai_key_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = fake_llm(tmp_path / "tools", OPENAI + LOCAL, monkeypatch)
    done = freemad("init", cwd=tmp_path, home=tmp_path, path=path)
    out = done.stdout
    assert "found llm (" in out
    assert (
        "`llm models` lists SmolLM2, gpt-4o, gpt-4o-mini, gpt-3.5-turbo-instruct; its default: "
        "gpt-4o-mini" in out
    )
    assert "wrote freemad.yaml: llm-a, llm-b, llm-c on llm's model SmolLM2" in out
    assert "log in first" not in out  # a plugin's local model needs no key
    agents = agents_of(tmp_path)
    assert [a["id"] for a in agents] == ["llm-a", "llm-b", "llm-c"]
    assert {a["type"] for a in agents} == {"llm"}
    assert all(a["cli_args"] == {"-m": "SmolLM2"} for a in agents)
    assert all(a["free_form_replies"] is True for a in agents)  # its window is 512 tokens
    assert all("config" not in a for a in agents)  # SmolLM2 takes no option: no seed to give
    assert [a["roles"][0] for a in agents] == ["planner", "reviewer", "arbiter"]


def test_with_a_key_llms_default_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = fake_llm(tmp_path / "tools", OPENAI + LOCAL, monkeypatch)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    done = freemad("init", cwd=tmp_path, home=tmp_path, path=path)
    assert "on llm's model gpt-4o-mini" in done.stdout
    agents = agents_of(tmp_path)
    assert agents[0]["cli_args"] == {"-m": "gpt-4o-mini"} and "free_form_replies" not in agents[0]
    # The model takes a seed: each agent gets its own, so that they are not one voice thrice.
    assert [a["config"] for a in agents] == [{"seed": 1}, {"seed": 2}, {"seed": 3}]


def test_only_openai_models_and_no_key_write_the_default_and_say_to_log_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = fake_llm(tmp_path / "tools", OPENAI, monkeypatch)
    keys = tmp_path / ".config" / "io.datasette.llm"
    done = freemad("init", cwd=tmp_path, home=tmp_path, path=path)
    assert "on llm's model gpt-4o-mini" in done.stdout
    assert "log in first if you have not: llm keys set openai" in done.stdout
    # A key saved by `llm keys set openai` counts as one.
    keys.mkdir(parents=True)
    (keys / "keys.json").write_text('{"openai": "sk-saved"}')
    again = freemad("init", "--force", cwd=tmp_path, home=tmp_path, path=path)
    assert "log in first" not in again.stdout


def test_llm_beside_other_clis_is_offered_not_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = fake_llm(tmp_path / "tools", LOCAL, monkeypatch, default="SmolLM2")
    fake_cli(tmp_path / "tools", "claude")
    done = freemad("init", cwd=tmp_path, home=tmp_path, path=path)
    assert "wrote freemad.yaml: claude" in done.stdout
    assert "llm is installed too; to add it: - {id: llm, type: llm, cli_args: {-m: SmolLM2}}" in (
        done.stdout
    )
    assert [a["id"] for a in agents_of(tmp_path)] == ["claude", "claude-reviewer"]
    # --mock asks no CLI at all.
    mocked = freemad("init", "--mock", "--force", cwd=tmp_path, home=tmp_path, path=path)
    assert "llm" not in mocked.stdout


def test_the_models_list_is_read_as_llm_prints_it() -> None:
    found = parse_models(OPENAI + LOCAL + "Default: gpt-4o-mini\n")
    assert found.ids == ["gpt-4o", "gpt-4o-mini", "gpt-3.5-turbo-instruct", "SmolLM2"]
    assert found.default == "gpt-4o-mini"
    assert found.options == {
        "gpt-4o": {"temperature", "seed"},  # not the Keys section's `key`, `env_var`
        "gpt-4o-mini": {"temperature", "seed"},
        "gpt-3.5-turbo-instruct": {"temperature"},
        "SmolLM2": set(),
    }
    assert found.choice(has_openai_key=False) == "SmolLM2"
    assert found.choice(has_openai_key=True) == "gpt-4o-mini"
    assert parse_models("").choice(has_openai_key=False) is None
    assert parse_models("garbage\n\x1b[31m\n").ids == []
