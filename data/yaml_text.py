"""YAML read with PyYAML's safe loader in LibYAML (``yaml.CSafeLoader``; PyYAML's wheels have it), about ten times
faster than ``yaml.safe_load``'s pure-Python one: the dataset (``data/catalog.py``) and the tests read YAML through
it. ``service/web/contracts.py`` makes the same choice for its as-written loader without importing this module:
any ``data.…`` import runs ``data/__init__.py``, which loads the catalog (36 ms, pycountry's among them) where the
contracts alone are needed."""

from __future__ import annotations

from typing import IO, Any

import yaml

try:
    from yaml import CSafeLoader as SafeLoader
except ImportError:  # pragma: no cover - a PyYAML built without LibYAML
    from yaml import SafeLoader  # type: ignore[assignment]

__all__ = ["SafeLoader", "safe_load"]


def safe_load(text: str | bytes | IO[str]) -> Any:
    """``yaml.safe_load(text)``, parsed by LibYAML where PyYAML has it."""
    return yaml.load(text, Loader=SafeLoader)  # noqa: S506 (a safe loader)
