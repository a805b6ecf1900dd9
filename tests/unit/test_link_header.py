"""The RFC 8288 ``Link`` header of a cursor page (``service/web/link_header.py``)."""

from __future__ import annotations

from service.web.link_header import next_link


def test_next_link_repeats_the_given_parameters_and_sets_the_cursor_last() -> None:
    """RFC 8288 §3: ``Link: <URI-Reference>; rel="next"``."""
    link = next_link("https://menus.example.com/v1/menus/dishes", [("course", "main"), ("limit", 20)], "AbC-_9")
    assert link == '<https://menus.example.com/v1/menus/dishes?course=main&limit=20&cursor=AbC-_9>; rel="next"'


def test_next_link_leaves_out_absent_parameters_and_the_old_cursor() -> None:
    link = next_link("https://x.example/d", [("region", None), ("cursor", "old"), ("limit", 5)], "new")
    assert link == '<https://x.example/d?limit=5&cursor=new>; rel="next"'


def test_next_link_percent_encodes_what_a_uri_reference_cannot_hold() -> None:
    """RFC 3986 §2.1: spaces, accents, ``<``, ``>``, ``&`` and ``;`` in a value are percent-encoded."""
    link = next_link("https://x.example/d", [("q", "crème <brûlée>; a&b")], "c")
    assert link == '<https://x.example/d?q=cr%C3%A8me%20%3Cbr%C3%BBl%C3%A9e%3E%3B%20a%26b&cursor=c>; rel="next"'
