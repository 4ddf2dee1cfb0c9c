"""The copilot, opencode, qwen, llm and aider presets: reading their real output, their words for
"log in first", their argv per mode, and aider's login preflight (against fake aider programs)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from freemad.agents.agent_port import CallRequest, CallStatus
from freemad.agents.invocation import build_argv
from freemad.agents.presets import NOT_LOGGED_IN, OPENCODE_AGENTS, PRESETS, extract
from freemad.agents.subprocess_agent import CliAgent
from freemad.config.models import AgentConfig, AgentType, Mode
from tests.agents import samples_more as samples
from tests.agents.conftest import FakeBin, env_without_keys

ANSWER = "SOLUTION:\nHELLO-FROM-FAKE\n\nREASONING:\nfake"


@pytest.mark.parametrize(
    ("output", "stdout", "tokens"),
    [
        ("copilot_json", samples.COPILOT_JSON_OK, (None, None)),
        ("opencode_json", samples.OPENCODE_JSON_OK, (11, 5)),
        ("qwen_json", samples.QWEN_JSON_OK, (22, 10)),  # the run's total: qwen asked twice
        ("llm_json", samples.LLM_JSON_OK, (11, 5)),
        ("aider_text", samples.AIDER_TEXT_OK, (11, 5)),
    ],
    ids=["copilot", "opencode", "qwen", "llm", "aider"],
)
def test_the_answer_and_its_tokens(
    output: str, stdout: str, tokens: tuple[int | None, int | None]
) -> None:
    found = extract(output, stdout)
    assert found.text == ANSWER
    assert (found.input_tokens, found.output_tokens) == tokens
    assert found.error is None


@pytest.mark.parametrize(
    ("output", "stdout", "message"),
    [
        ("copilot_json", samples.COPILOT_JSON_NO_PROVIDER, "Could not connect to local model"),
        ("opencode_json", samples.OPENCODE_JSON_NO_NETWORK, "Cannot connect to API"),
        ("qwen_json", samples.QWEN_JSON_NO_AUTH, "No auth type is selected"),
        ("aider_text", samples.AIDER_TEXT_NO_KEY, "litellm.AuthenticationError"),
    ],
    ids=["copilot", "opencode", "qwen", "aider"],
)
def test_a_reported_failure_is_an_error(output: str, stdout: str, message: str) -> None:
    found = extract(output, stdout)
    assert found.error is not None and message in found.error, found


def test_copilot_nonzero_exit_code_without_a_message_is_an_error() -> None:
    stdout = json.dumps({"type": "result", "exitCode": 2, "usage": {}}) + "\n"
    assert extract("copilot_json", stdout).error == "copilot ended with exit code 2"


def test_opencode_tokens_add_up_over_steps_and_the_last_text_is_the_answer() -> None:
    lines = samples.OPENCODE_JSON_OK.splitlines()
    second = [line.replace("HELLO-FROM-FAKE", "SECOND") for line in lines]
    found = extract("opencode_json", "\n".join(lines + second))
    assert found.text == ANSWER.replace("HELLO-FROM-FAKE", "SECOND")
    assert (found.input_tokens, found.output_tokens) == (22, 10)


def test_aider_thousands_are_counted() -> None:
    stdout = samples.AIDER_TEXT_OK.replace(
        "Tokens: 11 sent, 5 received.",
        "Tokens: 2.3k sent, 1.1k cache write, 120 received. Cost: $0.01 message, $0.01 session.",
    )
    found = extract("aider_text", stdout)
    assert (found.input_tokens, found.output_tokens) == (2300, 120)
    assert found.text == ANSWER


@pytest.mark.parametrize("output", ["qwen_json", "llm_json", "opencode_json", "copilot_json"])
def test_plain_text_passes_through(output: str) -> None:
    assert extract(output, "not json\n").text == "not json\n"


@pytest.mark.parametrize(
    "message",
    [
        samples.COPILOT_NOT_LOGGED_IN,
        samples.QWEN_JSON_NO_AUTH,
        samples.LLM_NO_KEY,
        samples.LLM_UNKNOWN_MODEL,
        samples.AIDER_TEXT_NO_KEY,
        samples.AIDER_NO_MODEL,
    ],
    ids=["copilot", "qwen", "llm-no-key", "llm-no-model", "aider-no-key", "aider-no-model"],
)
def test_not_logged_in_matches_each_clis_own_words(message: str) -> None:
    assert NOT_LOGGED_IN.search(message)


@pytest.mark.parametrize(
    "message",
    [samples.COPILOT_JSON_NO_PROVIDER, samples.OPENCODE_JSON_NO_NETWORK, samples.AIDER_TEXT_OK],
)
def test_not_logged_in_leaves_other_failures_alone(message: str) -> None:
    assert not NOT_LOGGED_IN.search(message)


# --- the argv -------------------------------------------------------------------------------

DEBATE_OFF = {
    AgentType.COPILOT_CLI: ["--available-tools=none"],
    AgentType.OPENCODE: ["--agent", "freemad-debate"],
    AgentType.QWEN_CODE: ["--safe-mode", "--approval-mode", "plan"],
    AgentType.AIDER: ["--chat-mode", "ask"],
}
TASK_ON = {
    AgentType.COPILOT_CLI: ["--allow-all-tools"],
    AgentType.OPENCODE: ["--auto"],
    AgentType.QWEN_CODE: ["--approval-mode", "yolo"],
}


def _holds(argv: list[str], words: list[str]) -> bool:
    return any(argv[i : i + len(words)] == words for i in range(len(argv)))


@pytest.mark.parametrize("agent_type", list(DEBATE_OFF), ids=[t.value for t in DEBATE_OFF])
def test_debate_modes_turn_tools_and_edits_off_and_task_mode_on(agent_type: AgentType) -> None:
    agent = AgentConfig(id="a", type=agent_type)
    for mode in (Mode.GENERATE, Mode.CRITIQUE):
        assert _holds(build_argv(agent, mode), DEBATE_OFF[agent_type])
    task = build_argv(agent, Mode.TASK)
    assert not _holds(task, DEBATE_OFF[agent_type])
    assert _holds(task, TASK_ON.get(agent_type, []))


def test_llm_takes_its_model_from_cli_args_and_has_no_tools_to_turn_off() -> None:
    agent = AgentConfig(id="local", type=AgentType.LLM, cli_args={"-m": "llama3.2"})
    argv = build_argv(agent, Mode.GENERATE)
    assert argv == ["llm", "prompt", "--no-stream", "--no-log", "--json", "-m", "llama3.2"]
    assert build_argv(agent, Mode.TASK) == argv
    assert "-T" not in argv and "--tool" not in argv


def test_no_preset_puts_the_prompt_on_the_command_line() -> None:
    # stdin everywhere: aider reads it as its message file.
    argv = build_argv(AgentConfig(id="a", type=AgentType.AIDER), Mode.GENERATE)
    assert argv[argv.index("--message-file") + 1] == "/dev/stdin"
    assert "--message" not in argv
    for agent_type in DEBATE_OFF:
        assert PRESETS[agent_type].positional == ()


def test_opencode_debate_agent_has_every_tool_off() -> None:
    config = json.loads(Path(OPENCODE_AGENTS).read_text(encoding="utf-8"))
    agent = config["agent"]["freemad-debate"]
    assert agent["tools"] == {"*": False}
    assert set(agent["permission"].values()) == {"deny"}
    assert dict(PRESETS[AgentType.OPENCODE].env)["OPENCODE_CONFIG"] == OPENCODE_AGENTS


# --- aider's login preflight ------------------------------------------------------------------

# Like aider 0.86.2: `--exit` without a model asks two questions and exits 1; with one, exits 0.
_AIDER = """\
if "--exit" in argv:
    if "--model" not in argv:
        print("No LLM model was specified and no API keys were provided.")
        print("Login to OpenRouter or create a free account? (Y)es/(N)o [Yes]: ", end="")
        sys.exit(1)
    sys.exit(0)
print("Aider v0.86.2\\nModel: m\\n\\nSOLUTION:\\nhi\\n\\nREASONING:\\nr\\n\\nTokens: 3 sent, 2 received.")
"""


def _call(agent: AgentConfig, **env: str) -> CallStatus:
    cli = CliAgent(agent, max_output_bytes=100_000, env=env_without_keys(**env))
    result = asyncio.run(cli.call(CallRequest(Mode.GENERATE, "hi", 30)))
    assert result.status is CallStatus.OK or result.detail
    return result.status


def test_aider_without_a_model_is_refused_before_its_call(fake_bin: FakeBin) -> None:
    fake_bin.add("aider", _AIDER)
    agent = AgentConfig(id="aider", type=AgentType.AIDER)
    cli = CliAgent(agent, max_output_bytes=100_000, env=env_without_keys())
    result = asyncio.run(cli.call(CallRequest(Mode.GENERATE, "hi", 30)))
    assert result.status is CallStatus.NOT_LOGGED_IN
    assert "No LLM model was specified" in result.detail
    (check,) = fake_bin.runs()
    assert check["argv"][0] == "--exit"
    assert check["stdin"] == "n\nn\n"  # "no" to the OpenRouter login it offers


def test_aider_with_a_model_passes_it_to_the_check_and_answers(fake_bin: FakeBin) -> None:
    fake_bin.add("aider", _AIDER)
    agent = AgentConfig(id="aider", type=AgentType.AIDER, cli_args={"model": "ollama/qwen3"})
    assert _call(agent) is CallStatus.OK
    check, call = fake_bin.runs()
    assert check["argv"][-2:] == ["--model", "ollama/qwen3"]
    assert call["argv"] == build_argv(agent, Mode.GENERATE)[1:]
    assert call["stdin"] == "hi"


def test_a_key_in_the_environment_skips_aiders_check(fake_bin: FakeBin) -> None:
    fake_bin.add("aider", _AIDER)
    agent = AgentConfig(id="aider", type=AgentType.AIDER)
    assert _call(agent, ANTHROPIC_API_KEY="sk-test") is CallStatus.OK
    assert ["--exit" in run["argv"] for run in fake_bin.runs()] == [False]
