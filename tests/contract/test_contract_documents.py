"""The contract's two documents agree: README.md's tables and openapi.yaml. No app needed."""

from __future__ import annotations

import re

import jsonschema

from contract_docs import CONTRACT_README, contract_statement_table
from openapi_check import OpenApi

HTTP_METHODS = {"get", "post", "put", "patch", "delete"}


def readme_endpoints() -> set[tuple[str, str]]:
    """(method, path) of each row of the README's "Endpoints" table."""
    endpoints = set()
    in_section = False
    for line in CONTRACT_README.read_text().splitlines():
        if line.startswith("## "):
            in_section = line.strip() == "## Endpoints"
            continue
        match = re.match(r"^\| `(GET|POST|PUT|PATCH|DELETE) ([^`?]+)(?:\?[^`]*)?`", line)
        if in_section and match:
            endpoints.add((match[1].lower(), match[2]))
    return endpoints


def test_openapi_documents_exactly_the_readme_endpoints():
    spec = OpenApi().spec
    documented = {(method, path) for path, item in spec["paths"].items() for method in item if method in HTTP_METHODS}
    listed = readme_endpoints()
    assert len(listed) >= 15, f"the README's Endpoints table did not parse: {sorted(listed)}"
    assert documented == listed, f"only in openapi.yaml: {documented - listed}; only in README: {listed - documented}"


def test_openapi_schemas_are_valid_json_schema():
    api = OpenApi()
    for name in api.spec["components"]["schemas"]:
        jsonschema.Draft7Validator.check_schema(api.schema(name))
    for path, item in api.spec["paths"].items():
        for method, operation in item.items():
            for status, answer in api.operation(method, path)["responses"].items():
                for media in answer.get("content", {}).values():
                    jsonschema.Draft7Validator.check_schema(media.get("schema", {}))
                for header in answer.get("headers", {}).values():
                    jsonschema.Draft7Validator.check_schema(header.get("schema", {}))


def test_every_error_answer_documents_the_error_schema():
    api = OpenApi()
    error = api.schema("Error")
    for path, item in api.spec["paths"].items():
        for method in item:
            for status, answer in api.operation(method, path)["responses"].items():
                if status.startswith("4") and path.split("/")[1] not in ("health", "metrics"):
                    assert answer["content"]["application/json"]["schema"] == error, f"{method} {path} {status}"


def test_readme_statement_table_is_complete():
    table = contract_statement_table()
    assert len(table) == 18, sorted(table)
    assert all(set(counts) == {"select", "insert", "update", "delete"} for counts in table.values())
