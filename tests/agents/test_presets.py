"""Presets: reading each CLI's real output, recognising "log in first", and codex's login preflight."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from freemad.agents.agent_port import CallRequest, CallStatus
from freemad.agents.invocation import build_argv
from freemad.agents.presets import GEMINI_DENY_ALL, NOT_LOGGED_IN, PRESETS, extract, preset_for
from freemad.agents.subprocess_agent import CliAgent
from freemad.config.models import AgentConfig, AgentType, Mode
from tests.agents import samples
from tests.agents.conftest import FakeBin, env_without_keys

# --- extraction -------------------------------------------------------------------------------


def test_codex_answer_is_the_last_agent_message_with_usage() -> None:
    found = extract("codex_json", samples.CODEX_JSON_OK)
    assert found.text == "HELLO-FROM-FAKE"
    assert (found.input_tokens, found.output_tokens) == (11, 5)
    assert found.error is None


def test_codex_skips_other_items_and_takes_the_last_message() -> None:
    def item(n: int, kind: str, **fields: str) -> dict[str, object]:
        return {"type": "item.completed", "item": {"id": f"item_{n}", "type": kind, **fields}}

    events = [
        item(0, "agent_message", text="draft"),
        item(1, "reasoning", text="hmm"),
        item(2, "agent_message", text="final"),
        item(3, "error", message="warn"),
    ]
    stdout = "a log line that is not JSON\n" + "\n".join(json.dumps(e) for e in events) + "\n"
    found = extract("codex_json", stdout)
    assert found.text == "final"
    assert (found.input_tokens, found.output_tokens) == (None, None)


@pytest.mark.parametrize(
    ("stdout", "message"),
    [
        (samples.CODEX_JSON_401, "401 Unauthorized: Incorrect API key provided"),
        (samples.CODEX_JSON_NO_NETWORK, "Connection failed: error sending request"),
    ],
)
def test_codex_turn_failed_is_an_error(stdout: str, message: str) -> None:
    found = extract("codex_json", stdout)
    assert found.error is not None and message in found.error
    # No agent message: the raw events stay visible for the transcript.
    assert found.text == stdout


def test_claude_success_gives_result_and_usage() -> None:
    found = extract("claude_json", samples.CLAUDE_JSON_OK)
    assert found.text == "HELLO-FROM-FAKE"
    assert (found.input_tokens, found.output_tokens) == (11, 5)
    assert found.error is None


def test_a_negative_usage_a_cli_reports_counts_as_none_reported() -> None:
    """A hostile or broken CLI cannot lower a debate's or an evolve run's cost with a negative
    count: it is not taken as a count, and the text's estimate stands in."""
    hostile = samples.CLAUDE_JSON_OK.replace('"output_tokens":5', '"output_tokens":-90000000')
    assert hostile != samples.CLAUDE_JSON_OK
    found = extract("claude_json", hostile)
    assert (found.input_tokens, found.output_tokens) == (11, None)


@pytest.mark.parametrize(
    ("stdout", "message"),
    [
        (samples.CLAUDE_JSON_NOT_LOGGED_IN, "Not logged in · Please run /login"),
        (samples.CLAUDE_JSON_BAD_KEY, "Invalid API key · Fix external API key"),
    ],
)
def test_claude_is_error_is_an_error_although_subtype_says_success(
    stdout: str, message: str
) -> None:
    assert json.loads(stdout)["subtype"] == "success"
    found = extract("claude_json", stdout)
    assert found.error == message


def test_claude_plain_text_passes_through() -> None:
    found = extract("claude_json", samples.CLAUDE_TEXT_NO_NETWORK)
    assert found.text == samples.CLAUDE_TEXT_NO_NETWORK
    assert found.error is None


def test_gemini_success_gives_response_and_token_stats() -> None:
    found = extract("gemini_json", samples.GEMINI_JSON_OK)
    assert found.text == "HELLO-FROM-FAKE"
    assert (found.input_tokens, found.output_tokens) == (11, 5)
    assert found.error is None


def test_gemini_error_object_is_an_error() -> None:
    found = extract("gemini_json", samples.GEMINI_JSON_AUTH_ERROR)
    assert found.text == ""
    assert found.error is not None and found.error.startswith("Please set an Auth method")


def test_gemini_tokens_add_up_across_models() -> None:
    data = json.loads(samples.GEMINI_JSON_OK)
    model = data["stats"]["models"]["fake"]
    data["stats"]["models"] = {"router": model, "main": model}
    found = extract("gemini_json", json.dumps(data))
    assert (found.input_tokens, found.output_tokens) == (22, 10)


def test_text_output_is_taken_as_it_is() -> None:
    found = extract("text", "SOLUTION:\nx\n")
    assert found.text == "SOLUTION:\nx\n"
    assert (found.input_tokens, found.output_tokens, found.error) == (None, None, None)


# --- "log in first" -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        samples.CLAUDE_TEXT_NOT_LOGGED_IN,
        json.loads(samples.CLAUDE_JSON_BAD_KEY)["result"],
        samples.CODEX_LOGIN_STATUS_STDERR,
        json.loads(samples.CODEX_JSON_401.splitlines()[-1])["error"]["message"],
        samples.GEMINI_TEXT_AUTH_ERROR,
        samples.GEMINI_JSON_AUTH_ERROR,
        samples.GEMINI_BAD_KEY,
        samples.GEMINI_GATEWAY_AUTH,
        "When using Gemini API, you must specify the GEMINI_API_KEY environment variable.",
    ],
    ids=[
        "claude-not-logged-in",
        "claude-bad-key",
        "codex-login-status",
        "codex-401",
        "gemini-no-auth",
        "gemini-no-auth-json",
        "gemini-bad-key",
        "gemini-gateway",
        "gemini-no-key",
    ],
)
def test_not_logged_in_matches_each_clis_own_words(message: str) -> None:
    assert NOT_LOGGED_IN.search(message)


@pytest.mark.parametrize(
    "message",
    [
        samples.CLAUDE_TEXT_NO_NETWORK,
        samples.CODEX_JSON_NO_NETWORK,
        samples.CLAUDE_UNKNOWN_OPTION,
        samples.CODEX_UNKNOWN_OPTION,
        samples.GEMINI_UNKNOWN_OPTION,
        '{"type":"error","message":"Reconnecting... waiting for network (Connection failed)"}',
    ],
)
def test_not_logged_in_leaves_other_failures_alone(message: str) -> None:
    assert not NOT_LOGGED_IN.search(message)


# --- the presets themselves ------------------------------------------------------------------


@pytest.mark.parametrize(
    "agent_type", [AgentType.CLAUDE_CODE, AgentType.OPENAI_CODEX, AgentType.GEMINI_CLI]
)
@pytest.mark.parametrize("mode", [Mode.GENERATE, Mode.CRITIQUE])
def test_debate_modes_turn_tools_off(agent_type: AgentType, mode: Mode) -> None:
    # The other five: tests/agents/test_more_presets.py.
    argv = build_argv(AgentConfig(id="a", type=agent_type), mode)
    off = {
        AgentType.CLAUDE_CODE: ["--tools", ""],
        AgentType.OPENAI_CODEX: ["--disable", "shell_tool"],
        AgentType.GEMINI_CLI: ["--policy", GEMINI_DENY_ALL],
    }[agent_type]
    assert any(argv[i : i + 2] == off for i in range(len(argv)))


def test_task_mode_keeps_tools() -> None:
    for agent_type, preset in PRESETS.items():
        debate = preset.mode_flags.get(Mode.GENERATE.value, ())
        assert preset.mode_flags.get(Mode.TASK.value, ()) != debate or not debate, agent_type


def test_gemini_policy_file_denies_every_tool() -> None:
    text = Path(GEMINI_DENY_ALL).read_text(encoding="utf-8")
    assert 'toolName = "*"' in text
    assert 'decision = "deny"' in text


# --- codex's login preflight, against fake codex programs --------------------------------------

_NOT_LOGGED_IN_CODEX = """\
if argv[:2] == ["login", "status"]:
    print("Not logged in", file=sys.stderr)
    sys.exit(1)
print('{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"SOLUTION:\\\\nno\\\\n\\\\nREASONING:\\\\nno"}}')
"""

_LOGGED_IN_CODEX = """\
import json
if argv[:2] == ["login", "status"]:
    print("Logged in using ChatGPT", file=sys.stderr)
    sys.exit(0)
answer = "SOLUTION:\\nprint('hi')\\n\\nREASONING:\\nasked for " + str(len(stdin)) + " chars"
for event in (
    {"type": "thread.started", "thread_id": "01a22a47-3fa0-7623-89d0-fc0b16dfa9a7"},
    {"type": "turn.started"},
    {"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": answer}},
    {"type": "turn.completed", "usage": {"input_tokens": 11, "cached_input_tokens": 0,
     "cache_write_input_tokens": 0, "output_tokens": 5, "reasoning_output_tokens": 0}},
):
    print(json.dumps(event))
"""

CODEX = AgentConfig(id="codex", type=AgentType.OPENAI_CODEX)
PROMPT = "Write hello world."


def _call_twice(agent: CliAgent) -> list[CallStatus]:
    async def both() -> list[CallStatus]:
        results = [await agent.call(CallRequest(Mode.GENERATE, PROMPT, 30)) for _ in range(2)]
        return [r.status for r in results]

    return asyncio.run(both())


def test_codex_not_logged_in_is_refused_before_exec(fake_bin: FakeBin) -> None:
    fake_bin.add("codex", _NOT_LOGGED_IN_CODEX)
    agent = CliAgent(CODEX, max_output_bytes=100_000, env=env_without_keys())
    result = asyncio.run(agent.call(CallRequest(Mode.GENERATE, PROMPT, 30)))
    assert result.status is CallStatus.NOT_LOGGED_IN
    assert "login status" in result.detail and "Not logged in" in result.detail
    assert [run["argv"] for run in fake_bin.runs()] == [["login", "status"]]


def test_codex_login_is_asked_once_per_agent(fake_bin: FakeBin) -> None:
    fake_bin.add("codex", _NOT_LOGGED_IN_CODEX)
    agent = CliAgent(CODEX, max_output_bytes=100_000, env=env_without_keys())
    assert _call_twice(agent) == [CallStatus.NOT_LOGGED_IN] * 2
    assert [run["argv"] for run in fake_bin.runs()] == [["login", "status"]]


def test_codex_logged_in_runs_exec_with_the_preset_argv(fake_bin: FakeBin) -> None:
    fake_bin.add("codex", _LOGGED_IN_CODEX)
    agent = CliAgent(CODEX, max_output_bytes=100_000, env=env_without_keys())
    result = asyncio.run(agent.call(CallRequest(Mode.GENERATE, PROMPT, 30)))
    assert result.status is CallStatus.OK, result.detail
    assert result.text == f"SOLUTION:\nprint('hi')\n\nREASONING:\nasked for {len(PROMPT)} chars"
    assert (result.input_tokens, result.output_tokens) == (11, 5)
    login, exec_run = fake_bin.runs()
    assert login["argv"] == ["login", "status"]
    assert exec_run["argv"] == build_argv(CODEX, Mode.GENERATE)[1:]
    assert exec_run["stdin"] == PROMPT


@pytest.mark.parametrize("key", ["CODEX_API_KEY", "OPENAI_API_KEY"])
def test_an_api_key_in_the_environment_skips_the_preflight(fake_bin: FakeBin, key: str) -> None:
    # This fake says "Not logged in" to `login status`; with a key it must not be asked.
    fake_bin.add("codex", _NOT_LOGGED_IN_CODEX)
    agent = CliAgent(CODEX, max_output_bytes=100_000, env=env_without_keys(**{key: "sk-test"}))
    result = asyncio.run(agent.call(CallRequest(Mode.GENERATE, PROMPT, 30)))
    assert result.status is CallStatus.OK, result.detail
    assert [run["argv"][0] for run in fake_bin.runs()] == ["exec"]


def test_other_presets_have_no_preflight(fake_bin: FakeBin) -> None:
    fake_bin.add("claude", f"print({samples.CLAUDE_JSON_NOT_LOGGED_IN.strip()!r}); sys.exit(1)")
    agent = CliAgent(
        AgentConfig(id="claude", type=AgentType.CLAUDE_CODE),
        max_output_bytes=100_000,
        env=env_without_keys(),
    )
    result = asyncio.run(agent.call(CallRequest(Mode.GENERATE, PROMPT, 30)))
    assert result.status is CallStatus.NOT_LOGGED_IN
    assert result.detail == "exit status 1: Not logged in · Please run /login"
    assert len(fake_bin.runs()) == 1
    assert preset_for(AgentType.CLAUDE_CODE).login_check == ()


# --- the failure's detail names the CLI's own message ----------------------------------------


def test_codex_login_detail_skips_the_warning_before_it(fake_bin: FakeBin) -> None:
    # With CODEX_HOME under /tmp, codex 0.171 prints a WARNING line before "Not logged in".
    fake_bin.add(
        "codex",
        f"sys.stderr.write({samples.CODEX_LOGIN_STATUS_STDERR!r}); sys.exit(1)",
    )
    agent = CliAgent(CODEX, max_output_bytes=100_000, env=env_without_keys())
    result = asyncio.run(agent.call(CallRequest(Mode.GENERATE, PROMPT, 30)))
    assert result.status is CallStatus.NOT_LOGGED_IN
    assert "Not logged in" in result.detail, result.detail


def test_gemini_error_object_on_stderr_gives_the_detail(fake_bin: FakeBin) -> None:
    # `gemini -o json` prints its error object on stderr, pretty-printed, and exits 41.
    fake_bin.add("gemini", f"sys.stderr.write({samples.GEMINI_JSON_AUTH_ERROR!r}); sys.exit(41)")
    agent = CliAgent(
        AgentConfig(id="gemini", type=AgentType.GEMINI_CLI),
        max_output_bytes=100_000,
        env=env_without_keys(),
    )
    result = asyncio.run(agent.call(CallRequest(Mode.GENERATE, PROMPT, 30)))
    assert result.status is CallStatus.NOT_LOGGED_IN
    assert "Please set an Auth method" in result.detail, result.detail


def test_the_context_window_is_the_configs_else_what_the_preset_knows() -> None:
    from freemad.agents.presets import context_window
    from freemad.config import parse_config

    config = parse_config(
        "agents:\n"
        "  - {id: a, type: llm, cli_args: {-m: SmolLM2}}\n"
        "  - {id: b, type: llm, cli_args: {--model: smollm2}, context_window: 2048}\n"
        "  - {id: c, type: llm, cli_args: {-m: gpt-4o}}\n"
        "  - {id: d, type: generic, cli_command: python x.py, cli_args: {-m: SmolLM2}}\n"
        "security: {cli_allowed_commands: [llm, python]}\n"
    )
    assert [context_window(agent) for agent in config.agents] == [512, 2048, None, None]
