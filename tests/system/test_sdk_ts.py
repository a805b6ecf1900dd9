"""The TypeScript SDK (openapi-typescript types + openapi-fetch) from the live ``/v1/openapi.json`` works against it.

The types are generated from the served URL into a temporary folder, beside a copy of
``tests/system/sdk_ts/menus.test.ts``; ``tsc`` type-checks the program against them (strict) and compiles it to
JavaScript in the same folder, once for the module, and Node's test runner runs it against the live service. The npm
tools are the ones pinned in package-lock.json (``npm ci``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.ci_skips import needs_tool
from tests.support.live import ROOT, LiveService, live_service

PROGRAM = ROOT / "tests" / "system" / "sdk_ts" / "menus.test.ts"
BIN = ROOT / "node_modules" / ".bin"
TSCONFIG = {
    "compilerOptions": {
        "target": "ES2022",
        "module": "NodeNext",
        "moduleResolution": "NodeNext",
        "strict": True,
        "noUncheckedIndexedAccess": True,
        "skipLibCheck": False,
        "types": ["node"],
        "outDir": "out",
    },
    "files": ["menus.test.ts", "menus.ts"],
}

pytestmark = needs_tool((BIN / "tsc").exists(), "TypeScript (tsc)", "run `npm ci` first")


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=180)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{' '.join(command)}\n{output}"
    return output


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    with live_service(tmp_path_factory.mktemp("sdk-ts-live")) as service:
        yield service


@pytest.fixture(scope="module")
def program(service: LiveService, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder with the generated types, the test program, its tsconfig, and the npm packages linked in."""
    folder = tmp_path_factory.mktemp("sdk-ts")
    (folder / "node_modules").symlink_to(ROOT / "node_modules", target_is_directory=True)
    (folder / "package.json").write_text('{"type": "module", "private": true}\n', encoding="utf-8")
    (folder / "tsconfig.json").write_text(json.dumps(TSCONFIG, indent=2), encoding="utf-8")
    shutil.copy(PROGRAM, folder / PROGRAM.name)
    output = run([str(BIN / "openapi-typescript"), f"{service.url}/v1/openapi.json", "-o", "menus.ts"], folder)
    assert "warn" not in output.lower() and "error" not in output.lower(), output
    return folder


def test_the_generated_types_name_each_schema_once(program: Path) -> None:
    types = (program / "menus.ts").read_text(encoding="utf-8")
    for schema in ("Dish", "Diet", "Course", "Problem", "DishPage", "DishItem", "RegionItem"):
        assert f"\n        {schema}: " in types, schema
    assert types.count('"vegan" | "vegetarian"') == 1  # one Diet, referenced everywhere else


@pytest.fixture(scope="module")
def compiled(program: Path) -> subprocess.CompletedProcess[str]:
    """``tsc -p tsconfig.json``, once: it type-checks the program (strict) and compiles it to ``out/``; any type
    error is reported and makes its exit status 1 (the JavaScript is written all the same)."""
    return subprocess.run(
        [str(BIN / "tsc"), "-p", "tsconfig.json"], cwd=program, capture_output=True, text=True, timeout=180
    )


def test_the_typescript_program_type_checks_against_the_served_contract(
    compiled: subprocess.CompletedProcess[str],
) -> None:
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr


def test_the_typescript_sdk_passes_its_cases_against_the_live_service(
    program: Path, service: LiveService, compiled: subprocess.CompletedProcess[str]
) -> None:
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    env = {**os.environ, "MENUS_URL": f"{service.url}/v1", "MENUS_KEY": service.api_key("sdk-ts")}
    output = run(["node", "--test", "--test-reporter=spec", "out/menus.test.js"], program, env)
    assert "# fail 0" in output or "ℹ fail 0" in output, output
    assert "ℹ pass 7" in output or "# pass 7" in output, output
