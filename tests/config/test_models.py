"""Config models and their error messages: parse_config on strings, no processes, no disk."""

from __future__ import annotations

import textwrap

import pytest

from freemad.config import AgentType, FreemadConfig, Mode, config_digest, parse_config
from freemad.config.load import load_config
from freemad.core.topology import TopologyKind
from freemad.errors import ConfigError

# Two mock agents on lines 2-5 and the allow-list on line 7; sections appended start on line 8.
BASE = """\
agents:
  - id: alpha
    cli_command: "freemad-mock-agent --persona iterative"
  - id: beta
    cli_command: "freemad-mock-agent --persona memoized"
security:
  cli_allowed_commands: [freemad-mock-agent]
"""


def config_error(text: str, *, name: str = "cfg.yaml", json_syntax: bool = False) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, name=name, json_syntax=json_syntax)
    message = caught.value.one_line()
    assert message == str(caught.value), "the message itself must already be one line"
    assert "\n" not in message
    assert "Traceback" not in message
    return message


def with_base(extra: str) -> str:
    return BASE + textwrap.dedent(extra)


def test_minimal_config_takes_every_default() -> None:
    config = parse_config("agents:\n  - id: a\n    type: claude_code\n")
    assert [a.id for a in config.enabled_agents] == ["a"]
    assert config.agents[0].command_words == ["claude"]
    assert config.scoring.weights == (20.0, 25.0, 30.0, 20.0)
    assert config.topology.type is TopologyKind.ALL_TO_ALL
    assert config.deadlines.min_agents == 1
    assert config.security.cli_use_shell is False
    assert config.output.transcript_dir == "transcripts"


def test_every_section_is_a_model_field() -> None:
    sections = {"agents", "topology", "deadlines", "scoring", "security", "budget"}
    sections |= {"output", "logging", "validation", "cache", "debate", "task", "evolve", "github"}
    sections |= {"review"}
    assert set(FreemadConfig.model_fields) == sections


def test_presets_and_mode_aliases() -> None:
    config = parse_config(
        with_base("""
        debate:
          rounds: 3
        """).replace(
            "  - id: beta\n",
            "  - id: beta\n    cli_mode_flags: {generating: [--tools, ''], critiquing: [-x]}\n",
        )
    )
    beta = config.agents[1]
    assert beta.cli_mode_flags == {Mode.GENERATE: ["--tools", ""], Mode.CRITIQUE: ["-x"]}
    assert config.debate.rounds == 3
    codex = parse_config("agents:\n  - id: c\n    type: openai_codex\n").agents[0]
    assert codex.type is AgentType.OPENAI_CODEX
    assert codex.command_words == ["codex", "exec"]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (
            "scoring:\n  wieghts: [1, 2, 3, 4]\n",
            "cfg.yaml line 9: scoring.wieghts: unknown key (did you mean 'weights'?)",
        ),
        (
            "agent_list: []\n",
            "cfg.yaml line 8: agent_list: unknown key (did you mean 'agents'?)",
        ),
        (
            "scoring:\n  normalize: maybe\n",
            "cfg.yaml line 9: scoring.normalize: should be a valid boolean, "
            "unable to interpret input (got 'maybe')",
        ),
        (
            "scoring:\n  weights: [1, 2, 3]\n",
            "cfg.yaml line 9: scoring.weights: expected 4 weights "
            "[initial, change_penalty, change_bonus, keep], got 3",
        ),
        (
            "scoring:\n  weights: [1, -2, 3, 4]\n",
            "cfg.yaml line 9: scoring.weights: weights must be non-negative, "
            "got [1.0, -2.0, 3.0, 4.0]",
        ),
        (
            "scoring:\n  weights: [1, two, 3, 4]\n",
            "cfg.yaml line 9: scoring.weights[1]: should be a valid number, "
            "unable to parse string as a number (got 'two')",
        ),
        (
            "deadlines:\n  min_agents: 3\n",
            "cfg.yaml line 9: deadlines.min_agents: 3 is more than the 2 enabled agent(s)",
        ),
        (
            "deadlines:\n  soft_timeout_ms: 9000\n  hard_timeout_ms: 9000\n",
            "cfg.yaml line 9: deadlines.soft_timeout_ms: 9000 must be less than "
            "deadlines.hard_timeout_ms (9000)",
        ),
        (
            "topology:\n  type: k_reviewers\n  k: 2\n",
            "cfg.yaml line 10: topology.k: must be between 1 and 1 for k_reviewers "
            "with 2 enabled agents, got 2",
        ),
        (
            "topology:\n  type: k_reviewers\n",
            "cfg.yaml line 8: topology.k: must be between 1 and 1 for k_reviewers "
            "with 2 enabled agents, got None",
        ),
        (
            "topology:\n  type: star\n  hub: gamma\n",
            "cfg.yaml line 10: topology.hub: 'gamma' is not an enabled agent; "
            "choose one of alpha, beta",
        ),
        (
            "topology:\n  type: mesh\n",
            "cfg.yaml line 9: topology.type: should be "
            "'all_to_all', 'k_reviewers', 'ring' or 'star' (got 'mesh')",
        ),
        (
            "output:\n  format: xml\n",
            "cfg.yaml line 9: output.format: should be 'json' or 'markdown' (got 'xml')",
        ),
        (
            "scoring: 5\n",
            "cfg.yaml line 8: scoring: should be a mapping of keys (got 5)",
        ),
        (
            "security:\n  redact_patterns: []\n",
            "cfg.yaml line 8: security: duplicate key (first given on line 6)",
        ),
    ],
)
def test_bad_values_name_file_line_and_key(extra: str, expected: str) -> None:
    assert config_error(BASE + extra) == expected


def test_shell_must_stay_off() -> None:
    text = BASE.replace("security:\n", "security:\n  cli_use_shell: true\n")
    assert config_error(text) == (
        "cfg.yaml line 7: security.cli_use_shell: "
        "must be false: agents are never run through a shell"
    )


def test_duplicate_agent_ids_point_at_the_second() -> None:
    text = BASE.replace("id: beta", "id: alpha")
    assert config_error(text) == "cfg.yaml line 4: agents[1].id: duplicate agent id 'alpha'"


def test_command_must_be_allowed() -> None:
    text = BASE.replace('"freemad-mock-agent --persona memoized"', '"rm -rf /"')
    assert config_error(text) == (
        "cfg.yaml line 5: agents[1].cli_command: 'rm' is not in "
        "security.cli_allowed_commands [freemad-mock-agent]"
    )


def test_a_preset_command_must_be_allowed_too() -> None:
    text = BASE + "  # claude is not in the list above\n"
    text = text.replace('cli_command: "freemad-mock-agent --persona memoized"', "type: claude_code")
    assert "agents[1].cli_command: 'claude' is not in" in config_error(text)


def test_a_path_does_not_match_a_bare_name() -> None:
    text = BASE.replace('"freemad-mock-agent --persona iterative"', "/tmp/freemad-mock-agent")
    assert "agents[0].cli_command: '/tmp/freemad-mock-agent' is not in" in config_error(text)


def test_quorum_counts_enabled_agents_only() -> None:
    text = with_base("deadlines:\n  min_agents: 2\n").replace(
        "  - id: beta\n", "  - id: beta\n    enabled: false\n"
    )
    assert config_error(text) == (
        "cfg.yaml line 10: deadlines.min_agents: 2 is more than the 1 enabled agent(s)"
    )


def test_star_hub_must_be_enabled_and_k_must_fit() -> None:
    ok = parse_config(with_base("topology:\n  type: star\n  hub: beta\n"))
    assert ok.topology.hub == "beta"
    disabled = with_base("topology:\n  type: star\n  hub: beta\n").replace(
        "  - id: beta\n", "  - id: beta\n    enabled: false\n"
    )
    assert "topology.hub: 'beta' is not an enabled agent; choose one of alpha" in config_error(
        disabled
    )
    assert config_error(with_base("topology:\n  type: star\n")) == (
        "cfg.yaml line 8: topology.hub: a star needs a hub; choose one of alpha, beta"
    )
    assert parse_config(with_base("topology:\n  type: k_reviewers\n  k: 1\n")).topology.k == 1
    single = "agents:\n  - id: solo\n    type: claude_code\ntopology:\n  type: k_reviewers\n"
    assert parse_config(single).topology.k is None


def test_agents_need_one_enabled_and_generic_needs_a_command() -> None:
    none_enabled = BASE.replace("  - id: alpha\n", "  - id: alpha\n    enabled: false\n").replace(
        "  - id: beta\n", "  - id: beta\n    enabled: false\n"
    )
    assert config_error(none_enabled) == "cfg.yaml line 1: agents: no agent is enabled"
    no_command = "agents:\n  - id: bare\n"
    assert config_error(no_command) == (
        "cfg.yaml line 2: agents[0].cli_command: required for an agent of type generic"
    )
    assert config_error("agents: []\n") == (
        "cfg.yaml line 1: agents: list should have at least 1 item after validation, not 0 (got [])"
    )
    assert config_error("topology: {}\n") == "cfg.yaml: agents: required key is missing"


def test_an_unknown_key_is_reported_before_the_missing_key_it_explains() -> None:
    message = config_error("agnets:\n  - id: a\n    type: claude_code\n")
    assert message == (
        "cfg.yaml line 1: agnets: unknown key (did you mean 'agents'?) (and 1 more problem(s))"
    )


def test_unknown_key_without_a_close_name_lists_the_known_ones() -> None:
    message = config_error(BASE + "cache:\n  zzz: 1\n")
    assert message == (
        "cfg.yaml line 9: cache.zzz: unknown key (expected one of: enabled, dir, max_entries)"
    )


def test_unknown_key_inside_an_agent() -> None:
    text = BASE.replace("  - id: beta\n", "  - id: beta\n    timout: 5\n")
    assert config_error(text) == (
        "cfg.yaml line 5: agents[1].timout: unknown key (did you mean 'timeout'?)"
    )


def test_a_union_is_reported_once() -> None:
    text = BASE.replace("  - id: beta\n", "  - id: beta\n    cli_args: {model: [1]}\n")
    assert config_error(text) == (
        "cfg.yaml line 5: agents[1].cli_args.model: should be a valid string or a valid integer "
        "or a valid number or a valid boolean (got [1])"
    )


def test_redact_patterns_must_compile_and_match_something() -> None:
    bad = BASE + "  redact_patterns: ['(unclosed']\n"
    assert config_error(bad).startswith(
        "cfg.yaml line 8: security.redact_patterns: '(unclosed' is not a valid regular expression"
    )
    greedy = BASE + "  redact_patterns: ['x*']\n"
    assert config_error(greedy) == (
        "cfg.yaml line 8: security.redact_patterns: 'x*' matches the empty string"
    )
    kept = parse_config(BASE + "  redact_patterns: ['sk-[A-Za-z0-9]+']\n")
    assert kept.security.redact_patterns == ["sk-[A-Za-z0-9]+"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "cfg.yaml: the file is empty; a config needs at least an agents: section"),
        ("# only a comment\n", "cfg.yaml: the file has no settings; a config needs at least"),
        (
            "- agents\n",
            "cfg.yaml line 1: the top level must be a mapping of sections "
            "(agents:, topology:, ...), not a list",
        ),
        ("just words\n", "cfg.yaml line 1: the top level must be a mapping"),
        (
            "agents:\n  - id: a\n    cli_command: [unclosed\n",
            "cfg.yaml line 4: invalid YAML: expected ',' or ']', but got '<stream end>' "
            "(while parsing a flow sequence that starts on line 3)",
        ),
        ("agents:\n\t- id: a\n", "cfg.yaml line 2: invalid YAML: found character '\\t'"),
        (
            "agents: []\nagents: []\n",
            "cfg.yaml line 2: agents: duplicate key (first given on line 1)",
        ),
    ],
)
def test_document_problems(text: str, expected: str) -> None:
    assert config_error(text).startswith(expected)


def test_json_errors_name_the_line() -> None:
    broken = '{\n  "agents": [\n    {"id": "a",}\n  ]\n}\n'
    assert config_error(broken, name="cfg.json", json_syntax=True) == (
        "cfg.json line 3: invalid JSON: Expecting property name enclosed in double quotes"
    )
    invalid = (
        '{\n  "agents": [{"id": "a", "type": "claude_code"}],\n'
        '  "scoring": {\n    "weights": [1, 2, 3]\n  }\n}\n'
    )
    assert config_error(invalid, name="cfg.json", json_syntax=True) == (
        "cfg.json line 4: scoring.weights: expected 4 weights "
        "[initial, change_penalty, change_bonus, keep], got 3"
    )
    assert config_error("[1, 2]", name="cfg.json", json_syntax=True).startswith(
        "cfg.json line 1: the top level must be a mapping"
    )
    assert config_error("", name="cfg.json", json_syntax=True).startswith(
        "cfg.json: the file is empty"
    )


def test_json_config_equals_the_same_yaml() -> None:
    as_json = '{"agents": [{"id": "a", "type": "claude_code"}], "debate": {"rounds": 2}}'
    as_yaml = "agents:\n  - id: a\n    type: claude_code\ndebate:\n  rounds: 2\n"
    assert parse_config(as_json, json_syntax=True) == parse_config(as_yaml)


def test_load_config_names_the_file(tmp_path) -> None:
    with pytest.raises(ConfigError, match=r"^config file not found: .*missing\.yaml$"):
        load_config(tmp_path / "missing.yaml")
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"agents:\n  - id: \xff\n")
    with pytest.raises(ConfigError, match=r"binary\.yaml line 2: not UTF-8 text$"):
        load_config(binary)
    with pytest.raises(ConfigError, match=r"^cannot read config file .*: Is a directory$"):
        load_config(tmp_path)
    good = tmp_path / "good.JSON"
    good.write_text('{"agents": [{"id": "a", "type": "gemini_cli"}]}')
    assert load_config(good).agents[0].command_words == ["gemini"]


def test_config_digest_is_stable_and_sensitive() -> None:
    one = parse_config(BASE)
    assert config_digest(one) == config_digest(parse_config(BASE))
    assert len(config_digest(one)) == 16
    changed = parse_config(BASE + "debate:\n  rounds: 2\n")
    assert config_digest(changed) != config_digest(one)


EVOLVE = """
evolve:
  variation: {mode: single_agent, agent_id: WORKER}
  judge:
    stages:
      - {name: tests, command: "python3 -m pytest -q", parse: exit_code, provides: [tests_pass]}
    gate: ["tests_pass == 1"]
    comparator: [{component: tests_pass, direction: maximize}]
"""


def test_the_evolve_section_names_an_enabled_worker() -> None:
    config = parse_config(with_base(EVOLVE.replace("WORKER", "alpha")))
    assert config.evolve is not None and config.evolve.variation.agent_id == "alpha"
    with pytest.raises(
        ConfigError, match=r"evolve\.variation\.agent_id: 'ghost' is not an enabled agent"
    ):
        parse_config(with_base(EVOLVE.replace("WORKER", "ghost")))
    assert parse_config(BASE).evolve is None
