"""Resident memory: after concurrent Argon2 hashes, under the glibc setting docs/operations.md gives the service,
the working memory goes back to the OS; the app built at start-up is kept out of garbage collection
(service/server/collection.py)."""

from __future__ import annotations

import os
import subprocess
import sys

# docs/operations.md, "Memory and start-up": the environment a node runs the service in.
DEPLOYED = {"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=131072"}

SCRIPT = """
import re
from concurrent.futures import ThreadPoolExecutor
from identity.accounts.passwords import OWASP_ARGON2ID

rss = lambda: int(re.search(r"VmRSS:\\s+(\\d+)", open("/proc/self/status").read()).group(1))
before = rss()
with ThreadPoolExecutor(16) as pool:
    for _ in range(3):
        list(pool.map(lambda _: OWASP_ARGON2ID.hash("a password"), range(16)))
print(rss() - before)
"""


def test_concurrent_password_hashes_leave_no_resident_memory_behind_under_the_documented_glibc_setting() -> None:
    """Without the fixed mmap threshold, 16 threads hashing leave about 16 x 19 MiB resident for good; with it,
    every hash's 19 MiB is unmapped when it is freed, and what stays is the threads' own stacks and caches."""
    environment = {**os.environ, **DEPLOYED}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120, check=True, env=environment
    )
    grown_kib = int(done.stdout.strip())
    assert grown_kib < 40 * 1024, f"{grown_kib} KiB stayed resident"


FREEZE_SCRIPT = """
import gc, sys
from service.app import create_app
from service.database.db import make_engine
from service.server.collection import freeze_startup_objects, pause_collection
from service.database.schema import upgrade
from service.settings import Settings

pause_collection()  # as serve does, from its start
url = "sqlite:///" + sys.argv[1]
settings = Settings(database_url=url)
upgrade(make_engine(url, settings.database_pool()))
app = create_app(settings)
assert not gc.isenabled()
gc.collect()  # what the build left behind: nothing was collected while it ran
tracked = len(gc.get_objects())
frozen = freeze_startup_objects()
assert gc.isenabled()
print(tracked, frozen, len(gc.get_objects()))
"""


def test_the_app_built_at_start_is_kept_out_of_every_garbage_collection(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A full collection walked the whole app (about 115,000 objects, tens of milliseconds that every request in
    flight waits for); once frozen, it walks only what was made since. No collection runs while it is built
    (start-up CPU), and collection is on again once it is frozen."""
    command = [sys.executable, "-c", FREEZE_SCRIPT, str(tmp_path / "state.sqlite3")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True, cwd=tmp_path)
    tracked, frozen, left = (int(n) for n in done.stdout.split())
    assert frozen >= tracked * 0.9, (tracked, frozen)
    assert left < 1000, left
