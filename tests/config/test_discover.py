"""Config discovery (--config, FREEMAD_CONFIG, a file found upward, built-in) and the state rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from freemad.config.discover import discover, find_config, load
from freemad.errors import ConfigError

AGENT = """\
agents:
  - id: {name}
    cli_command: freemad-mock-agent
"""
TOML = """\
[project]
name = "x"

[tool.freemad]
agents = [{ id = "toml-agent", cli_command = "freemad-mock-agent" }]
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder inside tmp_path, so no file of the real one is ever found."""
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    monkeypatch.delenv("FREEMAD_CONFIG", raising=False)
    return folder


@pytest.mark.parametrize("name", ["freemad.yaml", ".freemad.yaml", "freemad.json"])
def test_a_config_is_found_from_a_subfolder(home: Path, name: str) -> None:
    project = home / "project"
    deep = project / "src" / "pkg"
    deep.mkdir(parents=True)
    text = AGENT.format(name="found")
    if name.endswith(".json"):
        text = '{"agents": [{"id": "found", "cli_command": "freemad-mock-agent"}]}'
    (project / name).write_text(text)
    loaded = load(None, cwd=deep)
    assert [a.id for a in loaded.config.agents] == ["found"]
    assert loaded.source.path == project / name
    assert not loaded.source.explicit


def test_the_nearest_config_wins_and_yaml_before_json(home: Path) -> None:
    outer, inner = home / "a", home / "a" / "b"
    inner.mkdir(parents=True)
    (outer / "freemad.yaml").write_text(AGENT.format(name="outer"))
    (inner / "freemad.json").write_text('{"agents": [{"id": "json", "cli_command": "x"}]}')
    (inner / "freemad.yaml").write_text(AGENT.format(name="inner"))
    assert discover(inner) == inner / "freemad.yaml"


def test_pyproject_counts_only_with_a_tool_freemad_table(home: Path) -> None:
    project = home / "p"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert discover(project) is None
    (project / "pyproject.toml").write_text(TOML)
    loaded = load(None, cwd=project)
    assert [a.id for a in loaded.config.agents] == ["toml-agent"]
    assert loaded.source.table


def test_an_error_in_the_pyproject_table_is_one_line_naming_it(home: Path) -> None:
    (home / "pyproject.toml").write_text(TOML.replace("cli_command", "cli_comand"))
    with pytest.raises(ConfigError, match=r"pyproject.toml \[tool.freemad\]: agents\[0\]"):
        load(None, cwd=home)


def test_the_search_stops_at_the_home_folder(home: Path) -> None:
    (home.parent / "freemad.yaml").write_text(AGENT.format(name="above-home"))
    inside = home / "work"
    inside.mkdir()
    assert find_config(None, cwd=inside).path is None  # the built-in
    (home / "freemad.yaml").write_text(AGENT.format(name="home"))
    assert find_config(None, cwd=inside).path == home / "freemad.yaml"


def test_config_option_then_environment_override_discovery(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (home / "freemad.yaml").write_text(AGENT.format(name="found"))
    (home / "other.yaml").write_text(AGENT.format(name="other"))
    (home / "env.yaml").write_text(AGENT.format(name="env"))
    monkeypatch.setenv("FREEMAD_CONFIG", str(home / "env.yaml"))
    assert load(None, cwd=home).config.agents[0].id == "env"
    assert load("other.yaml", cwd=home).config.agents[0].id == "other"
    assert load("other.yaml", cwd=home).source.explicit


def test_builtin_names_and_an_unknown_one(home: Path) -> None:
    loaded = load("builtin:autonomous_smoke", cwd=home)
    assert {a.id for a in loaded.config.agents} == {"planner", "reviewer", "arbiter"}
    assert loaded.source.base == home  # a built-in's state lives in the current folder
    with pytest.raises(ConfigError, match=r"no built-in config 'nope'.*builtin:mock_agents"):
        load("builtin:nope", cwd=home)


def test_state_paths_resolve_against_the_config_folder(home: Path) -> None:
    project = home / "project"
    (project / "sub").mkdir(parents=True)
    (project / "freemad.yaml").write_text(AGENT.format(name="a"))
    config = load(None, cwd=project / "sub").config
    assert config.task.store_path == str(project / ".freemad/tasks/tasks.db")
    assert config.task.artifacts_dir == str(project / ".freemad/tasks/artifacts")
    assert config.output.transcript_dir == str(project / "transcripts")
    assert config.cache.dir == str(project / ".freemad/cache")
    # From the config's own folder the paths stay as written (and mean the same).
    same = load(None, cwd=project).config
    assert same.task.store_path == ".freemad/tasks/tasks.db"


def test_without_any_config_the_builtin_mock_agents_take_task_roles(home: Path) -> None:
    loaded = load(None, cwd=home)
    assert loaded.source.path is None and loaded.source.base == home
    roles = {a.id: a.roles for a in loaded.config.agents}
    assert roles["mock-iterative"][0] == "planner"
    assert "reviewer" in roles["mock-recursive"]
    assert loaded.config.task.store_path == ".freemad/tasks/tasks.db"
