"""The package users install: ``pip wheel .`` builds a wheel that installs alone into a new environment, where
every module of the checkout imports from the installed package (pyproject.toml lists its packages one by one: a
new subpackage left off that list fails here), and serves the demo from an empty folder, so the dataset, the four
contracts, the migrations and the page templates all travel inside it (its package data)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.live import free_port
from tests.support.tool_processes import tool_env

ROOT = Path(__file__).resolve().parents[2]
KEY = re.compile(r"rmk_[A-Za-z0-9_-]+")


def _get(url: str, key: str) -> dict[str, object]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=5) as answer:
        return dict(json.load(answer))


PACKAGES = ("cursors", "data", "handlers", "identity", "service")
# Alembic's script, run by Alembic within a migration; and ``python -m service``, which runs the command line
NOT_IMPORTED = {"service.database.migrations.env", "service.__main__"}
IMPORT_ALL = """
import importlib, json, sys
names, failed, outside = json.loads(sys.argv[1]), {}, []
for name in names:
    try:
        module = importlib.import_module(name)
    except Exception as error:
        failed[name] = f"{type(error).__name__}: {error}"
    else:
        if not module.__file__.startswith(sys.prefix):
            outside.append(name)
print(json.dumps({"failed": failed, "outside": outside}))
"""


def checkout_modules() -> list[str]:
    """Every module of the checkout's packages, by its dotted name."""
    names = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            parts = path.relative_to(ROOT).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return [name for name in names if name not in NOT_IMPORTED]


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new environment with the wheel built from the checkout, and nothing else."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    source, wheels, venv = tmp_path / "source", tmp_path / "wheels", tmp_path / "venv"
    # The checkout's files as git sees them (new ones too, none it ignores): a build/ folder or the egg-info of
    # the editable install, left in the checkout, would hand the wheel files its package list does not name.
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheels), str(source)],
        check=True,
        capture_output=True,
        env=tool_env(),
    )
    (wheel,) = wheels.glob("regional_menus-*.whl")
    uv = Path(sys.executable).with_name("uv")  # scripts/venv installs uv into the project's venv
    subprocess.run([str(uv), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    subprocess.run(
        [str(uv), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), str(wheel)],
        check=True,
        capture_output=True,
    )
    return venv


def test_every_module_of_the_checkout_imports_from_the_installed_wheel(venv: Path, tmp_path: Path) -> None:
    names = checkout_modules()
    assert len(names) > 150 and "identity.tokens.grants.refresh_token" in names
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", IMPORT_ALL, json.dumps(names)],
        cwd=tmp_path,  # not the checkout: only the installed package can answer
        env=tool_env({name: value for name, value in os.environ.items() if name != "PYTHONPATH"}),
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(done.stdout.splitlines()[-1])
    assert found == {"failed": {}, "outside": []}


def test_the_wheel_installs_alone_and_serves_the_demo_from_an_empty_folder(venv: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    environment = {name: value for name, value in os.environ.items() if not name.startswith("MENUS_")}
    port = free_port()
    log = (tmp_path / "demo.log").open("w+")
    server = subprocess.Popen(
        [str(venv / "bin" / "regional-menus"), "serve", "--demo", "--port", str(port)],
        cwd=empty,
        env=environment,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 60
        while not KEY.search(Path(log.name).read_text()) or _down(port):
            assert server.poll() is None, Path(log.name).read_text()
            assert time.monotonic() < deadline, Path(log.name).read_text()
            time.sleep(0.2)
        match = KEY.search(Path(log.name).read_text())
        assert match is not None
        base = f"http://127.0.0.1:{port}/v1/menus"
        regions = _get(f"{base}/regions", match.group())
        assert regions["total"] == 16
        dish = _get(f"{base}/dishes/creme-brulee", match.group())
        assert isinstance(dish["data"], dict) and dish["data"]["slug"] == "creme-brulee"
        assert (empty / "var").is_dir()  # the demo's SQLite database, in the folder it was started from
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def _down(port: int) -> bool:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1).close()
    except OSError:
        return True
    return False
