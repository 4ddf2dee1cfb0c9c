"""Real output of copilot 1.0.102, opencode 1.18.33, qwen 0.24.4, llm 0.36 and aider 0.86.2,
run offline: without a login, and with a model served by a fake OpenAI-compatible server on
loopback (which answered "SOLUTION: HELLO-FROM-FAKE" with 11 prompt and 5 completion tokens).
Long ids and repeated events are shortened."""

from __future__ import annotations

# `copilot -p "" --output-format json` (the ephemeral events, which come between these, dropped).
COPILOT_JSON_OK = """\
{"type":"session.mcp_servers_loaded","ephemeral":true,"data":{"servers":[]},"id":"f020a90f","timestamp":"2026-12-01T23:27:37.049Z","parentId":"6d853b7f"}
{"type":"user.message","data":{"content":"Say hi\\n","transformedContent":"Say hi","messageId":"7fc079a7","turnId":"0"},"id":"e154d7d2","timestamp":"2026-12-01T23:27:37.105Z","parentId":"6d853b7f"}
{"type":"assistant.turn_start","data":{"turnId":"0","interactionId":"365bc6bb"},"id":"ac78732c","timestamp":"2026-12-01T23:27:37.111Z","parentId":"5c0f67b6"}
{"type":"assistant.message_delta","data":{"messageId":"f63f281a","deltaContent":"SOLUTION:\\nHELLO-FROM-FAKE\\n\\nREASONING:\\nfake"},"ephemeral":true,"id":"178b7349","timestamp":"2026-12-01T23:27:37.343Z","parentId":"ac78732c"}
{"type":"assistant.message","data":{"messageId":"f63f281a","originatingMessageId":"7fc079a7","model":"fake-model","content":"SOLUTION:\\nHELLO-FROM-FAKE\\n\\nREASONING:\\nfake","toolRequests":[],"turnId":"0","rte":false,"apiCallId":"c1"},"id":"3260e46b","timestamp":"2026-12-01T23:27:37.351Z","parentId":"8b0995f8"}
{"type":"assistant.turn_end","data":{"turnId":"0"},"id":"11fe60bf","timestamp":"2026-12-01T23:27:37.352Z","parentId":"3260e46b"}
{"type":"result","timestamp":"2026-12-01T23:27:37.365Z","sessionId":"a42e2ace","exitCode":0,"usage":{"premiumRequests":0,"totalApiDurationMs":32,"sessionDurationMs":402,"codeChanges":{"linesAdded":0,"linesRemoved":0,"filesModified":[]}}}
"""

# The provider refused the connection: rc 1.
COPILOT_JSON_NO_PROVIDER = """\
{"type":"assistant.turn_start","data":{"turnId":"0","interactionId":"79083f33"},"id":"a2701b16","timestamp":"2026-12-01T23:27:52.025Z","parentId":"35d10ec4"}
{"type":"assistant.turn_end","data":{"turnId":"0"},"id":"cf93feb2","timestamp":"2026-12-01T23:28:15.438Z","parentId":"a2701b16"}
{"type":"session.error","data":{"errorType":"query","message":"Could not connect to local model provider at http://127.0.0.1:18799/v1.\\n  Check that the service is running and the port is correct.","originatingMessageId":"1b063477"},"id":"165cd2b5","timestamp":"2026-12-01T23:28:15.439Z","parentId":"cf93feb2"}
{"type":"result","timestamp":"2026-12-01T23:28:15.449Z","sessionId":"c049af79","exitCode":1,"usage":{"premiumRequests":0,"totalApiDurationMs":0,"sessionDurationMs":23830,"codeChanges":{"linesAdded":0,"linesRemoved":0,"filesModified":[]}}}
"""

# No login at all: rc 1 within seconds, stdout empty, this on stderr.
COPILOT_NOT_LOGGED_IN = """\
Error: No authentication information found.

Copilot can be authenticated with GitHub using an OAuth Token or a Fine-Grained Personal Access Token.

To authenticate, you can use any of the following methods:
  • Start 'copilot' and run the '/login' command
  • Set the COPILOT_GITHUB_TOKEN, GH_TOKEN, or GITHUB_TOKEN environment variable
  • Run 'gh auth login' to authenticate with the GitHub CLI
"""

# `opencode run --format json`.
OPENCODE_JSON_OK = """\
{"type":"step_start","timestamp":1796167840713,"sessionID":"ses_dcc0dd56","part":{"id":"prt_1","messageID":"msg_1","sessionID":"ses_dcc0dd56","type":"step-start"}}
{"type":"text","timestamp":1796167840713,"sessionID":"ses_dcc0dd56","part":{"id":"prt_2","messageID":"msg_1","sessionID":"ses_dcc0dd56","type":"text","text":"SOLUTION:\\nHELLO-FROM-FAKE\\n\\nREASONING:\\nfake","time":{"start":1796167840621,"end":1796167840641}}}
{"type":"step_finish","timestamp":1796167840713,"sessionID":"ses_dcc0dd56","part":{"id":"prt_3","reason":"stop","messageID":"msg_1","sessionID":"ses_dcc0dd56","type":"step-finish","tokens":{"total":16,"input":11,"output":5,"reasoning":0,"cache":{"write":0,"read":0}},"cost":0}}
"""

# No network (its free default model, after about 65 s of retries): rc 1.
OPENCODE_JSON_NO_NETWORK = (
    '{"type":"error","timestamp":1796167556725,"sessionID":"ses_dcc13240","error":{"name":"APIError",'
    '"data":{"message":"Cannot connect to API: Unable to connect. Is the computer able to access the '
    'url?","isRetryable":true,"metadata":{"url":"https://opencode.ai/zen/v1/chat/completions"}}}}\n'
)

# `qwen -o json` (a JSON array, printed at the end; the init message shortened).
QWEN_JSON_OK = """\
[{"type":"system","subtype":"init","uuid":"u1","session_id":"s1","model":"fake-model"},\
{"type":"assistant","uuid":"u2","session_id":"s1","message":{"id":"m1","type":"message","role":"assistant","model":"fake-model","content":[{"type":"text","text":"SOLUTION:\\nHELLO-FROM-FAKE\\n\\nREASONING:\\nfake"}],"usage":{"input_tokens":11,"output_tokens":5,"cache_read_input_tokens":0,"total_tokens":16}},"parent_tool_use_id":null},\
{"type":"result","subtype":"success","uuid":"u3","session_id":"s1","is_error":false,"duration_ms":1234,"num_turns":1,"result":"SOLUTION:\\nHELLO-FROM-FAKE\\n\\nREASONING:\\nfake","usage":{"input_tokens":22,"output_tokens":10,"cache_read_input_tokens":0,"total_tokens":32},"permission_denials":[]}]
"""

# No auth type chosen: rc 1 within seconds.
QWEN_JSON_NO_AUTH = (
    '[{"type":"result","subtype":"error_during_execution","uuid":"e15dac59","session_id":"47bf91ab",'
    '"is_error":true,"duration_ms":0,"duration_api_ms":0,"num_turns":0,"usage":{"input_tokens":0,'
    '"output_tokens":0},"permission_denials":[],"error":{"message":"No auth type is selected. '
    "Please configure an auth type (e.g. via settings or `--auth-type`) before running in "
    'non-interactive mode."}}]\n'
)

# `llm prompt --no-stream --no-log --json -m fake` (response_json shortened).
LLM_JSON_OK = """\
[
  {
    "id": "01m8sz0ab33xynjv3pg7x2v20n",
    "model": "fake",
    "resolved_model": null,
    "options_json": {},
    "conversation_id": "01m8sz0aayjahq96rzhh98b0ke",
    "duration_ms": 154,
    "datetime_utc": "2026-12-01T23:28:26.979875+00:00",
    "input_tokens": 11,
    "output_tokens": 5,
    "token_details": null,
    "prompt": "Say hi\\n",
    "system": null,
    "response": "SOLUTION:\\nHELLO-FROM-FAKE\\n\\nREASONING:\\nfake",
    "reasoning": null,
    "response_json": {"id": "c1", "object": "chat.completion"},
    "tools": [],
    "tool_calls": [],
    "tool_results": [],
    "attachments": []
  }
]
"""

# No key for its default (OpenAI) model, and a model no plugin provides: rc 1, on stderr.
LLM_NO_KEY = (
    "Error: No key found - add one using 'llm keys set openai' or set the OPENAI_API_KEY "
    "environment variable\n"
)
LLM_UNKNOWN_MODEL = "Error: 'Unknown model: llama3.2'\n"

# aider with the preset's flags and `--model openai/fake-model`: rc 0.
AIDER_TEXT_OK = """\

HTTPSConnectionPool(host='raw.githubusercontent.com', port=443): Max retries exceeded with url: /BerriAI/litellm/main/model_prices_and_context_window.json (Caused by NameResolutionError("HTTPSConnection(host='raw.githubusercontent.com', port=443): Failed to resolve 'raw.githubusercontent.com' ([Errno -2] Name or service not known)"))
Aider v0.86.2
Model: openai/fake-model with ask edit format
Git repo: none
Repo-map: disabled

SOLUTION:
HELLO-FROM-FAKE

REASONING:
fake

Tokens: 11 sent, 5 received.
"""

# The same without a key: still rc 0.
AIDER_TEXT_NO_KEY = """\
Aider v0.86.2
Model: openai/fake-model with ask edit format
Git repo: none
Repo-map: disabled

litellm.AuthenticationError: AuthenticationError: OpenAIException - The api_key\x20
client option must be set either by passing api_key to the client or by setting\x20
the OPENAI_API_KEY environment variable
The API provider is not able to authenticate you. Check your API key.

"""

# `aider --exit ...` with neither a model nor a key, "n" answered to both questions: rc 1.
AIDER_NO_MODEL = """\

No LLM model was specified and no API keys were provided.
OpenRouter provides free and paid access to many LLMs.
Login to OpenRouter or create a free account? (Y)es/(N)o [Yes]:\x20
https://aider.chat/docs/troubleshooting/models-and-keys.html
Open documentation URL for more info? (Y)es/(N)o/(D)on't ask again [Yes]: \
"""
