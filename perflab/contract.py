"""apps/contract/openapi.yaml as a checker: the one owner of "does this answer match the contract".

`OpenApi` reads the spec; `OpenApi.answer(method, route, status)` is what the contract documents
for that answer (its media types with their schemas, its headers), and `check_answer` checks one
answer received against it: the documented headers that are required are there and every one
present matches its schema, the media type is a documented one, and the body validates against
the documented schema (JSON bodies parsed first, text bodies as a string). Both the contract suite
(tests/contract/openapi_check.py, which adapts a `requests.Response`) and the bench's verify phase
(perflab/verify.py, which checks answers received on the db host) use it. OpenAPI 3.0 schema
objects used here are plain JSON Schema (no `nullable`), so jsonschema validates them once the
local `$ref`s are inlined.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import yaml  # type: ignore[import-untyped]

SPEC_PATH = Path(__file__).resolve().parent.parent / "apps" / "contract" / "openapi.yaml"
HTTP_METHODS = ("get", "post", "put", "patch", "delete")
# How much of a body a message quotes.
QUOTE_CHARS = 300


class ContractError(Exception):
    """An answer the contract does not allow, or a request it does not document: one line."""


def media_type(content_type: str | None) -> str:
    """`application/json; charset=utf-8` -> `application/json`."""
    return (content_type or "").split(";")[0].strip().lower()


def quote(text: str) -> str:
    return repr(text[:QUOTE_CHARS] + ("..." if len(text) > QUOTE_CHARS else ""))


def _reason(error: Any) -> str:
    """jsonschema's message, which quotes the whole instance ("[...] is not of type 'array'"), cut short."""
    message = str(error.message)
    return message if len(message) <= QUOTE_CHARS else message[:QUOTE_CHARS] + "..."


@dataclass(frozen=True)
class Answer:
    """What the contract documents for one status of one operation.

    content: media type -> JSON schema of the body (empty: the answer has no documented body);
    headers: header name -> {"required": bool, "schema": JSON schema}.
    """

    method: str
    route: str
    status: int
    content: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.method.upper()} {self.route}"

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "content": self.content, "headers": self.headers}


class OpenApi:
    def __init__(self, path: Path = SPEC_PATH) -> None:
        self.path = path
        self.spec: dict[str, Any] = yaml.safe_load(path.read_text())
        self._routes = [
            (re.compile("^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(route)) + "$"), route)
            for route in self.spec["paths"]
        ]

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

    def operation(self, method: str, route: str) -> dict[str, Any]:
        try:
            found: dict[str, Any] = self.resolve(self.spec["paths"][route][method.lower()])
        except KeyError:
            raise ContractError(f"openapi.yaml documents no {method.upper()} {route}") from None
        return found

    def schema(self, name: str) -> dict[str, Any]:
        found: dict[str, Any] = self.resolve(self.spec["components"]["schemas"][name])
        return found

    def statuses(self, method: str, route: str) -> list[str]:
        return sorted(self.operation(method, route)["responses"])

    def answer(self, method: str, route: str, status: int) -> Answer:
        """The documented answer `status` of `method route`; ContractError when it is not documented."""
        responses = self.operation(method, route)["responses"]
        documented = responses.get(str(status))
        if documented is None:
            raise ContractError(f"{method.upper()} {route}: status {status} is not documented "
                                f"(documented: {sorted(responses)})")
        content = {media: spec.get("schema", {}) for media, spec in documented.get("content", {}).items()}
        headers = {name: {"required": bool(spec.get("required")), "schema": spec.get("schema", {})}
                   for name, spec in documented.get("headers", {}).items()}
        return Answer(method=method.upper(), route=route, status=status, content=content, headers=headers)

    def route_of(self, method: str, path: str) -> str | None:
        """The documented route template a concrete path (no query) belongs to, e.g. /zipcodes/{zip}."""
        for pattern, route in self._routes:
            if pattern.match(path) and method.lower() in self.spec["paths"][route]:
                return str(route)
        return None


def check_answer(answer: Answer, status: int, headers: Mapping[str, str], body: str) -> Any:
    """ContractError unless the answer received matches `answer`; return the parsed body.

    headers: the received header names (any case) and values; body: the received body as text.
    """
    label = f"{answer.label} {status}"
    if status != answer.status:
        raise ContractError(f"{answer.label}: status {status}, expected {answer.status}; body: {quote(body)}")
    received = {name.lower(): value for name, value in headers.items()}
    for name, spec in answer.headers.items():
        value = received.get(name.lower())
        if value is None:
            if spec.get("required"):
                raise ContractError(f"{label}: no {name} header, which openapi.yaml requires; "
                                    f"headers: {sorted(received)}")
            continue
        try:
            jsonschema.Draft7Validator(spec.get("schema", {})).validate(value)
        except jsonschema.ValidationError as error:
            raise ContractError(f"{label}: header {name}: {value!r} breaks openapi.yaml: {_reason(error)}") from None
    if not answer.content:
        return body
    content_type = received.get("content-type")
    actual = media_type(content_type)
    if actual not in answer.content:
        raise ContractError(f"{label}: Content-Type {content_type!r}, documented {list(answer.content)}; "
                            f"body: {quote(body)}")
    parsed: Any = body
    if actual == "application/json":
        try:
            parsed = json.loads(body)
        except json.JSONDecodeError as error:
            raise ContractError(f"{label}: body is not JSON ({error}): {quote(body)}") from None
    try:
        jsonschema.Draft7Validator(answer.content[actual]).validate(parsed)
    except jsonschema.ValidationError as error:
        raise ContractError(f"{label}: body breaks openapi.yaml: {_reason(error)} at {list(error.absolute_path)}; "
                            f"body: {quote(body)}") from None
    return parsed
