"""apps/contract/openapi.yaml as the contract suite's checker: every answer the suite receives must
be documented.

The checking itself is perflab/contract.py's (one owner, shared with the bench's verify phase);
this adapts a `requests.Response` to it and turns its one-line ContractError into the
AssertionError a test reports. `OpenApi.check(response, method, route)` asserts that the status is
one the operation documents, that the documented headers it requires are there (each checked
against its schema), that the media type is the documented one, and validates the body against
the documented schema; it returns the parsed body.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import requests

from perflab import contract
from perflab.contract import SPEC_PATH, ContractError

__all__ = ["SPEC_PATH", "OpenApi", "media_type"]


def media_type(response: requests.Response) -> str:
    return contract.media_type(response.headers.get("Content-Type"))


class OpenApi(contract.OpenApi):
    def operation(self, method: str, route: str) -> dict[str, Any]:
        try:
            return super().operation(method, route)
        except ContractError as error:
            raise AssertionError(str(error)) from None

    def check(self, response: requests.Response, method: str, route: str) -> Any:
        """Assert `response` matches the documented answer; return the parsed body."""
        try:
            answer = self.answer(method, route, response.status_code)
            return contract.check_answer(answer, response.status_code, response.headers, response.text)
        except ContractError as error:
            raise AssertionError(f"{error}; body: {response.text[:300]!r}"
                                 if "body:" not in str(error) else str(error)) from None

    def error(self, response: requests.Response) -> dict[str, Any]:
        """Assert a 4xx with the contract's JSON error body whose status is the HTTP status."""
        assert 400 <= response.status_code < 500, (
            f"expected a 4xx, got {response.status_code}: {response.text[:300]!r}"
        )
        assert media_type(response) == "application/json", (
            f"{response.status_code} with Content-Type {response.headers.get('Content-Type')!r}, "
            f"expected application/json: {response.text[:300]!r}"
        )
        try:
            body: dict[str, Any] = response.json()
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
