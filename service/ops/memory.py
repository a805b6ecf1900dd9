"""Process-wide memory tuning for the server's processes.

Each Argon2 hash (identity/passwords.py) asks libargon2 for 19 MiB of working memory through malloc. glibc
raises its mmap threshold after the first such block is freed, and from then on it serves these blocks from
per-thread arenas and keeps them when they are freed. Sign-ins run on many threads, so resident memory climbs by
19 MiB for each arena (up to eight per core) and never comes back down. Measured with 40 threads hashing at once:
950 MB resident memory, against 15 MB with a fixed threshold. With the threshold fixed, every block over 128 KiB is
mapped on its own and given back to the system as soon as it is freed.

The app built at start-up (the dataset, the contracts, Connexion's routes) is about 115,000 objects that live
as long as the process. Python's full garbage collection walks all of them, about 40 ms on this machine, and
runs whenever enough new long-lived objects (answers kept in the cache, say) have piled up: a pause every
request in flight waits for. ``freeze_startup_objects`` moves them out of the collector's sight once the app
is built, so a full collection walks only what was made since. While they are made (the imports included),
every full collection would walk all those made so far, for nothing: ``pause_collection`` stops the collector
from the command's start until they are frozen, a sixth of a worker's start-up CPU (0.12 s of 0.75 s here).
"""

from __future__ import annotations

import ctypes
import gc

M_MMAP_THRESHOLD = -3  # glibc's malloc.h
MMAP_THRESHOLD = 128 * 1024  # glibc's default, kept fixed instead of raised as large blocks come and go


def return_large_blocks() -> bool:
    """Fix glibc's mmap threshold. Returns True when it was set, False where the C library is not glibc.

    ``mallopt`` is looked up among the symbols the process has loaded (dlopen(3) of NULL: the C library is one
    of them), not by ``ctypes.util.find_library``, which runs ldconfig in a subprocess: 0.2 s of every start."""
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is None:
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))


def pause_collection() -> None:
    """No garbage collection until ``freeze_startup_objects`` (or ``resume_collection``): start-up makes
    long-lived objects only, and what it leaves behind is collected once, when they are frozen."""
    gc.disable()


def resume_collection() -> None:
    """Garbage collection as usual again (a process that builds no app after ``pause_collection``)."""
    gc.enable()


def freeze_startup_objects() -> int:
    """Exempt every object alive now (the app just built) from garbage collection, and collect as usual from now
    on (after ``pause_collection``); returns how many objects are frozen."""
    gc.collect()  # what start-up left behind goes first, not into the frozen generation
    gc.freeze()
    gc.enable()
    return gc.get_freeze_count()
