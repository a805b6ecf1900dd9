"""The curated dataset of regional dishes and the read-only catalog over it."""

from data.catalog import Catalog, DatasetError, DishQuery, Page, load_catalog
from data.catalog_errors import CatalogError, InvalidCursor, NotFound
from data.cursors import CursorCodec

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
