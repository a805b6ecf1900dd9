"""YAML read as the service reads it (``data/catalog.py``, ``service/web/contracts.py``): PyYAML's safe loader in
LibYAML (``yaml.CSafeLoader``; PyYAML's wheels have it), not ``yaml.safe_load``'s pure-Python one, which is ten
times slower: the contracts read at each worker's collection and the dataset's 16 files read for each of its tests
cost the suite some 20 s of CPU."""

from __future__ import annotations

from typing import Any

import yaml

_SafeLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def safe_load(text: str | bytes) -> Any:
    """``yaml.safe_load(text)``, parsed by LibYAML."""
    return yaml.load(text, Loader=_SafeLoader)  # noqa: S506 (a safe loader)
