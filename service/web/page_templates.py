"""The Jinja templates of the server-rendered HTML pages (the sign-in pages and the developer console)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jinja2 import Environment


def templates_of(package: str) -> Environment:
    """The Jinja environment of the templates in ``package``'s ``templates`` folder, every value escaped. Jinja is
    imported here, on the first page rendered, so that start-up does not load it."""
    from jinja2 import Environment, PackageLoader, select_autoescape

    return Environment(
        loader=PackageLoader(package, "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
