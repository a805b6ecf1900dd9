"""The developer console's pages and forms (``openapi/console.yaml``): each hands the request to the console."""

from connexion import context
from starlette.responses import Response

from service.console_api.connection_pages import ConnectionPages
from service.console_api.console_web import CONSOLE, ConsoleWeb
from service.console_api.organization_pages import OrganizationPages
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


# The organization's pages (service/console_api/organization_pages.py)


def _organization() -> OrganizationPages:
    pages = _console().organization
    assert isinstance(pages, OrganizationPages)  # wired by service.app.console_web with the console
    return pages


async def members() -> Response:
    return await _organization().members_page(current())


async def change_role(user_id: str) -> Response:
    return await _organization().change_role(current(), user_id)


async def remove_member_form(user_id: str) -> Response:
    return await _organization().remove_form(current(), user_id)


async def remove_member(user_id: str) -> Response:
    return await _organization().remove(current(), user_id)


async def leave_form() -> Response:
    return await _organization().leave_form(current())


async def leave() -> Response:
    return await _organization().leave(current())


async def invite() -> Response:
    return await _organization().invite(current())


async def resend_invitation(invitation_id: str) -> Response:
    return await _organization().resend(current(), invitation_id)


async def revoke_invitation(invitation_id: str) -> Response:
    return await _organization().revoke_invitation(current(), invitation_id)


async def invitation() -> Response:
    return await _organization().invitation_page(current())


async def accept_invitation() -> Response:
    return await _organization().accept(current())


async def apps() -> Response:
    return await _organization().apps_page(current())


async def create_app() -> Response:
    return await _organization().create_app(current())


async def app_secret() -> Response:
    return await _organization().secret_page(current())


async def app(client_id: str) -> Response:
    return await _organization().app_page(current(), client_id)


async def update_app(client_id: str) -> Response:
    return await _organization().update_app(current(), client_id)


async def rotate_secret(client_id: str) -> Response:
    return await _organization().rotate_secret(current(), client_id)


async def set_management_scopes(client_id: str) -> Response:
    return await _organization().set_management_scopes(current(), client_id)


async def delete_app(client_id: str) -> Response:
    return await _organization().delete_app(current(), client_id)


async def audit() -> Response:
    return await _organization().audit_page(current())


# The organization's identity provider connection (service/console_api/connection_pages.py)


def _connection() -> ConnectionPages:
    pages = _console().connection
    assert isinstance(pages, ConnectionPages)  # wired by service.app.console_web with the console
    return pages


async def connection() -> Response:
    return await _connection().page(current())


async def save_connection() -> Response:
    return await _connection().save(current())


async def delete_connection() -> Response:
    return await _connection().delete(current())
