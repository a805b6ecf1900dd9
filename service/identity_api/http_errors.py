"""Identity errors as HTTP, in this one place.

Each operation of ``openapi/identity.yaml`` declares the form its errors take, ``x-error-form``:

- ``page``: an HTML page for the person in the browser, never a redirect (RFC 6749 §4.1.2.1: not to
  an unverified redirect URI), with the pages' security headers;
- ``oauth``: an RFC 6749 §5.2 JSON error, ``{"error", "error_description"}``, with ``Cache-Control:
  no-store`` and ``Pragma: no-cache``; ``invalid_client`` is 401 with a ``Basic`` challenge when the request
  carried an ``Authorization`` header, else 400 without one (identity/common/errors.py, ``InvalidClient``);
- ``resource``: the RFC 6750 §3 JSON error of a protected resource, with ``Cache-Control: no-store``
  (a ``Bearer`` challenge when the error is the token's).

The domain's errors (``OAuthError``, ``BearerError``, ``ErrorPage``) each belong to one form.
Connexion's 400 and 415, a body over the cap (413) or too slow (408) and an unexpected error (500; 503 when the
database is unreachable, never for a constraint's refusal) take the form of the operation at the request's path;
Connexion's 404 and 405 are the service's problems. Every operation must declare its form, and the operations of
one path must agree (a 413 is answered before the method is routed): the app does not start otherwise.

An error's ``detail`` (fosite's debug) is logged at INFO, never answered.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Literal, get_args

from connexion.exceptions import ProblemException
from connexion.lifecycle import ConnexionRequest, ConnexionResponse
from starlette.exceptions import HTTPException
from starlette.formparsers import MultiPartException
from starlette.responses import Response
from starlette.types import Scope

from identity.common.errors import BearerError, ErrorPage, InvalidClient, OAuthError, describable
from identity.common.issuer import Issuer
from identity.common.page_data import message
from service.identity_api.handler_support import NO_STORE, json
from service.identity_api.page_rendering import page_response
from service.web.body_limit import describe
from service.web.connexion_adapter import as_connexion
from service.web.contracts import METHODS, Contract
from service.web.problems import UNAVAILABLE_RETRY_AFTER, database_unavailable

log = logging.getLogger("service.identity")

ErrorForm = Literal["page", "oauth", "resource"]
ProblemHandler = Callable[[ConnexionRequest, Exception], ConnexionResponse]
# Every error the identity API answers goes through ``IdentityErrors.handle`` (Connexion has its own
# handlers for ProblemException and HTTPException, which only a handler for the same class replaces).
HANDLED = (OAuthError, BearerError, ErrorPage, ProblemException, HTTPException, Exception)


class ErrorForms:
    """The error form of each path of the identity API, as its operations declare it."""

    def __init__(self, identity: Contract, base_path: str) -> None:
        self._template_of = identity.template_of(base_path)
        self._forms: dict[str, ErrorForm] = {}
        for template in identity.templates:
            item = identity.document["paths"][template]
            forms = {item[method].get("x-error-form") for method in METHODS if method in item}
            if not forms <= set(get_args(ErrorForm)) or len(forms) != 1:
                raise ValueError(f"identity.yaml {template}: every operation needs one x-error-form, the same")
            self._forms[template] = forms.pop()

    def of(self, path: str) -> ErrorForm:
        """The form at ``path``; a path no operation declares answers its 413 as a resource would."""
        template = self._template_of(path)
        return "resource" if template is None else self._forms[template]


class IdentityErrors:
    """The identity API's error handler (for Connexion's ``add_error_handler``) and its 413, 408 and 503."""

    def __init__(self, identity: Contract, issuer: Issuer, problem: ProblemHandler) -> None:
        self._issuer = issuer
        self._problem = problem
        self._forms = ErrorForms(identity, issuer.path)

    async def handle(self, request: ConnexionRequest, error: Exception) -> ConnexionResponse:
        if isinstance(error, HTTPException) and (error.status_code in (404, 405) or error.status_code >= 500):
            return self._problem(request, error)
        return as_connexion(self.response(request.scope, error))

    def too_large(self, scope: Scope, limit: int) -> Response:
        """RFC 9110 §15.5.14: 413, the body over ``limit`` bytes."""
        form = self._forms.of(str(scope["path"]))
        return self._answer(form, 413, "invalid_request", describe(limit), title="Request too large")

    def too_slow(self, scope: Scope) -> Response:
        """RFC 9110 §15.5.9: 408, the body did not arrive within the bound (service/web/body_arrival.py)."""
        form = self._forms.of(str(scope["path"]))
        text = "The request body did not arrive in time."
        return self._answer(form, 408, "invalid_request", text, title="Request timeout")

    def overloaded(self, scope: Scope, retry_after: int) -> Response:
        """503 with ``Retry-After``, in the form of the operation at ``scope``'s path: the worker is at its bound of
        accepted work (service/web/admission.py)."""
        form = self._forms.of(str(scope["path"]))
        text = "The service is busy; retry shortly."
        retry = {"Retry-After": str(retry_after)}
        return self._answer(form, 503, "temporarily_unavailable", text, title="Temporarily unavailable", headers=retry)

    def response(self, scope: Scope, error: Exception) -> Response:
        if isinstance(error, OAuthError):
            _log_detail(error.error, error.detail)
            if isinstance(error, InvalidClient) and _has_authorization(scope):
                # RFC 6749 §5.2: the client used the Authorization header: 401, with the challenge of the one
                # scheme this endpoint takes there (RFC 7617); a client that did not use it gets InvalidClient's 400.
                challenge = {"WWW-Authenticate": f'Basic realm="{self._issuer.url}", charset="UTF-8"'}
                return self._answer("oauth", 401, error.error, error.description, headers=challenge)
            return self._answer("oauth", error.status, error.error, error.description)
        if isinstance(error, BearerError):
            _log_detail(error.error, error.detail)
            return self._answer(
                "resource",
                error.status,
                error.error,
                error.description,
                headers={"WWW-Authenticate": self._bearer(error)},
            )
        if isinstance(error, ErrorPage):
            _log_detail(error.title, error.detail)
            return self._answer("page", error.status, "invalid_request", error.description, title=error.title)
        form = self._forms.of(str(scope.get("path", "")))
        if isinstance(error, HTTPException | MultiPartException):
            return self._malformed(form, error)
        return self._unexpected(form, error)

    def _bearer(self, error: BearerError) -> str:
        """RFC 6750 §3: the challenge names the error unless no token was sent."""
        challenge = f'Bearer realm="{self._issuer.url}"'
        if error.token_sent:
            challenge += f', error="{error.error}", error_description="{error.description.rstrip(".")}"'
        if error.scope:
            challenge += f', scope="{error.scope}"'
        return challenge

    def _malformed(self, form: ErrorForm, error: HTTPException | MultiPartException) -> Response:
        """Connexion's 400 and 415, and Starlette's form parser's refusals (a field over 1 MiB, too many fields)."""
        status = error.status_code if isinstance(error, HTTPException) else 400
        if status == 415:
            text = "The body must be application/x-www-form-urlencoded."
        else:
            text = _plain(
                str(getattr(error, "detail", "") or getattr(error, "message", "") or "The request is malformed.")
            )
        return self._answer(form, status, "invalid_request", text, title="Invalid request")

    def _unexpected(self, form: ErrorForm, error: Exception) -> Response:
        """The last resort: log the error with its trace and answer without it (503 when the database is down; an
        ``IntegrityError`` is not that: ``service.web.problems.database_unavailable``)."""
        if database_unavailable(error):
            log.error("database unavailable: %s", type(error).__name__)
            text = "The service cannot reach its database; retry shortly."
            retry = {"Retry-After": str(UNAVAILABLE_RETRY_AFTER)}
            return self._answer(
                form, 503, "temporarily_unavailable", text, title="Temporarily unavailable", headers=retry
            )
        log.exception("unexpected error in the identity API", exc_info=error)
        return self._answer(form, 500, "server_error", "Something went wrong.", title="Something went wrong")

    @staticmethod
    def _answer(
        form: ErrorForm,
        status: int,
        error: str,
        description: str,
        *,
        title: str = "",
        headers: dict[str, str] | None = None,
    ) -> Response:
        """The one place an error response is built, in ``form``: the page says ``title`` and ``description``;
        the JSON forms carry ``error`` and ``description``. ``headers`` add a challenge or a ``Retry-After``."""
        headers = headers or {}
        if form == "page":
            retry_after = int(headers["Retry-After"]) if "Retry-After" in headers else None
            return page_response(message(title, description, status=status, retry_after=retry_after))
        # A 5xx carries Pragma on every JSON endpoint, as the oauth form always does.
        cache = NO_STORE if form == "oauth" or status >= 500 else {"Cache-Control": "no-store"}
        return json({"error": error, "error_description": description}, status, {**cache, **headers})


def _has_authorization(scope: Scope) -> bool:
    """Whether the request carried an ``Authorization`` header (any scheme: the client tried the header)."""
    return any(name == b"authorization" for name, _ in scope.get("headers", ()))


def _log_detail(error: str, detail: str | None) -> None:
    """What the provider knows beyond the public description, for the operator's eyes only."""
    if detail:
        log.info("%s: %s", error, detail)


def _plain(detail: str) -> str:
    """Connexion's validation detail without its jsonschema dump, in the words of RFC 6749 §5.2."""
    detail = detail.split("\n\n", 1)[0]
    missing = re.fullmatch(r"'([^']+)' is a required property", detail)
    if missing:
        return f"The parameter {describable(missing.group(1))} is missing."
    too_long = re.fullmatch(r".* is too long(?: - '([^']+)')?", detail, re.DOTALL)
    if too_long:  # jsonschema's message quotes the whole value: never echo it (it may be a secret, or 1 MB)
        name = too_long.group(1)
        return f"The parameter {describable(name)} is too long." if name else "A parameter is too long."
    return describable(detail)
