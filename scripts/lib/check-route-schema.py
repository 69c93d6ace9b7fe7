"""Checks route files against `switchyard schema`'s JSON Schema (draft 2020-12), as an editor
with yaml-language-server would: every file given must pass, and a file with a misspelt
plugin key must fail (the schema refuses unknown keys, as validate does).

    python3 scripts/lib/check-route-schema.py SCHEMA.json ROUTE.yaml...
"""
import json
import sys

import jsonschema
import yaml


def problems(validator, document):
    return sorted(validator.iter_errors(document), key=lambda error: list(error.absolute_path))


def main():
    schema = json.load(open(sys.argv[1]))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    failed = 0
    for path in sys.argv[2:]:
        with open(path) as file:
            document = yaml.safe_load(file) or {}
        for error in problems(validator, document):
            failed += 1
            where = "/".join(str(step) for step in error.absolute_path) or "(top)"
            print(f"{path}: {where}: {error.message[:300]}")
    misspelt = {"instances": {"broker": {"plugin": "mqtt", "url": "mqtt://127.0.0.1:1883", "subscriptons": []}}}
    if not any("subscriptons" in error.message for error in problems(validator, misspelt)):
        print("the schema accepts a misspelt mqtt key (subscriptons)")
        failed += 1
    print(f"route schema: {len(sys.argv) - 2} files checked, {failed} problem(s)")
    sys.exit(1 if failed else 0)


main()
