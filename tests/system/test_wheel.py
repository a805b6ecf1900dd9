"""The package users install: ``pip wheel .`` builds a wheel that installs alone into a new environment and
serves the demo from an empty folder, so the dataset, the four contracts, the migrations and the page templates
all travel inside it (pyproject.toml's packages and package data)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from tests.support.live import free_port

ROOT = Path(__file__).resolve().parents[2]
KEY = re.compile(r"rmk_[A-Za-z0-9_-]+")


def _get(url: str, key: str) -> dict[str, object]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {key}"})
    with urllib.request.urlopen(request, timeout=5) as answer:
        return dict(json.load(answer))


def test_the_wheel_installs_alone_and_serves_the_demo_from_an_empty_folder(tmp_path: Path) -> None:
    wheels, venv, empty = tmp_path / "wheels", tmp_path / "venv", tmp_path / "empty"
    empty.mkdir()
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheels), str(ROOT)],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("regional_menus-*.whl")
    uv = Path(sys.executable).with_name("uv")  # scripts/venv installs uv into the project's venv
    subprocess.run([str(uv), "venv", "--quiet", "--python", sys.executable, str(venv)], check=True)
    subprocess.run(
        [str(uv), "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), str(wheel)],
        check=True,
        capture_output=True,
    )
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
