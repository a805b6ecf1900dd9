"""No test replaces an attribute of the product's modules or classes (CONTRIBUTING.md, "Writing tests"), nor of a
library's: a test hands its part in (a constructor argument, a setting, ``create_app(clock=…,
password_hashing=…)``) or makes the real thing fail (tests/support/database_faults.py). A patch of
``identity.accounts.passwords._hasher`` or of a class's method keeps "passing" once the module moves behind a re-export,
while testing nothing.

The scan reads every module under tests/ (its syntax tree, not its text) for ``monkeypatch.setattr``/``delattr``
and ``unittest.mock.patch`` (``patch.object``, ``patch.dict``...) on anything, and for the built-in
``setattr``/``delattr`` and plain assignments (``module.name = …``) whose target is a product module or class: a
dotted string naming one of the product's packages, or a name the module imported from them. (An attribute of an
object a test made, such as a listener's ``clock``, is that object's to set.)"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent
PRODUCT = ("handlers", "service", "identity", "data", "cursors")

# Patches owned by work under way elsewhere, each to be replaced by a seam of its own and then taken off this list.
# Empty: the rate limit's Redis tests inject their round trip, clock and script (tests/api/test_ratelimit.py).
TEMPORARY_EXCEPTIONS: set[tuple[str, str]] = set()


@dataclass(frozen=True)
class Patch:
    path: str  # relative to tests/
    line: int
    target: str  # the product name the patch reaches through

    def __str__(self) -> str:
        return f"tests/{self.path}:{self.line} replaces an attribute of {self.target}"


def product_names(tree: ast.Module) -> set[str]:
    """The names a module binds to product modules, classes and functions by its imports."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PRODUCT:
                    names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PRODUCT:
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def root(node: ast.expr) -> str | None:
    """The name an attribute chain starts from (``a`` of ``a.b.c``), if any."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def call_name(node: ast.Call) -> str:
    """``monkeypatch.setattr``, ``mock.patch.object``, ``setattr``...: the called chain as written."""
    parts: list[str] = []
    func: ast.expr = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts))


def named(target: ast.expr) -> str:
    """What a patch's first argument names, as written: a dotted string, or the name it starts from."""
    if isinstance(target, ast.Constant) and isinstance(target.value, str):
        return target.value
    return root(target) or ast.unparse(target)


def reached(target: ast.expr, imported: set[str]) -> str | None:
    """The product name ``target`` (a patch's first argument) reaches, or None."""
    if isinstance(target, ast.Constant) and isinstance(target.value, str):
        dotted = target.value
        return dotted if dotted.split(".")[0] in PRODUCT else None
    name = root(target)
    return name if name in imported else None


PATCHERS = ("setattr", "delattr", "patch", "patch.object", "patch.dict", "patch.multiple")


def patches(path: Path, source: str) -> Iterator[Patch]:
    tree = ast.parse(source, filename=str(path))
    imported = product_names(tree)
    relative = path.relative_to(TESTS).as_posix() if path.is_absolute() else str(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            called = call_name(node)
            if called in ("setattr", "delattr"):  # the built-ins: on a product module or class
                if (name := reached(node.args[0], imported)) is not None:
                    yield Patch(relative, node.lineno, name)
            elif any(called.endswith("." + p) or called == p for p in PATCHERS):
                # monkeypatch's or mock's: on anything at all, the product, a library (sys.stderr, an Engine's
                # method) or the standard library; a real failure or an injected part does it instead
                yield Patch(relative, node.lineno, named(node.args[0]))
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and (name := root(target)) in imported:
                    yield Patch(relative, node.lineno, name)


def suite_modules() -> list[Path]:
    return sorted(path for path in TESTS.rglob("*.py") if "node_modules" not in path.parts)


def test_no_test_replaces_an_attribute_of_a_product_module_or_class() -> None:
    modules = suite_modules()
    assert len(modules) > 100  # the scan saw the suite
    found = [patch for path in modules for patch in patches(path, path.read_text(encoding="utf-8"))]
    excepted = [patch for patch in found if (patch.path, patch.target) in TEMPORARY_EXCEPTIONS]
    unexpected = [patch for patch in found if patch not in excepted]
    assert not unexpected, "\n".join(map(str, unexpected))
    assert {(patch.path, patch.target) for patch in excepted} <= TEMPORARY_EXCEPTIONS


@pytest.mark.parametrize(
    "source",
    [
        "from identity.accounts import passwords\n"
        "def test(monkeypatch):\n    monkeypatch.setattr(passwords, '_hasher', 1)\n",
        "def test(monkeypatch):\n    monkeypatch.setattr('identity.keys.signing_keys.monotonic', lambda: 0)\n",
        "from unittest import mock\nfrom identity.accounts.users import UserStore\n"
        "def test():\n    with mock.patch.object(UserStore, 'create'):\n        pass\n",
        "from unittest.mock import patch\ndef test():\n    with patch('service.app.create_app'):\n        pass\n",
        "import service.server.bounded_http as bounded_http\ndef test():\n    bounded_http._INTERIM = b''\n",
        "from data.catalog import Catalog\ndef test():\n    setattr(Catalog, 'regions', None)\n",
        "import identity.mail.email_links\n"
        "def test(monkeypatch):\n    monkeypatch.delattr(identity.mail.email_links, 'X')\n",
        "import sys\ndef test(monkeypatch):\n    monkeypatch.setattr(sys, 'stderr', None)\n",
        "import sqlalchemy as sa\ndef test(monkeypatch):\n    monkeypatch.setattr(sa.engine.Engine, 'connect', None)\n",
        "import pytest\ndef test():\n    with pytest.MonkeyPatch.context() as patch:\n"
        "        patch.setattr('redis.Redis.ping', 1)\n",
    ],
    ids=[
        "module-attribute",
        "dotted-string",
        "patch-object",
        "mock-patch",
        "assignment",
        "builtin-setattr",
        "delattr",
        "standard-library",
        "library-class",
        "monkeypatch-context",
    ],  # fmt: skip
)
def test_the_scan_finds_each_way_of_patching_the_product(source: str) -> None:
    assert list(patches(Path("example.py"), source)), source


@pytest.mark.parametrize(
    "source",
    [
        "import sys\ndef test(monkeypatch):\n    monkeypatch.setenv('MENUS_X', '1')\n",
        "from tests.support.clocks import MovableClock\ndef test():\n    clock = MovableClock()\n    clock.x = 1\n",
        "from service.server.bounded_http import HeadHeld\ndef test(held: HeadHeld):\n    held.clock = 1\n",
        "def test(monkeypatch):\n    monkeypatch.setenv('MENUS_X', '1')\n    monkeypatch.chdir('/')\n",
    ],
    ids=["environment", "test-object", "instance-of-the-product", "working-directory"],
)
def test_the_scan_leaves_what_is_not_a_product_attribute(source: str) -> None:
    assert not list(patches(Path("example.py"), source)), source
