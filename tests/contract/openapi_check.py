"""apps/contract/openapi.yaml as a checker: every answer the suite receives must be documented.

`OpenApi.check(response, method, route)` asserts that the status is one the operation documents,
that the documented headers it requires are there (each checked against its schema), that the
media type is the documented one, and validates a JSON body against the documented schema.
OpenAPI 3.0 schema objects used here are plain JSON Schema (no `nullable`), so jsonschema
validates them once local `$ref`s are inlined.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import requests
import yaml

SPEC_PATH = Path(__file__).resolve().parents[2] / "apps" / "contract" / "openapi.yaml"


def media_type(response: requests.Response) -> str:
    return response.headers.get("Content-Type", "").split(";")[0].strip().lower()


class OpenApi:
    def __init__(self, path: Path = SPEC_PATH) -> None:
        self.spec = yaml.safe_load(path.read_text())

    def resolve(self, node: Any) -> Any:
        """`node` with every local `$ref` replaced by its target (the spec has no cycles)."""
        if isinstance(node, dict):
            if "$ref" in node:
                target: Any = self.spec
                for part in node["$ref"].removeprefix("#/").split("/"):
                    target = target[part]
                return self.resolve(target)
            return {key: self.resolve(value) for key, value in node.items()}
        if isinstance(node, list):
            return [self.resolve(item) for item in node]
        return node

    def operation(self, method: str, route: str) -> dict:
        try:
            return self.resolve(self.spec["paths"][route][method.lower()])
        except KeyError:
            raise AssertionError(f"openapi.yaml documents no {method.upper()} {route}") from None

    def schema(self, name: str) -> dict:
        return self.resolve(self.spec["components"]["schemas"][name])

    def check(self, response: requests.Response, method: str, route: str) -> Any:
        """Assert `response` matches the documented answer; return the parsed body."""
        responses = self.operation(method, route)["responses"]
        status = str(response.status_code)
        assert status in responses, (
            f"{method.upper()} {route}: status {status} is not documented "
            f"(documented: {sorted(responses)}); body: {response.text[:300]!r}"
        )
        self._check_headers(response, method, route, responses[status].get("headers", {}))
        content = responses[status].get("content", {})
        if not content:
            return response.content
        documented = list(content)
        actual = media_type(response)
        assert actual in documented, (
            f"{method.upper()} {route} {status}: Content-Type {response.headers.get('Content-Type')!r}, "
            f"documented {documented}; body: {response.text[:300]!r}"
        )
        schema = content[actual].get("schema", {})
        if actual == "application/json":
            try:
                body = response.json()
            except json.JSONDecodeError as error:
                raise AssertionError(
                    f"{method.upper()} {route} {status}: body is not JSON ({error}): {response.text[:300]!r}"
                ) from None
        else:
            body = response.text
        try:
            jsonschema.Draft7Validator(schema).validate(body)
        except jsonschema.ValidationError as error:
            raise AssertionError(
                f"{method.upper()} {route} {status}: body breaks openapi.yaml: {error.message} "
                f"at {list(error.absolute_path)}; body: {response.text[:300]!r}"
            ) from None
        return body

    @staticmethod
    def _check_headers(response: requests.Response, method: str, route: str, headers: dict) -> None:
        """Every documented header that is required is present, and every one present matches its schema."""
        for name, header in headers.items():
            value = response.headers.get(name)
            if value is None:
                assert not header.get("required"), (
                    f"{method.upper()} {route} {response.status_code}: no {name} header, which openapi.yaml "
                    f"requires; headers: {dict(response.headers)}"
                )
                continue
            try:
                jsonschema.Draft7Validator(header.get("schema", {})).validate(value)
            except jsonschema.ValidationError as error:
                raise AssertionError(
                    f"{method.upper()} {route} {response.status_code}: header {name}: {value!r} breaks "
                    f"openapi.yaml: {error.message}"
                ) from None

    def error(self, response: requests.Response) -> dict:
        """Assert a 4xx with the contract's JSON error body whose status is the HTTP status."""
        assert 400 <= response.status_code < 500, (
            f"expected a 4xx, got {response.status_code}: {response.text[:300]!r}"
        )
        assert media_type(response) == "application/json", (
            f"{response.status_code} with Content-Type {response.headers.get('Content-Type')!r}, "
            f"expected application/json: {response.text[:300]!r}"
        )
        try:
            body = response.json()
        except json.JSONDecodeError as error:
            raise AssertionError(f"error body is not JSON ({error}): {response.text[:300]!r}") from None
        try:
            jsonschema.Draft7Validator(self.schema("Error")).validate(body)
        except jsonschema.ValidationError as error:
            raise AssertionError(f"error body breaks the Error schema: {error.message}: {body!r}") from None
        assert body["status"] == response.status_code, (
            f"body status {body['status']} differs from HTTP {response.status_code}"
        )
        return body
