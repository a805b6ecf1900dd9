"""No product module changes a library or Python itself for the whole process (CONTRIBUTING.md, "Dependencies"):
no import finder on ``sys.meta_path``, no ``ctypes``, no event loop of our own, no thread-local mode, and no
assignment to an attribute of a module or class the product imported from a library (``setattr``, ``del`` and
``X.name = …`` alike). What a library offers by option or by subclass is the way in; the hooks into Connexion stay
in service/web/connexion_adapter.py, each a subclass.

The scan reads the syntax tree of every module of the product's packages."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
PRODUCT = ("handlers", "service", "identity", "data", "cursors")

# Documented switches of the standard library, set as their documentation says to.
DOCUMENTED = {
    # the logging HOWTO, "Optimization": records without the thread and process fields no line of ours writes
    ("service/ops/logs.py", "logging.logThreads"),
    ("service/ops/logs.py", "logging.logProcesses"),
    ("service/ops/logs.py", "logging.logMultiprocessing"),
}
LOOPS = ("uvloop.Loop", "asyncio.BaseEventLoop", "asyncio.AbstractEventLoop", "asyncio.SelectorEventLoop")


def modules() -> Iterator[Path]:
    for package in PRODUCT:
        yield from sorted((ROOT / package).rglob("*.py"))


def imported(tree: ast.Module) -> dict[str, str]:
    """Each name a module binds by import, to the dotted name it stands for."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def dotted(node: ast.expr, names: dict[str, str]) -> str | None:
    """``a.b.c`` as the dotted name it stands for, when ``a`` was imported; else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in names:
        return None
    return ".".join([names[node.id], *reversed(parts)])


def is_library(name: str) -> bool:
    return name.split(".")[0] not in PRODUCT


def findings(path: Path) -> Iterator[tuple[str, str]]:
    """(what, where) for each process-wide change in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = imported(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules_named = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(m == "ctypes" or m.startswith("ctypes.") for m in modules_named):
                yield "ctypes", f"line {node.lineno}"
        elif isinstance(node, ast.Attribute) and dotted(node, names) == "sys.meta_path":
            yield "sys.meta_path", f"line {node.lineno}"
        elif isinstance(node, ast.ClassDef):
            for base in node.bases:
                name = dotted(base, names)
                if name == "threading.local":
                    yield "threading.local", f"class {node.name}"
                elif name in LOOPS:
                    yield name, f"class {node.name}"
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute):
                    name = dotted(target, names)
                    if name is not None and is_library(name):
                        yield name, f"line {node.lineno}"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr"):
            if node.args:
                name = dotted(node.args[0], names)
                if name is not None and is_library(name):
                    yield f"{name} ({node.func.id})", f"line {node.lineno}"


def test_no_product_module_changes_a_library_or_python_for_the_whole_process() -> None:
    found = {(str(path.relative_to(ROOT)), what, where) for path in modules() for what, where in findings(path)}
    allowed = DOCUMENTED
    unexpected = sorted(f"{path} ({where}): {what}" for path, what, where in found if (path, what) not in allowed)
    assert not unexpected, "\n".join(unexpected)
    assert {(path, what) for path, what, _ in found} >= DOCUMENTED, "a documented switch is gone: drop it above"


@pytest.mark.parametrize(
    "source",
    [
        "import sys\nsys.meta_path.insert(0, object())\n",
        "import ctypes\n",
        "from ctypes import CDLL\n",
        "import uvloop\nclass Loop(uvloop.Loop):\n    pass\n",
        "import threading\nclass Mode(threading.local):\n    pass\n",
        "from connexion.spec import OpenAPISpecification\nOpenAPISpecification._validate_spec = None\n",
        "import connexion.spec\nconnexion.spec.OpenAPISpecification._validate_spec = None\n",
        "from starlette import routing\nsetattr(routing, 'Router', None)\n",
        "import json\ndel json.dumps\n",
    ],
    ids=["meta-path", "ctypes", "ctypes-from", "loop", "thread-local", "class", "module", "setattr", "delete"],
)
def test_the_scan_finds_each_way_of_changing_a_library(source: str, tmp_path: Path) -> None:
    module = tmp_path / "example.py"
    module.write_text(source, encoding="utf-8")
    assert list(findings(module)), source


@pytest.mark.parametrize(
    "source",
    [
        "class Mine:\n    pass\nMine.x = 1\n",
        "from connexion.spec import OpenAPISpecification\nclass Checked(OpenAPISpecification):\n    pass\n",
        "def f(scope):\n    scope.x = 1\n",
        "import logging\nlogging.getLogger('x').setLevel(10)\n",
    ],
    ids=["own-class", "subclass", "object-made-here", "documented-call"],
)
def test_the_scan_leaves_the_product_s_own_objects_and_subclasses(source: str, tmp_path: Path) -> None:
    module = tmp_path / "example.py"
    module.write_text(source, encoding="utf-8")
    assert not list(findings(module)), source
