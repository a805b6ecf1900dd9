"""The developer console's pages and forms (``openapi/console.yaml``): each hands the request to the console."""

from connexion import context
from starlette.responses import Response

from service.console_api.console_web import CONSOLE, ConsoleWeb
from service.identity_api.handler_support import current


def _console() -> ConsoleWeb:
    return CONSOLE.get(context.scope)


async def home() -> Response:
    return await _console().home_page(current())


async def sign_in() -> Response:
    return await _console().sign_in(current())


async def callback() -> Response:
    return await _console().callback(current())


async def create_key() -> Response:
    return await _console().create_key(current())


async def new_key() -> Response:
    return await _console().new_key_page(current())


async def revoke_form(key_id: str) -> Response:
    return await _console().revoke_form(current(), key_id)


async def revoke(key_id: str) -> Response:
    return await _console().revoke(current(), key_id)


async def account() -> Response:
    return await _console().account_page(current())


async def change_password() -> Response:
    return await _console().change_password(current())


async def send_verification() -> Response:
    return await _console().send_verification(current())


async def sign_out() -> Response:
    return await _console().sign_out(current())
