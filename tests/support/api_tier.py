"""What an API test may not do: start a process or a listening server (docs/testing.md "Tiers"); such a test belongs
in ``tests/system/``. ``tests/api/conftest.py`` watches each API test's setup, call and teardown with ``GUARD``.

The guard is an audit hook (PEP 578, ``sys.addaudithook``): CPython raises an audit event for every process start
(``subprocess.Popen``, ``os.posix_spawn``, ``os.fork``, ``os.exec``, ``os.system``, …) and every socket bind, in
any thread, whichever library asks. It observes and replaces nothing. A process start is refused on the spot (the
hook raises ``StartedAProcess``, so the process never runs); a bound socket is remembered, and found listening when
the test connects to it or at the end of the phase. A socket bound to hold a port that nothing listens on (an
address a test needs to be unreachable) is allowed.
"""

from __future__ import annotations

import socket
import sys
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

# CPython's audit events that start a process (docs.python.org/3/library/audit_events.html).
PROCESS_EVENTS = frozenset(
    {"subprocess.Popen", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.exec", "os.system", "pty.spawn"}
)


class StartedAProcess(RuntimeError):
    """Raised by the audit hook, in the test's own code, instead of starting the process."""


class Guard:
    """Call it as an audit hook; ``watching()`` around what must start nothing yields the list of what it started."""

    def __init__(self) -> None:
        self._found: list[str] | None = None  # None: not watching
        self._bound: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        self._lock = threading.Lock()  # the hook runs in whichever thread binds or connects

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        found = self._found
        if found is None:
            return
        if event in PROCESS_EVENTS:
            what = f"started a process ({event}: {_shown(args)})"
            found.append(what)
            raise StartedAProcess(f"an API test {what}: it belongs in tests/system/")
        if event == "socket.bind":
            try:
                with self._lock:
                    self._bound.add(args[0])
            except TypeError:  # a bare _socket.socket (no weak reference): not one Python's servers make
                pass
        elif event == "socket.connect" and self._bound:
            self._listening(found)

    @contextmanager
    def watching(self) -> Iterator[list[str]]:
        found: list[str] = []
        self._found = found
        try:
            yield found
        finally:
            self._found = None
            self._listening(found)
            self._bound = weakref.WeakSet()

    def _listening(self, found: list[str]) -> None:
        with self._lock:
            bound = list(self._bound)
        for sock in bound:
            try:
                listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
                address = sock.getsockname()
            except OSError:  # closed
                listening = 0
            if listening:
                found.append(f"started a listening server (a socket listening on {address})")
            if listening or sock.fileno() == -1:
                with self._lock:
                    self._bound.discard(sock)


def _shown(args: tuple[Any, ...]) -> str:
    return " ".join(str(arg) for arg in args if arg is not None)[:200]


GUARD = Guard()
_installed = False


def install() -> Guard:
    """Add ``GUARD`` to this process's audit hooks (once: an audit hook cannot be removed, and stays quiet while it
    is not watching)."""
    global _installed
    if not _installed:
        sys.addaudithook(GUARD)
        _installed = True
    return GUARD
