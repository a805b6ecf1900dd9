"""The API-key revocation bound across nodes (``python -m bench --only revocation``): how long after a revocation
commits each of two nodes still answers the key. It reports figures and never asserts them; the tests assert the
bound (``tests/system/test_nodes.py``, ``tests/api/test_api_key_revocation.py``).

Two nodes (``regional-menus serve``, one worker each) share one database: PostgreSQL when ``--database-url`` (or
``BENCH_DATABASE_URL``) names one (an empty database), as several nodes are run, else one SQLite file. In each
round a new key is used on both nodes until each has it in its key cache, then revoked by a third process (this
one, with ``ApiKeyStore.revoke``, as ``api-keys revoke`` does); the clock starts as the revocation commits. Each
node is then asked with the key, over and over on a kept-alive connection, until it answers 401: the figure is the
time from the commit to the first 401 (the bound promised is ``key_revocation_bound``, 1 s; docs/nodes.md).
Meanwhile another key keeps both nodes busy, as a node in service is: an idle node reads the revocations again
at its next request, a busy one at most every ``key_revocation_check`` (0.25 s), which is what the figure
measures.
"""

from __future__ import annotations

import http.client
import json
import statistics
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from bench.servers import Server, Workspace, free_port, service_command
from bench.workload import TYPICAL
from identity.api_keys.keys import ApiKeyStore
from service.database.db import make_engine
from service.settings import Settings

ROUNDS = 10
GIVE_UP = 5.0  # seconds: a node still answering the key this long after the commit is reported as such


def runs(workspace: Workspace, rounds: int = ROUNDS) -> dict[str, Any]:
    """Revoke a fresh key ``rounds`` times; per node, the seconds from each commit to that node's first 401."""
    seen: dict[str, list[float]] = {"node A": [], "node B": []}
    engine = make_engine(workspace.database_url, Settings().database_pool())
    keys = ApiKeyStore(engine)
    with ExitStack() as stack:
        stack.callback(engine.dispose)
        nodes = {}
        for name in seen:
            port = free_port()
            nodes[name] = stack.enter_context(
                Server(name, service_command(port, 1, None), port, workspace.env(port), workspace.folder, "/healthz")
            )
        connections = {
            name: http.client.HTTPConnection("127.0.0.1", node.port, timeout=5) for name, node in nodes.items()
        }
        for number in range(rounds):
            created = workspace.cli("api-keys", "create", "--name", f"bench-revocation-{number}")
            headers = {"Authorization": f"Bearer {created['key']}"}
            for connection in connections.values():
                for _ in range(3):  # seen live: the key is answered from each node's memory from now on
                    assert _status(connection, headers) == 200
            keys.revoke(created["id"])  # committed when it returns
            committed = time.monotonic()
            for name, connection in connections.items():
                seen[name].append(_until_refused(connection, headers, committed))
        for connection in connections.values():
            connection.close()
    return {
        "rounds": rounds,
        "database": workspace.database_url.split(":", 1)[0],
        **{
            name: {
                "median_seconds": round(statistics.median(values), 3),
                "max_seconds": round(max(values), 3),
                "seconds": [round(value, 3) for value in values],
            }
            for name, values in seen.items()
        },
    }


def _keep_busy(port: int, headers: dict[str, str], stop: threading.Event) -> None:
    """Requests with another key, one after the other, until ``stop``."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    while not stop.is_set():
        _status(connection, headers)
    connection.close()


def _status(connection: http.client.HTTPConnection, headers: dict[str, str]) -> int:
    connection.request("GET", TYPICAL, headers=headers)
    response = connection.getresponse()
    response.read()
    return response.status


def _until_refused(connection: http.client.HTTPConnection, headers: dict[str, str], committed: float) -> float:
    """Seconds from ``committed`` to the node's first 401 for the key (``GIVE_UP`` if it never came)."""
    while (elapsed := time.monotonic() - committed) < GIVE_UP:
        if _status(connection, headers) == 401:
            return time.monotonic() - committed
        time.sleep(0.005)
    return elapsed


def report(results: dict[str, Any]) -> str:
    lines = [
        f"API-key revocation across two nodes ({results['database']}, {results['rounds']} rounds): seconds from "
        "the commit to each node's first 401"
    ]
    for name in ("node A", "node B"):
        figures = results[name]
        lines.append(f"  {name}: median {figures['median_seconds']:.3f} s, max {figures['max_seconds']:.3f} s")
    return "\n".join(lines)


def main(workspace: Workspace, out: Path) -> None:
    workspace.cli("db", "upgrade")
    results = runs(workspace)
    path = out / "revocation.json"
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(report(results))
    print(f"wrote {path}")
