"""How a node starts under gunicorn (docs/nodes.md): its master builds the app, then binds the socket and forks the
workers from the built app. Until the app is built the port refuses connections, so a proxy sends them to another
node at once; a bound socket whose workers were still building their apps held them for the workers' start-up (3 s
on a busy two-core machine, and past the drill's 15 s client timeout under the whole suite: bench/drill.py's kill
and restart of a node)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.live import live_service

BUILT = "this node has no mail transport"  # the app's build logs it on a node without SMTP or a mail folder
LISTENING = "Listening at: "  # gunicorn's master, once the socket is bound


def test_gunicorns_master_builds_the_app_once_before_it_binds_the_socket(tmp_path: Path) -> None:
    with live_service(tmp_path, args=("--workers", "2")) as service:
        assert service.process is not None
    messages = [
        json.loads(line).get("message", "") for line in (tmp_path / "server.log").read_text().splitlines() if line
    ]
    built = [n for n, message in enumerate(messages) if message.startswith(BUILT)]
    listening = [n for n, message in enumerate(messages) if message.startswith(LISTENING)]
    assert len(built) == 1, messages  # once, in the master: the workers are forked from it, and build nothing
    assert len(listening) == 1 and built[0] < listening[0], messages
