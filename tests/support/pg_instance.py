"""A PostgreSQL server of the test's own, to stop and start at will (the shared one on :5432 stays up).

Made with the server's own tools (``initdb``, ``pg_ctl``) in a temporary folder, on a free
loopback port, with trust authentication. Run as root (CI's machine), the server runs as the
``postgres`` user, as PostgreSQL requires. The tools are found on ``PATH``, else under
Debian's ``/usr/lib/postgresql/<version>/bin``.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.live import free_port


def _tool(name: str) -> str:
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)), None)
    if found is None:
        pytest.fail(f"PostgreSQL's {name} is not installed; the database fault tests need a server of their own")
    return found


@dataclass
class PostgresServer:
    folder: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-l", str(self.folder / "server.log"),
                  "-o", options, "-w", "-t", "60", "start")  # fmt: skip

    def stop(self) -> None:
        """Stop at once: open connections are cut, as when the server crashes or is restarted."""
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "immediate", "-w", "stop")

    def _run(self, tool: str, *args: str) -> None:
        as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        done = subprocess.run([*as_postgres, _tool(tool), *args], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"{tool} failed: {done.stderr or done.stdout}")


@contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    folder = Path(tempfile.mkdtemp(prefix="menus-pg-"))
    if os.geteuid() == 0:
        postgres = pwd.getpwnam("postgres")
        os.chown(folder, postgres.pw_uid, postgres.pw_gid)
    server = PostgresServer(folder, free_port())
    try:
        server._run("initdb", "-D", str(folder / "data"), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
        server.start()
        yield server
    finally:
        try:
            server.stop()
        except RuntimeError:
            pass  # already stopped
        shutil.rmtree(folder, ignore_errors=True)
