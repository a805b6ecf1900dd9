"""Schemathesis hooks for the runs of tests/system/test_schemathesis.py
(``SCHEMATHESIS_HOOKS=tests.support.schemathesis_hooks``).

The identity pages answer ``text/html``, documented as a string (the ``HtmlPage`` schema, by ``$ref``). Schemathesis
cannot tell a referenced schema is a plain string and would skip validating those answers with a
``missing_deserializer`` warning; this deserializer hands it the page as text, so each page is validated against
its schema like every other answer.
"""

from __future__ import annotations

import schemathesis
from schemathesis.core.deserialization import DeserializationContext
from schemathesis.core.transport import Response


@schemathesis.deserializer("text/html")
def html_page(_: DeserializationContext, response: Response) -> str:
    return response.content.decode(response.encoding or "utf-8")
