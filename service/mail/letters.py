"""The outbox's mails as messages: a plain-text and an HTML body from Jinja templates, in the sign-in pages' voice.

Each kind of mail has ``templates/<kind>.txt`` (its first line is the subject) and ``templates/<kind>.html``.
"""

from __future__ import annotations

from email.message import EmailMessage
from email.utils import make_msgid
from functools import cache
from typing import TYPE_CHECKING

from identity.mail.outbox import Claimed, Undeliverable

if TYPE_CHECKING:
    from jinja2 import Environment


@cache
def _environments() -> tuple[Environment, Environment]:
    """The plain-text and the HTML templates' environments, made (and Jinja imported) for the first mail composed:
    a node that sends no mail never loads them (start-up time and memory)."""
    from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

    plain = Environment(
        loader=PackageLoader("service.mail", "templates"),
        autoescape=False,
        undefined=StrictUndefined,
        keep_trailing_newline=True,
    )
    html = Environment(
        loader=PackageLoader("service.mail", "templates"),
        autoescape=select_autoescape(["html"]),
        undefined=StrictUndefined,
    )
    return plain, html


class Letters:
    def __init__(self, sender: str, service_name: str = "Regional Menus") -> None:
        self.sender = sender  # MENUS_MAIL_FROM
        self.service_name = service_name

    def compose(self, claimed: Claimed) -> EmailMessage:
        """The message of a claimed mail; its Message-ID is made of the outbox id, so a resend is recognisable."""
        mail = claimed.mail
        values = {"service": self.service_name, "recipient": mail.recipient, **mail.params}
        try:
            plain_templates, html_templates = _environments()
            subject, _, text = plain_templates.get_template(f"{mail.kind}.txt").render(values).partition("\n")
            html = html_templates.get_template(f"{mail.kind}.html").render(values)
        except Exception as error:  # an unknown kind or a missing value: no retry will change that
            raise Undeliverable(f"cannot compose {mail.kind!r} ({type(error).__name__})") from None
        from email.headerregistry import Address  # with its parser, for the first letter (as Jinja is)

        message = EmailMessage()
        message["Subject"] = subject.strip()
        message["From"] = self.sender
        message["To"] = Address(addr_spec=mail.recipient)
        domain = self.sender.rpartition("@")[2].rstrip(">") or None
        message["Message-ID"] = make_msgid(idstring=claimed.id.replace("_", "-"), domain=domain)
        message["Auto-Submitted"] = "auto-generated"  # RFC 3834 §5: no auto-replies to us
        message.set_content(text.lstrip("\n"))
        message.add_alternative(html, subtype="html")
        return message
