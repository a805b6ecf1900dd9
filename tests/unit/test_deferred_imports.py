"""What ``serve`` defers is loaded when first used, not before: the app is built without it, and every first use
gets the real module (service/ops/deferred_imports.py). Each case runs in a fresh interpreter: the modules may
already be imported in the test process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from service.ops.deferred_imports import DEFERRED

ROOT = Path(__file__).resolve().parents[2]


def run_python(code: str, cwd: Path, *, env: dict[str, str] | None = None) -> Any:
    """Run ``code`` in a new interpreter (the project on its path); the JSON it prints last."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_app_is_built_and_answers_each_api_without_loading_any_deferred_module(tmp_path: Path) -> None:
    found = run_python(
        """
        import asyncio, contextlib, io, json
        from service.ops.deferred_imports import DEFERRED, defer, is_deferred
        defer()
        import uvicorn  # as serve runs it
        from service.app import create_app
        from service.cli.commands import run
        from service.settings import Settings

        for command in (["db", "upgrade"], ["api-keys", "create", "--name", "t", "--json"]):
            with contextlib.redirect_stdout(io.StringIO()) as out, contextlib.suppress(SystemExit):
                run(command)
        key = json.loads(out.getvalue())["key"]
        app = create_app(Settings.from_env())

        async def status(path, query=b"", headers=()):
            sent = []
            async def receive():
                return {"type": "http.request", "body": b"", "more_body": False}
            async def send(message):
                sent.append(message)
            scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
                     "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query,
                     "root_path": "", "headers": [(b"host", b"127.0.0.1"), *headers],
                     "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000)}
            await app(scope, receive, send)
            return sent[0]["status"]

        async def requests():
            return [await status("/v1/menus/dishes", b"limit=2", [(b"authorization", f"Bearer {key}".encode())]),
                    await status("/jwks"), await status("/.well-known/openid-configuration"),
                    await status("/oauth2/userinfo"), await status("/healthz"), await status("/v1/openapi.json")]

        statuses = asyncio.run(requests())
        print(json.dumps({"statuses": statuses, "deferred": {name: is_deferred(name) for name in DEFERRED}}))
        """,
        tmp_path,
        env={"MENUS_DATABASE_URL": f"sqlite:///{tmp_path}/state.sqlite3"},
    )
    assert found["statuses"] == [200, 200, 200, 401, 200, 200]
    assert found["deferred"] == dict.fromkeys(DEFERRED, True)


def test_a_first_use_loads_the_real_module_and_a_forwarder_calls_the_real_attribute(tmp_path: Path) -> None:
    found = run_python(
        """
        import json, types
        from service.ops.deferred_imports import defer, is_deferred
        defer()
        import httpx, jinja2, requests
        from starlette.testclient import TestClient
        from uvicorn.supervisors import Multiprocess
        from starlette.applications import Starlette
        from starlette.responses import PlainTextResponse
        from starlette.routing import Route

        found = {"before": [is_deferred(name) for name in ("httpx", "jinja2", "requests", "starlette.testclient")]}
        found["requests.get"] = requests.get.__module__  # an attribute read runs the module's code
        found["jinja2"] = jinja2.Environment().from_string("{{ 6 * 7 }}").render()  # submodules import as usual
        app = Starlette(routes=[Route("/", lambda request: PlainTextResponse("hello"))])
        with TestClient(app) as client:  # the forwarder: the real class, made by the real module
            found["client"] = [type(client).__module__, client.get("/").text]
        found["httpx"] = type(httpx.Client()).__name__
        found["forwarder"] = Multiprocess.__name__  # the stand-in's name: nothing loaded yet
        import uvicorn.supervisors
        names = uvicorn.supervisors.__all__  # any other attribute loads it; then it holds the real class
        found["loaded"] = [type(uvicorn.supervisors).__name__, uvicorn.supervisors.Multiprocess is not Multiprocess]
        found["after"] = [is_deferred(name) for name in ("httpx", "jinja2", "requests", "starlette.testclient")]
        print(json.dumps(found))
        """,
        tmp_path,
    )
    assert found == {
        "before": [True, True, True, True],
        "requests.get": "requests.api",
        "jinja2": "42",
        "client": ["starlette.testclient", "hello"],
        "httpx": "Client",
        "forwarder": "Multiprocess",
        "loaded": ["module", True],
        "after": [False, False, False, False],
    }


def package(root: Path, body: str) -> None:
    """A package ``lazy_probe`` under ``root``, whose ``__init__`` is ``body`` (and counts its runs)."""
    (root / "lazy_probe").mkdir()
    (root / "lazy_probe" / "__init__.py").write_text(
        "import builtins\nbuiltins.runs = getattr(builtins, 'runs', 0) + 1\n" + textwrap.dedent(body)
    )
    (root / "lazy_probe" / "part.py").write_text("from . import helper\nVALUE = helper.VALUE + 1\n")
    (root / "lazy_probe" / "helper.py").write_text("VALUE = 41\n")


def test_threads_that_first_use_a_module_together_run_its_code_once_and_all_see_it_whole(tmp_path: Path) -> None:
    package(tmp_path, "import time\ntime.sleep(0.2)\nfrom .part import VALUE\n")
    found = run_python(
        """
        import builtins, json, sys, threading
        sys.path.insert(0, ".")
        from service.ops.deferred_imports import defer
        defer({"lazy_probe": ()})
        import lazy_probe
        values = []
        threads = [threading.Thread(target=lambda: values.append(lazy_probe.VALUE)) for _ in range(8)]
        for each in threads:
            each.start()
        for each in threads:
            each.join()
        print(json.dumps({"values": values, "runs": builtins.runs}))
        """,
        tmp_path,
    )
    assert found == {"values": [42] * 8, "runs": 1}


def test_a_module_whose_code_fails_raises_its_error_and_is_imported_afresh_next_time(tmp_path: Path) -> None:
    package(tmp_path, "import builtins\nif builtins.runs == 1:\n    raise RuntimeError('first run fails')\nVALUE = 7\n")
    found = run_python(
        """
        import json, sys
        sys.path.insert(0, ".")
        from service.ops.deferred_imports import defer
        defer({"lazy_probe": ()})
        import lazy_probe
        try:
            lazy_probe.VALUE
        except RuntimeError as error:
            failed = str(error)
        gone = "lazy_probe" not in sys.modules
        import lazy_probe
        print(json.dumps({"failed": failed, "gone": gone, "value": lazy_probe.VALUE}))
        """,
        tmp_path,
    )
    assert found == {"failed": "first run fails", "gone": True, "value": 7}


def test_only_python_source_is_deferred_an_extension_module_imports_as_usual(tmp_path: Path) -> None:
    found = run_python(
        """
        import json, sys
        from service.ops.deferred_imports import defer, is_deferred
        defer({"_decimal": (), "_csv": ()})
        import _csv, _decimal
        print(json.dumps([is_deferred("_decimal"), is_deferred("_csv"), _decimal.Decimal("1.5") + 1 == 2.5]))
        """,
        tmp_path,
    )
    assert found == [False, False, True]


@pytest.mark.parametrize("name", sorted(DEFERRED))
def test_every_deferred_module_exists_and_names_attributes_it_defines(name: str, tmp_path: Path) -> None:
    """A new release that drops a forwarded attribute, or the module, fails here rather than at a first use."""
    defined = run_python(
        f"""
        import importlib, json
        module = importlib.import_module({name!r})
        print(json.dumps([hasattr(module, each) for each in {DEFERRED[name]!r}]))
        """,
        tmp_path,
    )
    assert all(defined)


def test_serve_defers_them_before_it_imports_the_app(tmp_path: Path) -> None:
    """``serve`` on a database with no schema stops before building the app, with the finder in place."""
    found = run_python(
        """
        import json, sys
        from service.cli.commands import run
        from service.ops.deferred_imports import DeferringFinder
        try:
            run(["serve", "--port", "0"])
        except SystemExit as stop:
            code = stop.code
        print(json.dumps([code, isinstance(sys.meta_path[0], DeferringFinder), "requests" in sys.modules]))
        """,
        tmp_path,
        env={"MENUS_DATABASE_URL": f"sqlite:///{tmp_path}/empty.sqlite3"},
    )
    assert found[0] != 0 and found[1:] == [True, False]
