"""Where the OpenAPI documents live, whether run from a checkout or installed."""

from importlib import resources
from pathlib import Path


def spec_path(name: str) -> Path:
    return Path(str(resources.files("openapi") / name))
