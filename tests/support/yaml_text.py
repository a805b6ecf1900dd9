"""YAML read as the service reads it (``data/catalog.py``, ``service/web/contracts.py``): PyYAML's safe loader in
LibYAML (``yaml.CSafeLoader``; PyYAML's wheels have it), not ``yaml.safe_load``'s pure-Python one, which is ten
times slower: it read the contracts again in each worker's collection, and ``tests/unit/test_dataset.py``, which
reads the dataset's 16 files for each of its tests, spent two thirds of its CPU in it."""

from __future__ import annotations

from typing import Any

import yaml

_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str | bytes) -> Any:
    """``yaml.safe_load(text)``, parsed by LibYAML."""
    return yaml.load(text, Loader=_SafeLoader)  # noqa: S506 (a safe loader)
