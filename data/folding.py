"""Case- and accent-insensitive text keys for search and sorting.

``fold("Crème brûlée") == fold("creme BRULEE") == "creme brulee"``. Accents are
removed from Latin, Greek and Cyrillic letters only: in scripts such as
Devanagari or Japanese the combining marks are part of the letter, so they stay.
"""

import unicodedata

# Letters that carry their "accent" in the letter itself, so NFKD leaves them alone.
_LETTERS = str.maketrans({"ı": "i", "ø": "o", "ł": "l", "đ": "d", "ð": "d", "æ": "ae", "œ": "oe"})  # after casefold
_LAST_ACCENTED_BLOCK = 0x052F  # end of Cyrillic Supplement: Latin, Greek, Cyrillic come before


def fold(text: str) -> str:
    """Return ``text`` lower-cased (Unicode case folding) with Latin/Greek/Cyrillic accents removed."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold().translate(_LETTERS))
    kept: list[str] = []
    base = ""
    for char in decomposed:
        if unicodedata.combining(char):
            if base and ord(base) <= _LAST_ACCENTED_BLOCK:
                continue
        else:
            base = char
        kept.append(char)
    return unicodedata.normalize("NFC", "".join(kept)).casefold()


def terms(query: str) -> tuple[str, ...]:
    """Split a search query into distinct folded terms, in order."""
    return tuple(dict.fromkeys(fold(query).split()))
