"""Output the real agent CLIs printed, from the investigation runs (FINDINGS.md).

claude 2.1.197, codex 0.171.0, gemini 0.61.0, run offline with an empty HOME; the successful
answers came from a loopback fake of each vendor's API, so their text is "HELLO-FROM-FAKE".
Every line is verbatim; some repeated "Reconnecting..." lines and gemini's per-role stats are left out.
"""

from __future__ import annotations

# `claude -p --output-format json ...` against the fake API: rc 0.
CLAUDE_JSON_OK = (
    '{"type":"result","subtype":"success","is_error":false,"api_error_status":null,'
    '"duration_ms":115,"duration_api_ms":23,"ttft_ms":108,"ttft_stream_ms":102,'
    '"time_to_request_ms":92,"num_turns":1,"result":"HELLO-FROM-FAKE","stop_reason":"end_turn",'
    '"session_id":"d0c849d3-8215-4129-b3c1-9196e68640a7","total_cost_usd":0.00010800000000000001,'
    '"usage":{"input_tokens":11,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,'
    '"output_tokens":5,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},'
    '"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,'
    '"ephemeral_5m_input_tokens":0},"inference_geo":"","iterations":[],"speed":"standard"},'
    '"modelUsage":{"claude-sonnet-5":{"inputTokens":11,"outputTokens":5,"cacheReadInputTokens":0,'
    '"cacheCreationInputTokens":0,"webSearchRequests":0,"costUSD":0.00010800000000000001,'
    '"contextWindow":200000,"maxOutputTokens":64000}},"permission_denials":[],'
    '"terminal_reason":"completed","fast_mode_state":"off",'
    '"uuid":"49cf7bf0-ecfb-4460-8298-110515f9b361"}\n'
)

# The same, not logged in: rc 1, and `subtype` still says "success".
CLAUDE_JSON_NOT_LOGGED_IN = (
    '{"type":"result","subtype":"success","is_error":true,"api_error_status":null,'
    '"duration_ms":114,"duration_api_ms":0,"num_turns":1,'
    '"result":"Not logged in · Please run /login","stop_reason":"stop_sequence",'
    '"session_id":"bca5a328-4935-46ed-97ad-77c82041a8d7","total_cost_usd":0,'
    '"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,'
    '"output_tokens":0,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},'
    '"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,'
    '"ephemeral_5m_input_tokens":0},"inference_geo":"","iterations":[],"speed":"standard"},'
    '"modelUsage":{},"permission_denials":[],"terminal_reason":"completed",'
    '"fast_mode_state":"off","uuid":"4e29813b-7227-4041-804b-872003253a8f"}\n'
)

# A key the server rejected (HTTP 401), with CLAUDE_CODE_MAX_RETRIES=0: rc 1.
CLAUDE_JSON_BAD_KEY = (
    '{"type":"result","subtype":"success","is_error":true,"api_error_status":401,'
    '"duration_ms":92,"duration_api_ms":0,"num_turns":1,'
    '"result":"Invalid API key · Fix external API key","stop_reason":"stop_sequence",'
    '"session_id":"b32dddc9-d40a-4f4e-892a-a80bdd8aac82","total_cost_usd":0,'
    '"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,'
    '"output_tokens":0,"server_tool_use":{"web_search_requests":0,"web_fetch_requests":0},'
    '"service_tier":"standard","cache_creation":{"ephemeral_1h_input_tokens":0,'
    '"ephemeral_5m_input_tokens":0},"inference_geo":"","iterations":[],"speed":"standard"},'
    '"modelUsage":{},"permission_denials":[],"terminal_reason":"completed",'
    '"fast_mode_state":"off","uuid":"3cb69060-3097-46e7-acbe-f7a0fcfbd6b9"}\n'
)

CLAUDE_TEXT_NOT_LOGGED_IN = "Not logged in · Please run /login\n"
CLAUDE_TEXT_NO_NETWORK = "API Error: Unable to connect to API (FailedToOpenSocket)\n"

# `codex exec --json ... -` against the fake API: rc 0. The answer is the agent_message.
CODEX_JSON_OK = """\
{"type":"thread.started","thread_id":"01a22a47-3fa0-7623-89d0-fc0b16dfa9a7"}
{"type":"turn.started"}
{"type":"error","message":"Reconnecting... 2/5 (unexpected status 404 Not Found: {}, url: ws://127.0.0.1:18555/v1/responses)"}
{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Falling back from WebSockets to HTTPS transport. unexpected status 404 Not Found: Unknown error, url: ws://127.0.0.1:18555/v1/responses"}}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"HELLO-FROM-FAKE"}}
{"type":"turn.completed","usage":{"input_tokens":11,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":5,"reasoning_output_tokens":0}}
"""

# A rejected key: rc 1 after the retries; no agent message.
CODEX_JSON_401 = """\
{"type":"thread.started","thread_id":"01a22a4c-c69a-7720-a6dd-e38b4e38a632"}
{"type":"turn.started"}
{"type":"error","message":"Reconnecting... 5/5 (unexpected status 401 Unauthorized: Incorrect API key provided: sk-fake., url: http://127.0.0.1:18556/v1/responses)"}
{"type":"error","message":"unexpected status 401 Unauthorized: Incorrect API key provided: sk-fake., url: http://127.0.0.1:18556/v1/responses"}
{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized: Incorrect API key provided: sk-fake., url: http://127.0.0.1:18556/v1/responses"}}
"""

# No network, with --disable unbounded_connection_retries: rc 1 after the retries.
CODEX_JSON_NO_NETWORK = """\
{"type":"thread.started","thread_id":"01a22a48-4991-7a53-9a98-72cb6485459d"}
{"type":"turn.started"}
{"type":"error","message":"Reconnecting... 5/5 (Connection failed: error sending request)"}
{"type":"error","message":"Connection failed: error sending request"}
{"type":"turn.failed","error":{"message":"Connection failed: error sending request"}}
"""

# `codex login status` with an empty CODEX_HOME under /tmp: rc 1, all on stderr.
CODEX_LOGIN_STATUS_STDERR = (
    "WARNING: proceeding, even though we could not create PATH aliases: Refusing to create "
    'helper binaries under temporary dir "/tmp" (codex_home: '
    'AbsolutePathBuf("/tmp/agent-clis/homes/home.s_p3yyo7/.codex"))\n'
    "Not logged in\n"
)

# `gemini -p "" -o json ...` against the fake API: rc 0, pretty-printed.
GEMINI_JSON_OK = """\
{
  "session_id": "318e9c3e-15e8-4edc-9f4e-43caa560050b",
  "response": "HELLO-FROM-FAKE",
  "stats": {
    "models": {
      "fake": {
        "api": {
          "totalRequests": 1,
          "totalErrors": 0,
          "totalLatencyMs": 123,
          "errorsByType": {}
        },
        "tokens": {
          "input": 11,
          "prompt": 11,
          "candidates": 5,
          "total": 16,
          "cached": 0,
          "thoughts": 0,
          "tool": 0
        }
      }
    },
    "tools": {
      "totalCalls": 0,
      "totalSuccess": 0,
      "totalFail": 0,
      "totalDurationMs": 0,
      "byName": {}
    },
    "files": {
      "totalLinesAdded": 0,
      "totalLinesRemoved": 0
    }
  }
}
"""

# Not logged in, `-o json`: rc 41; this object is printed on stderr and stdout is empty.
GEMINI_JSON_AUTH_ERROR = """\
{
  "session_id": "76ee2a75-c486-4a10-8361-cd031f3b120a",
  "error": {
    "type": "Error",
    "message": "Please set an Auth method in your /tmp/agent-clis/homes/home.7ueqt8cb/.gemini/settings.json or specify one of the following environment variables before running: GEMINI_API_KEY, GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA",
    "code": 41
  }
}
"""

GEMINI_TEXT_AUTH_ERROR = (
    "Please set an Auth method in your /tmp/agent-clis/homes/home.egm1fpc2/.gemini/settings.json "
    "or specify one of the following environment variables before running: GEMINI_API_KEY, "
    "GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_GENAI_USE_GCA\n"
)
GEMINI_BAD_KEY = (
    '{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.",'
    '"status":"INVALID_ARGUMENT"}}'
)
GEMINI_GATEWAY_AUTH = "Invalid auth method selected."

# Unknown options, as each CLI reports them on stderr.
CLAUDE_UNKNOWN_OPTION = "error: unknown option '--bogus-flag'\n"
CODEX_UNKNOWN_OPTION = "error: unexpected argument '--bogus-flag' found\n"
CODEX_UNKNOWN_FEATURE = "Error: Unknown feature flag: no_such_feature\n"
GEMINI_UNKNOWN_OPTION = "Unknown arguments: bogus-flag, bogusFlag\n"
