"""The curated dataset of regional dishes and the read-only catalog over it."""

from data.catalog import Catalog, DatasetError, DishQuery, Page, load_catalog
from data.cursors import CursorCodec
from data.errors import CatalogError, InvalidCursor, NotFound

__all__ = [
    "Catalog",
    "CatalogError",
    "CursorCodec",
    "DatasetError",
    "DishQuery",
    "InvalidCursor",
    "NotFound",
    "Page",
    "load_catalog",
]
