"""Schemathesis hooks for the runs of tests/system/test_schemathesis.py
(``SCHEMATHESIS_HOOKS=tests.support.schemathesis_hooks``).

The identity pages answer ``text/html``, documented as a string (the ``HtmlPage`` schema, by ``$ref``). Schemathesis
cannot tell a referenced schema is a plain string and would skip validating those answers with a
``missing_deserializer`` warning; this deserializer hands it the page as text, so each page is validated against
its schema like every other answer.

A link's ``requestBody`` is one runtime expression (openapi-generator's validator refuses anything else), which
cannot build a form, so the identity document names the form fields a link fills in its ``x-form-fields``; the
``before_load_schema`` hook below hands them to Schemathesis as the link's body, which it merges into the form it
generates, so that the stateful phase introspects and revokes the token it just got.
"""

from __future__ import annotations

from typing import Any

import schemathesis
from schemathesis.core.deserialization import DeserializationContext
from schemathesis.core.transport import Response
from schemathesis.hooks import HookContext

from tests.support.framework_words import framework_words


@schemathesis.deserializer("text/html")
def html_page(_: DeserializationContext, response: Response) -> str:
    return response.content.decode(response.encoding or "utf-8")


@schemathesis.hook
def before_load_schema(_: HookContext, raw_schema: dict[str, Any]) -> None:
    for path_item in raw_schema.get("paths", {}).values():
        for operation in path_item.values():
            if not isinstance(operation, dict):
                continue
            for response in operation.get("responses", {}).values():
                for link in response.get("links", {}).values() if isinstance(response, dict) else ():
                    if "x-form-fields" in link:
                        link["requestBody"] = link["x-form-fields"]


@schemathesis.check
def answers_in_our_own_words(_: Any, response: Response, case: Any) -> None:
    """No validator or framework wording reaches a client (docs/security.md): every answer's body and headers are
    searched for jsonschema's, Connexion's, Starlette's and Werkzeug's phrasing and Python's tracebacks
    (``tests/support/framework_words.py``), on every case of every live run, positive and negative."""
    headers = " ".join(f"{name}: {', '.join(values)}" for name, values in response.headers.items())
    said = framework_words(response.content.decode("utf-8", errors="replace")) or framework_words(headers)
    if said is not None:
        raise AssertionError(f"{case.operation.label} answered {response.status_code} in a framework's words: {said!r}")
