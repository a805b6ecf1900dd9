"""YAML read with PyYAML's safe loader in LibYAML (``yaml.CSafeLoader``; PyYAML's wheels have it), about ten times
faster than ``yaml.safe_load``'s pure-Python one: the dataset (``data/catalog.py``), the contracts
(``service/web/contracts.py``, a loader of its own on this one) and the tests read YAML through it."""

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
