#!/usr/bin/env python3
"""The official `openai` Python SDK's Responses API (`client.responses`) against a tinyagent
server.

Usage: TINYAGENT_BASE_URL=http://127.0.0.1:PORT/v1 TINYAGENT_KEY=KEY TINYAGENT_MODEL=NAME \
       openai_responses.py

The server (started by tests/openai_responses.rs) offers an agent whose scripted model calls
the `add` tool with {"a": 7, "b": 8} and then answers "7 + 8 = 15", on every question. This
script checks, through the SDK: a non-streamed response, a streamed one (text deltas, the
final response with usage), the tool calls reported as `tinyagent` events, input given as
items with instructions, and the errors (a wrong key, an unknown model, a
`previous_response_id` this stateless server refuses, a field the API does not have). Every
request body the SDK sent and every response body and stream event the server answered is
validated against OpenAI's OpenAPI spec. Exit status 0 when all holds; the first failure
raises.
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

# --- a non-streamed response ----------------------------------------------------------------
raw = client.responses.with_raw_response.create(
    model=MODEL, input=QUESTION, instructions="Answer with the sum.", max_output_tokens=200
)
check("Response", raw.http_response.json())
response = raw.parse()
assert response.object == "response" and response.status == "completed", response
assert response.output_text == ANSWER, response.output_text
assert [item.type for item in response.output] == ["message"], response.output
assert response.usage.total_tokens == response.usage.input_tokens + response.usage.output_tokens
events = response.model_extra["tinyagent"]["events"]
assert [e["type"] for e in events] == ["tool_call_started", "tool_call_finished"], events
assert events[0]["name"] == "add" and events[0]["arguments"] == {"a": 7, "b": 8}, events
print("non-streamed:", response.output_text, "| tool calls:", [e["name"] for e in events[:1]])

# --- input as items -------------------------------------------------------------------------
items = client.responses.create(
    model=MODEL,
    input=[
        {"role": "user", "content": [{"type": "input_text", "text": "Hello"}]},
        {"role": "assistant", "content": "Hi! What shall I add?"},
        {"role": "user", "content": QUESTION},
    ],
)
assert items.output_text == ANSWER, items.output_text

# --- a streamed response --------------------------------------------------------------------
text = ""
kinds = []
tool_events = []
final = None
with client.responses.create(model=MODEL, input=QUESTION, stream=True) as stream:
    for event in stream:
        kinds.append(event.type)
        extra = (event.model_extra or {}).get("tinyagent")
        if extra:
            tool_events.append(extra["event"])
        if event.type == "response.output_text.delta":
            text += event.delta
        if event.type == "response.completed":
            final = event.response
assert text == ANSWER, text
assert kinds[:2] == ["response.created", "response.in_progress"], kinds
assert kinds[-1] == "response.completed", kinds
assert final.output_text == ANSWER and final.usage.total_tokens > 0, final
assert [e["type"] for e in tool_events] == ["tool_call_started", "tool_call_finished"], tool_events
print("streamed:", text, "| events:", len(kinds), "| usage:", final.usage.total_tokens, "tokens")

# The same streamed request once more, read raw: every event is valid, numbered in order, and
# its `event:` line names its type.
body = sent[-1]
with http.stream(
    "POST", BASE_URL + "/responses", json=body, headers={"Authorization": f"Bearer {KEY}"}
) as raw_stream:
    assert raw_stream.status_code == 200
    assert raw_stream.headers["content-type"].startswith("text/event-stream")
    lines = [line for line in raw_stream.iter_lines() if line.startswith(("event: ", "data: "))]
names = [line[len("event: "):] for line in lines if line.startswith("event: ")]
datas = [json.loads(line[len("data: "):]) for line in lines if line.startswith("data: ")]
assert len(names) == len(datas)
for n, (name, data) in enumerate(zip(names, datas)):
    assert data["type"] == name and data["sequence_number"] == n, (name, data)
    check("ResponseStreamEvent", data)

# --- errors as the SDK's exceptions -----------------------------------------------------------
wrong = openai.OpenAI(base_url=BASE_URL, api_key="sk-wrong", max_retries=0)
try:
    wrong.responses.create(model=MODEL, input=QUESTION)
    raise AssertionError("a wrong key was accepted")
except openai.AuthenticationError as err:
    check("ErrorResponse", err.response.json())
    print("wrong key:", type(err).__name__, err.status_code)

try:
    client.responses.create(model="no-such-agent", input=QUESTION)
    raise AssertionError("an unknown model was accepted")
except openai.NotFoundError as err:
    assert err.code == "model_not_found", err.body
    print("unknown model:", type(err).__name__, err.status_code, err.code)

try:
    client.responses.create(model=MODEL, input=QUESTION, previous_response_id="resp_123")
    raise AssertionError("previous_response_id was accepted by a server that keeps no responses")
except openai.BadRequestError as err:
    check("ErrorResponse", err.response.json())
    assert err.body["param"] == "previous_response_id", err.body
    print("previous_response_id:", type(err).__name__, err.status_code, err.code)

try:
    client.responses.create(model=MODEL, input=QUESTION, extra_body={"stop": ["x"]})
    raise AssertionError("a field the Responses API does not have was accepted")
except openai.BadRequestError as err:
    assert err.code == "unsupported_parameter" and err.body["param"] == "stop", err.body
    print("unknown field:", type(err).__name__, err.status_code, err.code)

for request in sent:
    if "stop" not in request:
        check("CreateResponse", request)

names = ["Response", "ResponseStreamEvent", "CreateResponse", "ErrorResponse"]
print("validated against OpenAI's OpenAPI spec:", ", ".join(f"{n} {checked[n]}" for n in names))
assert all(checked[n] for n in names), checked
