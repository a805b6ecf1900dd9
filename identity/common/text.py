"""The one rule for text that people send and others read: no invisible or control characters.

Every value that reaches the identity domain from a form, a query, a cookie or the command line is refused
when it holds a control character (``has_control``): a NUL byte would otherwise reach PostgreSQL, which
cannot store it in a text column, and CR, LF or ESC would reach logs and headers. Names that others see
(organizations, users, API keys, clients) also refuse the characters that change how text is displayed
without being seen (``display_name``): zero-width characters and bidirectional overrides (``a\\u202eb``
shows as ``ab`` reversed), which could make one name pass for another in the console.

These are the classes PRECIS refuses in its FreeformClass (RFC 8264 §9.11 Controls, §9.13 Default Ignorable
Code Points, the base of RFC 8266's Nickname profile), read here from Unicode's general categories
(``unicodedata``): ``Cc`` (controls), ``Cf`` (format characters: zero-width joiners and spaces, bidirectional
marks, embeddings, overrides and isolates, the BOM), ``Cs`` (lone surrogates) and ``Zl``/``Zp`` (line and
paragraph separators).
"""

from __future__ import annotations

import re
import unicodedata

from identity.common.errors import InvalidInput

# C0, DEL and C1 controls: what no form field, query parameter or cookie of ours ever holds.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def has_control(value: str) -> bool:
    """True when ``value`` holds a C0 or C1 control character or DEL (NUL, CR, LF, TAB, ESC…)."""
    return _CONTROL.search(value) is not None


def is_displayable(value: str) -> bool:
    """True when ``value`` holds no control, format (zero-width, bidirectional), surrogate or separator
    character."""
    return not any(unicodedata.category(character) in _INVISIBLE for character in value)


def display_name(value: str, what: str, *, longest: int = 200) -> str:
    """``value`` without surrounding white space, checked as a name others will read: 1 to ``longest``
    characters, every one visible or a plain space. ``what`` names it in the refusal (``the key's name``)."""
    value = value.strip()
    if not 1 <= len(value) <= longest:
        raise InvalidInput(f"{what} must be 1 to {longest} characters")
    if not is_displayable(value):
        raise InvalidInput(f"{what} must not contain control, zero-width or bidirectional formatting characters")
    return value
