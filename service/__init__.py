"""The Regional Menus service: app factory, settings, storage and command line."""

__version__ = "0.1.0"
