"""A test that asserts only inside loops proves nothing the day its loop runs over nothing. Every such test under
tests/ must loop over ``each(...)`` (tests/support/loops.py: it fails when the loop saw no item) or over something
that cannot be empty: a literal with items, ``range`` of a positive number, or a module constant that is such a
literal. The scan reads the syntax tree of every test module."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent.parent
CHECKS = ("assert_", "pytest.raises")  # calls that assert, besides the assert statement


@dataclass(frozen=True)
class Unguarded:
    path: str
    line: int
    test: str
    over: str

    def __str__(self) -> str:
        return f"tests/{self.path}:{self.line} {self.test} asserts only inside a loop over {self.over}: use each(...)"


def constants(tree: ast.Module) -> dict[str, ast.expr]:
    """Module-level names bound once to a literal."""
    found: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            found[node.target.id] = node.value
    return found


def never_empty(iterable: ast.expr, known: dict[str, ast.expr]) -> bool:
    if isinstance(iterable, ast.Tuple | ast.List | ast.Set):
        return bool(iterable.elts) and not any(isinstance(e, ast.Starred) for e in iterable.elts)
    if isinstance(iterable, ast.Dict):
        return bool(iterable.keys)
    if isinstance(iterable, ast.Name) and iterable.id in known:
        return never_empty(known[iterable.id], {})
    if isinstance(iterable, ast.Call):
        called = ast.unparse(iterable.func)
        if called in ("each", "loops.each"):
            return True
        if called == "range" and len(iterable.args) == 1:
            (bound,) = iterable.args
            if isinstance(bound, ast.Name) and bound.id in known:
                bound = known[bound.id]
            return isinstance(bound, ast.Constant) and isinstance(bound.value, int) and bound.value > 0
        if called in ("enumerate", "zip", "sorted", "reversed", "list", "tuple") and iterable.args:
            return never_empty(iterable.args[0], known)
        if isinstance(iterable.func, ast.Attribute) and iterable.func.attr in ("items", "values", "keys"):
            return never_empty(iterable.func.value, known)
    return False


def asserts(node: ast.AST) -> bool:
    if isinstance(node, ast.Assert):
        return True
    if isinstance(node, ast.Call):
        called = ast.unparse(node.func)
        return any(called.startswith(check) or ("." + check) in called for check in CHECKS)
    return False


Loop = ast.For | ast.AsyncFor | ast.While


def assert_sites(node: ast.AST, loop: Loop | None, outside: list[ast.AST], inside: list[Loop]) -> None:
    """Sort the checks under ``node``: those in no loop into ``outside``, the loops holding the others into
    ``inside`` (a nested function's checks are its own)."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
        return
    if asserts(node):
        if loop is None:
            outside.append(node)
        else:
            inside.append(loop)
    if isinstance(node, ast.For | ast.AsyncFor | ast.While):
        for child in node.body + node.orelse:
            assert_sites(child, node, outside, inside)
        return
    for child in ast.iter_child_nodes(node):
        assert_sites(child, loop, outside, inside)


def unguarded(path: str, source: str) -> list[Unguarded]:
    tree = ast.parse(source)
    known = constants(tree)
    found = []
    for test in ast.walk(tree):
        if not isinstance(test, ast.FunctionDef | ast.AsyncFunctionDef) or not test.name.startswith("test_"):
            continue
        outside: list[ast.AST] = []
        inside: list[Loop] = []
        for statement in test.body:
            assert_sites(statement, None, outside, inside)
        if outside:
            continue
        for loop in dict.fromkeys(inside):
            if isinstance(loop, ast.While) or not never_empty(loop.iter, known):
                over = "while" if isinstance(loop, ast.While) else ast.unparse(loop.iter)
                found.append(Unguarded(path, loop.lineno, test.name, over))
    return found


def test_every_test_that_asserts_only_in_loops_sees_at_least_one_item() -> None:
    modules = sorted(TESTS.rglob("test_*.py"))
    assert len(modules) > 100
    found = [u for m in modules for u in unguarded(m.relative_to(TESTS).as_posix(), m.read_text(encoding="utf-8"))]
    assert not found, "\n".join(map(str, found))


@pytest.mark.parametrize(
    ("source", "flagged"),
    [
        ("def test_a(xs):\n    for x in xs:\n        assert x\n", True),
        ("def test_a(xs):\n    for x in each(xs):\n        assert x\n", False),
        ("def test_a():\n    for x in (1, 2):\n        assert x\n", False),
        ("def test_a():\n    for x in ():\n        assert x\n", True),
        ("N = 3\ndef test_a():\n    for x in range(N):\n        assert x >= 0\n", False),
        ("def test_a(xs):\n    assert xs\n    for x in xs:\n        assert x\n", False),
        ("def test_a(d):\n    for k, v in d.items():\n        assert_ok(v)\n", True),
    ],
    ids=["computed", "each", "literal", "empty-literal", "range-constant", "asserted-before", "assert-helper"],
)
def test_the_scan_tells_a_guarded_loop_from_an_unguarded_one(source: str, flagged: bool) -> None:
    assert bool(unguarded("example.py", source)) is flagged
