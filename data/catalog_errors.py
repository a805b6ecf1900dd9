"""Errors the catalog raises; the web layer turns them into problem details."""


class CatalogError(Exception):
    """Base class of the catalog's errors; the message is safe to show a client."""


class NotFound(CatalogError):
    """No region or dish has that slug, or no dish matches a random pick's filters."""
