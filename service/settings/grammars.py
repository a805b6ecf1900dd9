"""How the text of a ``MENUS_*`` variable becomes a setting's value: one grammar per kind of value.

Each grammar reads the text of a variable that is set (an unset variable leaves the setting at its default),
names the variable in the ``ConfigurationError`` of a value it cannot use, never repeats a secret, and says in a
few words what it accepts (the "Accepted" column of docs/operations.md, generated from the table).

The grammars of ``MENUS_SMTP_URL`` and ``MENUS_TRUSTED_PROXIES`` are kept here (``service/settings/smtp.py``,
``parse_networks``) so that settings check them at start without importing the code that uses them
(service/web/forwarded.py, service/mail/transports.py): the layers below import nothing above.
"""

from __future__ import annotations

import base64
import ipaddress
import re
from dataclasses import dataclass
from email.utils import parseaddr
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit

from service.settings.smtp import SmtpServer, SmtpUrlError

MEMORY_STORAGE = "memory://"  # the rate-limit windows of each process (MENUS_RATE_LIMIT_STORAGE's default)
_CONTROL = re.compile(r"[\x00-\x20\x7f]")  # no control characters or spaces in a URL
_RESERVED_PATHS = ("/v1", "/healthz", "/readyz", "/metrics")


class ConfigurationError(ValueError):
    """A ``MENUS_*`` variable that cannot be used; the message names it and never repeats a secret."""


class Grammar(Protocol):
    """The values one kind of variable takes."""

    @property
    def accepts(self) -> str:
        """What it takes, in a few words (docs/operations.md)."""
        ...

    def read(self, variable: str, text: str, default: object) -> object:
        """The value of ``variable`` set to ``text``; ``default`` where an empty text means the default."""
        ...


@dataclass(frozen=True, slots=True)
class WholeNumber:
    """Decimal digits, at least ``minimum``: ``MENUS_RATE_LIMIT=600``."""

    minimum: int

    @property
    def accepts(self) -> str:
        return f"a whole number, at least {self.minimum}"

    def read(self, variable: str, text: str, default: object) -> int:
        if not text.isascii() or not text.isdigit() or int(text) < self.minimum:
            raise ConfigurationError(f"{variable} must be a whole number of at least {self.minimum}, got {text!r}")
        return int(text)


class Switch:
    """``on`` or ``off``; ``true`` and ``false`` are read alike."""

    accepts = "`on` or `off` (`true`, `false`)"

    def read(self, variable: str, text: str, default: object) -> bool:
        value = text.strip().lower()
        if value not in ("on", "off", "true", "false"):
            raise ConfigurationError(f"{variable} must be on or off (true or false), got {value!r}")
        return value in ("on", "true")


class HttpUrl:
    """An http(s) URL with a host, maybe a path, no query or fragment; without its trailing slash. Empty: the
    default."""

    accepts = "an http or https URL, maybe with a path"

    def read(self, variable: str, text: str, default: object) -> str:
        value = (text or str(default)).rstrip("/")
        try:
            parts = urlsplit(value)
            valid = (
                parts.scheme in ("http", "https") and bool(parts.hostname) and not parts.query and not parts.fragment
            )
            parts.port  # noqa: B018  # raises ValueError for a port that is not a number from 0 to 65535
        except ValueError:
            valid = False
        if not valid or _CONTROL.search(value):
            raise ConfigurationError(
                f"{variable} must be an http or https URL without query or fragment, got {value!r}"
            )
        return value


class DatabaseUrl:
    """A SQLAlchemy URL, checked when the engine is made; empty: the default."""

    accepts = "a SQLAlchemy URL"

    def read(self, variable: str, text: str, default: object) -> str:
        return text or str(default)


class StorageUrl:
    """``memory://`` (also for an empty value) or a Redis URL."""

    accepts = "`memory://` or a `redis://`, `rediss://` or `redis+unix://` URL"

    def read(self, variable: str, text: str, default: object) -> str:
        return check_storage_url(text)


def check_storage_url(url: str) -> str:
    """``memory://`` (also for an empty value) or a Redis URL; anything else is a configuration error."""
    url = url.strip() or MEMORY_STORAGE
    if url != MEMORY_STORAGE and not url.startswith(("redis://", "rediss://", "redis+unix://")):
        raise ConfigurationError(
            "MENUS_RATE_LIMIT_STORAGE must be memory:// or a redis://, rediss:// or redis+unix:// URL"
        )
    return url


class Origins:
    """``*``, or origins separated by commas or spaces (``https://a.example``); empty: none."""

    accepts = "`*` or origins (`scheme://host[:port]`), commas or spaces"

    def read(self, variable: str, text: str, default: object) -> tuple[str, ...]:
        origins = tuple(origin.rstrip("/") for origin in text.replace(",", " ").split())
        for origin in origins:
            scheme, _, rest = origin.partition("://")
            if origin != "*" and (scheme not in ("http", "https") or not rest or "/" in rest):
                raise ConfigurationError(f"{variable}: {origin!r} is not an origin (scheme://host[:port]) or *")
        return origins


class Networks:
    """Addresses and CIDR blocks separated by commas or spaces; empty: none."""

    accepts = "IP addresses or CIDR blocks, commas or spaces"

    def read(self, variable: str, text: str, default: object) -> tuple[str, ...]:
        try:
            return parse_networks(text, variable)
        except ValueError as error:
            raise ConfigurationError(str(error)) from None


def parse_networks(value: str, name: str = "MENUS_TRUSTED_PROXIES") -> tuple[str, ...]:
    """Addresses and CIDR blocks separated by commas or spaces (``10.0.0.2, 10.1.0.0/16, fd00::/8``); empty: none.

    A value that is not one is a configuration error naming ``name``."""
    networks = []
    for item in value.replace(",", " ").split():
        try:
            networks.append(str(ipaddress.ip_network(item, strict=False)))
        except ValueError:
            raise ValueError(f"{name}: {item!r} is not an IP address or CIDR block (10.0.0.2, 10.0.0.0/8)") from None
    return tuple(networks)


class UrlPath:
    """A path of its own below the host: ``/console``, ``/dev/console``; not the root, no trailing slash. Empty: the
    default."""

    accepts = "a path such as `/console`"

    def read(self, variable: str, text: str, default: object) -> str:
        value = text or str(default)
        if not re.fullmatch(r"(/[A-Za-z0-9._~-]+)+", value) or value in _RESERVED_PATHS:
            raise ConfigurationError(
                f"{variable} must be a path such as /console (not the root, no trailing slash), got {value!r}"
            )
        return value


class SecretKeys:
    """Comma-separated Fernet keys (32 bytes, URL-safe base64); the first seals."""

    accepts = "Fernet keys, commas"

    def read(self, variable: str, text: str, default: object) -> tuple[str, ...]:
        keys = tuple(key.strip() for key in text.split(",") if key.strip())
        for position, key in enumerate(keys, 1):
            try:
                valid = len(base64.urlsafe_b64decode(key.encode("ascii"))) == 32
            except (ValueError, UnicodeEncodeError):
                valid = False
            if not valid:  # never the key itself in the message
                raise ConfigurationError(
                    f"{variable}: key {position} is not 32 bytes of URL-safe base64 "
                    "(make one with 'regional-menus secrets new-key')"
                )
        return keys


class SmtpUrl:
    """Empty, or a URL ``SmtpServer.parse`` takes."""

    accepts = "`smtp://…` or `smtps://…`"

    def read(self, variable: str, text: str, default: object) -> str:
        value = text.strip()
        if value:
            if _CONTROL.search(value):
                raise ConfigurationError(f"{variable} must be smtp://[user:password@]host[:port] or smtps://…")
            try:
                SmtpServer.parse(value)
            except SmtpUrlError as error:
                raise ConfigurationError(str(error)) from None
        return value


class Folder:
    """Empty, or a folder (made absolute)."""

    accepts = "a folder"

    def read(self, variable: str, text: str, default: object) -> str:
        value = text.strip()
        if not value:
            return ""
        if _CONTROL.search(value.replace(" ", "")):
            raise ConfigurationError(f"{variable} must be a folder's path")
        return str(Path(value).absolute())


class MailAddress:
    """One address, bare (``menus@example.com``) or named (``Menus <menus@example.com>``); empty: the default."""

    accepts = "one email address, bare or named"

    def read(self, variable: str, text: str, default: object) -> str:
        value = text.strip() or str(default)
        name, address = parseaddr(value)
        if (
            not address
            or "@" not in address
            or "," in value
            or re.search(r"[\x00-\x1f\x7f]", value)
            or (not name and address != value)
        ):
            raise ConfigurationError(f"{variable} must be one email address, got {value!r}")
        return value


SWITCH = Switch()
HTTP_URL = HttpUrl()
DATABASE_URL = DatabaseUrl()
STORAGE_URL = StorageUrl()
ORIGINS = Origins()
NETWORKS = Networks()
URL_PATH = UrlPath()
SECRET_KEYS = SecretKeys()
SMTP_URL = SmtpUrl()
FOLDER = Folder()
MAIL_ADDRESS = MailAddress()
