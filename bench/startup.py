"""Start-up figures (``python -m bench --only startup``): how long ``regional-menus --help`` takes, how long one
pinned worker takes from process start to its first 200 on the menus API and to its first ``/jwks`` answer, and
its resident memory after 300 queries. It reports figures and never asserts them (targets: issue 29).

Beside the service, the same figures for **the stack alone** (``bench/stack_alone.py``: stock Connexion with one
operation, under uvicorn with httptools and uvloop, SQLAlchemy imported), to its first ``/jwks`` 200: what starting
costs before any code of ours runs, so that a start-up target can be judged against it on the machine at hand.
``ours_over_stack`` is the service's median to its first ``/jwks`` ÷ the stack's.

``--tree DIR`` measures another source tree of the service (say ``git archive`` of an older commit) with this
virtual environment, for a before/after on the same machine and hour.

The tree's packages are byte-compiled first, as an installation's are (pip, and ``scripts/venv``'s
``--compile-bytecode`` for the dependencies): where ``PYTHONDONTWRITEBYTECODE`` is set, a process would otherwise
compile every module it imports on every start, about 1.4 s of CPU and 15 MiB for a worker, and the figures would
measure the compiler. ``bytecode`` in the output says whether the dependencies had theirs.
"""

from __future__ import annotations

import compileall
import importlib.util
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.servers import Server, Workspace, free_port, uvicorn_factory_command
from bench.workload import TYPICAL, region_paths
from data.catalog import load_catalog

ROOT = Path(__file__).resolve().parent.parent
QUERIES = 300  # the menus queries answered before resident memory is read
TIMES = 5  # runs of each start-up figure; the best and the median are reported
PACKAGES = ("service", "identity", "data", "handlers")  # the service's own, byte-compiled before measuring


def measure(tree: Path, times: int = TIMES) -> dict[str, Any]:
    """Every start-up figure of the service in ``tree``, on a fresh SQLite database in a temporary folder."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.setdefault("MENUS_SECRET_KEYS", _new_key())
    for package in PACKAGES:
        compileall.compile_dir(tree / package, quiet=1)
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as folder:
        workspace = Workspace(Path(folder), f"sqlite:///{folder}/state.sqlite3")
        _cli(workspace, env, "db", "upgrade")
        key = _cli(workspace, env, "api-keys", "create", "--name", "bench-startup")["key"]
        menus = [_start(workspace, env, TYPICAL, {"Authorization": f"Bearer {key}"}) for _ in range(times)]
        jwks = [_start(workspace, env, "/jwks", {}) for _ in range(times)]
        stack = [_start_stack(workspace) for _ in range(times)]
        rss = _rss_after_queries(workspace, env, key)
        helps = [_help_seconds(workspace.folder, env) for _ in range(times)]
    return {
        "tree": str(tree),
        "bytecode": {"tree": True, "dependencies": _dependencies_compiled()},
        "help_seconds": _spread([wall for wall, _ in helps]),
        "help_cpu_seconds": _spread([cpu for _, cpu in helps]),
        "first_menus_200_seconds": _spread([wall for wall, _ in menus]),
        "first_menus_200_cpu_seconds": _spread([cpu for _, cpu in menus]),
        "first_jwks_200_seconds": _spread([wall for wall, _ in jwks]),
        "first_jwks_200_cpu_seconds": _spread([cpu for _, cpu in jwks]),
        "stack_first_200_seconds": _spread([wall for wall, _ in stack]),
        "stack_first_200_cpu_seconds": _spread([cpu for _, cpu in stack]),
        "ours_over_stack": round(
            statistics.median(wall for wall, _ in jwks) / statistics.median(wall for wall, _ in stack), 2
        ),
        f"rss_mib_after_{QUERIES}_queries": round(rss, 1),
    }


def _dependencies_compiled() -> bool:
    """Whether the virtual environment's packages have their bytecode (SQLAlchemy's stands for all of them)."""
    spec = importlib.util.find_spec("sqlalchemy")
    origin = spec.origin if spec is not None else None
    return origin is not None and Path(importlib.util.cache_from_source(origin)).exists()


def _python(env: dict[str, str], *args: str) -> list[str]:
    """The service's command line from ``env``'s tree, pinned to one core where taskset exists."""
    command = [sys.executable, "-c", "from service.cli.commands import run; run()", *args]
    return ["taskset", "-c", "0", *command] if shutil.which("taskset") else command


def _help_seconds(folder: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds of ``--help`` (CPU time moves less on a shared machine). Run in ``folder``: with
    ``python -c`` the working directory comes first on the path, before the measured tree."""
    cpu = _children_cpu()
    started = time.perf_counter()
    subprocess.run(_python(env, "--help"), cwd=folder, env=env, capture_output=True, check=True, timeout=60)
    return time.perf_counter() - started, _children_cpu() - cpu


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cli(workspace: Workspace, env: dict[str, str], *args: str) -> Any:
    done = subprocess.run(
        _python(env, *args, "--json"),
        cwd=workspace.folder,
        env={**workspace.env(), **_own(env)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(done.stdout)


def _own(env: dict[str, str]) -> dict[str, str]:
    """What ``measure`` set in ``env`` (the tree, the secret key): it wins over the workspace's environment, which
    copies this process's, a ``PYTHONPATH`` of its own included."""
    return {name: env[name] for name in ("PYTHONPATH", "MENUS_SECRET_KEYS")}


def _server(workspace: Workspace, env: dict[str, str], ready_path: str, headers: dict[str, str]) -> Server:
    port = free_port()
    return Server(
        "startup",
        _python(env, "serve", "--port", str(port)),
        port,
        {**workspace.env(port), **_own(env)},
        workspace.folder,
        ready_path,
        headers,
    )


def _start(workspace: Workspace, env: dict[str, str], ready_path: str, headers: dict[str, str]) -> tuple[float, float]:
    """Wall-clock seconds from process start to the first 200 on ``ready_path``, and the CPU seconds it used."""
    with _server(workspace, env, ready_path, headers) as server:
        assert server.process is not None
        return server.startup_seconds, _cpu_seconds(server.process.pid)


def _start_stack(workspace: Workspace) -> tuple[float, float]:
    """The stack alone (``bench/stack_alone.py``), pinned as the service is: wall-clock seconds to its first ``/jwks``
    200, and the CPU seconds it used."""
    port = free_port()
    command = uvicorn_factory_command("bench.stack_alone:app", port, cpus="0" if shutil.which("taskset") else None)
    stack_env = {**workspace.env(port), "PYTHONPATH": str(ROOT)}  # bench/ is this checkout's, whatever the tree
    with Server("stack", command, port, stack_env, workspace.folder, "/jwks", {}) as server:
        assert server.process is not None
        return server.startup_seconds, _cpu_seconds(server.process.pid)


def _cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a running process (proc(5): fields 14 and 15 of /proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_after_queries(workspace: Workspace, env: dict[str, str], key: str) -> float:
    paths = [TYPICAL, *region_paths(load_catalog(cursor_key=bytes(32)))]  # paths only: no cursor is read
    with _server(workspace, env, TYPICAL, {"Authorization": f"Bearer {key}"}) as server:
        for n in range(QUERIES):
            request = urllib.request.Request(
                server.url + paths[n % len(paths)], headers={"Authorization": f"Bearer {key}"}
            )
            with urllib.request.urlopen(request, timeout=10) as response:
                response.read()
        return server.rss_mib()


def _spread(values: list[float]) -> dict[str, float]:
    return {"best": round(min(values), 3), "median": round(statistics.median(values), 3)}


def _new_key() -> str:
    from identity.keys.sealing import new_key

    return new_key()


def text(figures: dict[str, Any]) -> str:
    lines = [f"start-up of {figures['tree']} (one worker pinned to one core; best / median of {TIMES})"]
    for name, value in figures.items():
        if name == "bytecode":
            lines.append(f"  byte-compiled: the tree {value['tree']}, its dependencies {value['dependencies']}")
        elif isinstance(value, dict):
            lines.append(f"  {name}: {value['best']} / {value['median']}")
        elif name == "ours_over_stack":
            lines.append(f"  the service's first /jwks ÷ the stack's, medians: {value}")
        elif name != "tree":
            lines.append(f"  {name}: {value}")
    return "\n".join(lines)


def main(tree: Path | None, out: Path) -> None:
    figures = measure((tree or ROOT).resolve())
    out.mkdir(parents=True, exist_ok=True)
    path = out / "startup.json"
    path.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    print(text(figures))
    print(f"wrote {path}")
