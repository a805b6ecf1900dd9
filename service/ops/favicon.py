"""The site's icon, ``/favicon.ico`` (openapi/operations.yaml): a plate, 16 and 32 pixels (PNG images in an ICO).

Browsers ask for it at the root of the origin of every page they show (the sign-in pages, the console, Swagger
UI); without it each page logs a 404 in the browser's console. It is read from the package when first asked for.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

ICON_CACHE_CONTROL = "public, max-age=86400"  # a day: the icon changes only with a release


@cache
def icon() -> bytes:
    return (Path(__file__).parent / "favicon.ico").read_bytes()
