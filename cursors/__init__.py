"""Signed keyset cursors: the menus catalog's pages and the identity member directory's both use them.

It stands below both ``data/`` and ``identity/`` and imports neither, so the two stay independent.
"""

from cursors.codec import CursorCodec, InvalidCursor, Position

__all__ = ["CursorCodec", "InvalidCursor", "Position"]
