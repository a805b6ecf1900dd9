"""The curated dataset of regional dishes and the read-only catalog over it."""

from cursors import CursorCodec, InvalidCursor
from data.catalog import Catalog, DatasetError, DishQuery, Page, load_catalog
from data.catalog_errors import CatalogError, NotFound

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
