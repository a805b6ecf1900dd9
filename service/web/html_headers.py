"""The headers of every server-rendered HTML page (the sign-in pages and the developer console)."""

from __future__ import annotations


def page_headers(content_security_policy: str) -> dict[str, str]:
    """Never cached or framed, no referrer, no sniffing; scripts and styles as ``content_security_policy`` allows."""
    return {
        "Cache-Control": "no-store",
        "Content-Security-Policy": content_security_policy,
        "X-Frame-Options": "DENY",
        "Referrer-Policy": "no-referrer",
        "X-Content-Type-Options": "nosniff",
    }
