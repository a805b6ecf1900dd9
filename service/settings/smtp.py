"""``MENUS_SMTP_URL``: ``smtp://[user:password@]host[:port]`` (port 587 by default) or ``smtps://…`` (port 465 by
default, implicit TLS, RFC 8314 §3.3); user and password are percent-decoded (RFC 3986 §2.1). The transports of
service/mail/transports.py connect to what it names."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit


class SmtpUrlError(ValueError):
    """``MENUS_SMTP_URL`` cannot be used; the message never repeats the password."""


@dataclass(frozen=True, slots=True)
class SmtpServer:
    host: str
    port: int
    implicit_tls: bool  # smtps://
    username: str | None
    password: str | None

    @classmethod
    def parse(cls, url: str) -> SmtpServer:
        """``smtp://user:pass@host:port`` or ``smtps://…``."""
        try:
            parts = urlsplit(url.strip())
            port = parts.port
        except ValueError:
            raise SmtpUrlError("MENUS_SMTP_URL must be smtp://[user:password@]host[:port] or smtps://…") from None
        if parts.scheme not in ("smtp", "smtps") or not parts.hostname or parts.path not in ("", "/") or parts.query:
            raise SmtpUrlError("MENUS_SMTP_URL must be smtp://[user:password@]host[:port] or smtps://…")
        implicit = parts.scheme == "smtps"
        return cls(
            host=parts.hostname,
            port=port or (465 if implicit else 587),
            implicit_tls=implicit,
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password is not None else None,
        )

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    def describe(self) -> str:
        """The server without its credentials, for logs and messages."""
        return f"{'smtps' if self.implicit_tls else 'smtp'}://{self.host}:{self.port}"
