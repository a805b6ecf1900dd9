"""bench/servers.py's memory figures for a process tree: resident memory counts a page in every process that maps it;
the proportional set size (PSS) counts it once in all, as gunicorn's workers share the pages of the master they were
forked from."""

from __future__ import annotations

import subprocess
import sys
import time

from bench.servers import process_tree, pss_kib, rss_kib

SHARED_MIB = 64
FORKED = f"""
import os, sys, time
pages = bytearray({SHARED_MIB} << 20)
pages[::4096] = b"x" * len(pages[::4096])  # every page resident, before the fork: then shared by both
if os.fork():
    print("forked", flush=True)
time.sleep(60)
"""


def test_a_page_two_processes_share_counts_in_both_resident_sizes_and_once_in_their_pss() -> None:
    with subprocess.Popen([sys.executable, "-c", FORKED], stdout=subprocess.PIPE, text=True) as parent:
        try:
            assert parent.stdout is not None and parent.stdout.readline() == "forked\n"
            deadline = time.monotonic() + 10
            while len(tree := process_tree(parent.pid)) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert len(tree) == 2
            rss = sum(rss_kib(pid) for pid in tree) / 1024
            pss = sum(pss_kib(pid) for pid in tree) / 1024
        finally:
            subprocess.run(["pkill", "-KILL", "-P", str(parent.pid)], check=False)
            parent.kill()
    assert rss >= 2 * SHARED_MIB  # the shared pages, once in each
    assert SHARED_MIB <= pss < SHARED_MIB + (rss - 2 * SHARED_MIB)  # once in all, with what each has alone
