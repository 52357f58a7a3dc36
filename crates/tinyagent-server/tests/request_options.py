#!/usr/bin/env python3
"""Chat Completions request options through the official `openai` SDK (pinned in
scripts/requirements-test.txt) against `tinyagent serve`'s router, whose agent's model is the
real OpenAI provider talking to a loopback server that records what it receives.

Usage: TINYAGENT_BASE_URL=http://127.0.0.1:PORT/v1 TINYAGENT_KEY=KEY TINYAGENT_MODEL=NAME request_options.py

Prints one line per check; the Rust side (tests/request_options.rs) checks what reached the
model.
"""

import json
import os
import sys
from pathlib import Path

import httpx2 as httpx  # the HTTP client the openai SDK is built on
import openai
from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spec_check import check, checked  # noqa: E402  (OpenAI's OpenAPI spec, as JSON Schema)


def validate(response):
    """Checks every answer against the spec: errors, answers, and each streamed chunk."""
    response.read()
    if response.status_code >= 400:
        check("ErrorResponse", response.json())
    elif response.headers.get("content-type", "").startswith("text/event-stream"):
        for line in response.text.splitlines():
            if line.startswith("data: ") and line != "data: [DONE]":
                check("CreateChatCompletionStreamResponse", json.loads(line[len("data: "):]))
    else:
        check("CreateChatCompletionResponse", response.json())


http = httpx.Client(event_hooks={"response": [validate]}, timeout=30)
client = openai.OpenAI(
    base_url=os.environ["TINYAGENT_BASE_URL"],
    api_key=os.environ["TINYAGENT_KEY"],
    max_retries=0,
    http_client=http,
)
MODEL = os.environ["TINYAGENT_MODEL"]


class Review(BaseModel):
    sentiment: str
    stars: int
    summary: str


# 1. A typed answer: parse() with a pydantic model (the model's first answer misses the shape;
#    the server shows it the problem once and the second answer fits).
parsed = client.chat.completions.parse(
    model=MODEL,
    messages=[{"role": "user", "content": "Review: the phone broke after a week."}],
    response_format=Review,
)
review = parsed.choices[0].message.parsed
assert isinstance(review, Review), parsed
print("parsed:", review.model_dump_json())

# 2. tool_choice "none": the agent runs no tool.
done = client.chat.completions.create(
    model=MODEL,
    messages=[{"role": "user", "content": "What is 7 plus 8?"}],
    tool_choice="none",
    max_tokens=5,
)
print("tool_choice none:", done.choices[0].message.content, "| events:", len(getattr(done, "tinyagent", {}) or {}))

# 3. A streamed typed answer arrives whole, as valid JSON.
with client.chat.completions.stream(
    model=MODEL,
    messages=[{"role": "user", "content": "Review: great battery."}],
    response_format=Review,
) as stream:
    final = stream.get_final_completion()
print("streamed parsed:", final.choices[0].message.parsed.model_dump_json())

# 4. Refused options: a 400 naming each.
for name, value in [
    ("logprobs", True),
    ("n", 2),
    ("logit_bias", {"50256": -100}),
    ("frobnicate", 1),
]:
    try:
        client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "hi"}],
            extra_body={name: value},
        )
        raise SystemExit(f"{name} was accepted")
    except openai.BadRequestError as err:
        assert err.status_code == 400, err
        assert err.body["param"] == name, err.body
        assert err.body["code"] == "unsupported_parameter", err.body
        print(f"refused {name}: {err.body['message']}")

# 5. Hints are accepted, and defaults of refused options change nothing.
hinted = client.chat.completions.create(
    model=MODEL,
    messages=[{"role": "user", "content": "hi"}],
    user="u-1",
    metadata={"team": "a"},
    store=False,
    top_p=1,
    n=1,
)
print("hints accepted:", hinted.choices[0].finish_reason)

# 6. Sampling options reach the model (the Rust side checks the body it received); the
#    operator pinned `stop` and capped `temperature` at 1.
sampled = client.chat.completions.create(
    model=MODEL,
    messages=[{"role": "user", "content": "Say something."}],
    temperature=0.5,
    top_p=0.5,
    seed=7,
    presence_penalty=0.5,
    frequency_penalty=0.25,
)
print("sampled:", sampled.choices[0].message.content)

# 7. What the operator set: another value of a pinned field, or one above a cap, is a 400.
for name, value in [("stop", ["X"]), ("temperature", 1.5)]:
    try:
        client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "hi"}],
            extra_body={name: value},
        )
        raise SystemExit(f"{name}={value} was accepted")
    except openai.BadRequestError as err:
        assert err.body["param"] == name and err.body["code"] == "invalid_value", err.body
        print(f"operator's {name}: {err.body['message']}")

# 8. An option the agent's model does not take (Anthropic's API has no seed) is a 400 naming
#    it, before anything streams.
for stream in (False, True):
    try:
        client.chat.completions.create(
            model=os.environ["TINYAGENT_OTHER_MODEL"],
            messages=[{"role": "user", "content": "hi"}],
            seed=7,
            stream=stream,
        )
        raise SystemExit("seed was accepted by a model without it")
    except openai.BadRequestError as err:
        assert err.body["param"] == "seed", err.body
        assert err.body["code"] == "unsupported_parameter", err.body
        print(f"model without seed (stream={stream}): {err.body['message']}")
print(
    "validated against OpenAI's OpenAPI spec:",
    ", ".join(f"{n} {c}" for n, c in checked.items() if c),
)
print("request options: ok")
