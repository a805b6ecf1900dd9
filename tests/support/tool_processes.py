"""The environment of a tool the tests run that is not the service: Schemathesis, pip, an SDK generator, mypy.

``scripts/coverage`` measures every Python process the suite starts (``[tool.coverage.run] patch = ["subprocess"]``:
coverage.py hands its configuration to the children in ``COVERAGE_PROCESS_CONFIG``). A tool's process runs none of
the service's code, yet coverage.py would trace each of its calls: a Schemathesis run under coverage took 2.0 times
the CPU of a plain one, most of it in Schemathesis itself (docs/testing.md, "Coverage"). Without the variables the
tool runs as it does outside coverage; the service's processes, the command line and the xdist workers keep them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# coverage.py's: the configuration a measured process hands its children (7.10+), and the older start-up file.
COVERAGE_VARIABLES = frozenset({"COVERAGE_PROCESS_CONFIG", "COVERAGE_PROCESS_START"})


def tool_env(base: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """``base`` (this process's environment by default) with ``extra``, less coverage.py's variables."""
    env = {**(os.environ if base is None else base), **extra}
    return {name: value for name, value in env.items() if name not in COVERAGE_VARIABLES}
