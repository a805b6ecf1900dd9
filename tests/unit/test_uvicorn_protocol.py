"""The one server class the service subclasses, uvicorn's ``HttpToolsProtocol`` (service/server/bounded_http.py),
still has what the subclass overrides and relies on. An upgrade of uvicorn that renames, drops or reshapes any of
it fails here, by name, before a request finds out: then re-read ``uvicorn/protocols/http/httptools_impl.py`` and
the subclass."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle
from uvicorn.server import ServerState

from service.server.bounded_http import BoundedHttpToolsProtocol, HeadLimits, bounded_protocol

# Each method the subclass overrides, with the parameters uvicorn's own has (and the subclass's must take).
OVERRIDDEN = {
    "__init__": ["self", "config", "server_state", "app_state", "_loop"],
    "connection_made": ["self", "transport"],
    "connection_lost": ["self", "exc"],
    "data_received": ["self", "data"],
    "on_headers_complete": ["self"],
    "on_message_complete": ["self"],
    "on_response_complete": ["self"],
}
# Attributes of a protocol that has read a request head, which the subclass reads.
READ = ("loop", "logger", "transport", "cycle", "scope")


class Quiet(asyncio.Transport):
    """A connection that takes every write."""

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def write(self, data: Any) -> None:
        pass

    def writelines(self, list_of_data: Any) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def parameters(function: Any) -> list[str]:
    return list(inspect.signature(function).parameters)


@pytest.mark.parametrize("name", sorted(OVERRIDDEN))
def test_each_method_the_head_bound_overrides_is_uvicorn_s_own_with_the_same_parameters(name: str) -> None:
    assert name in vars(HttpToolsProtocol), f"uvicorn's HttpToolsProtocol no longer defines {name}"
    assert parameters(getattr(HttpToolsProtocol, name)) == OVERRIDDEN[name], (
        f"uvicorn's HttpToolsProtocol.{name} takes other parameters now: {parameters(getattr(HttpToolsProtocol, name))}"
    )
    assert name in vars(BoundedHttpToolsProtocol), f"the subclass no longer overrides {name}: update OVERRIDDEN"


def test_the_subclass_overrides_nothing_else_of_uvicorn_s_protocol() -> None:
    """A new override is a new dependency on uvicorn's internals: list it above, with its parameters."""
    ours = {name for name in vars(BoundedHttpToolsProtocol) if not name.startswith("_") or name == "__init__"}
    overridden = ours & set(dir(HttpToolsProtocol))
    assert overridden == set(OVERRIDDEN), overridden ^ set(OVERRIDDEN)


def test_the_protocol_keeps_the_state_the_subclass_reads_and_its_cycle_says_when_a_response_is_complete() -> None:
    async def read_a_head() -> tuple[HttpToolsProtocol, RequestResponseCycle]:
        async def app(scope: Any, receive: Any, send: Any) -> None:
            await send({"type": "http.response.start", "status": 204, "headers": []})
            await send({"type": "http.response.body", "body": b""})

        limits = HeadLimits(line_limit=1024, head_limit=4096, fields_limit=10, head_timeout=5.0)
        config = Config(app=app, http=bounded_protocol(limits), lifespan="off", log_config=None)
        config.load()
        protocol = config.http_protocol_class(config=config, server_state=ServerState(), app_state={})  # type: ignore[call-arg]
        protocol.connection_made(Quiet())
        protocol.data_received(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
        cycle = protocol.cycle
        for _ in range(10):
            await asyncio.sleep(0)
        protocol.connection_lost(None)
        return protocol, cycle

    protocol, cycle = asyncio.run(read_a_head())
    missing = [name for name in READ if not hasattr(protocol, name)]
    assert not missing, f"uvicorn's protocol no longer keeps {missing}"
    assert isinstance(cycle, RequestResponseCycle)
    assert cycle.response_complete is True
    assert protocol.scope["method"] == "GET"


def test_uvicorn_takes_a_protocol_class_as_its_http_setting() -> None:
    limits = HeadLimits(line_limit=1024, head_limit=4096, fields_limit=10, head_timeout=5.0)
    config = Config(app=lambda *_: None, http=bounded_protocol(limits), lifespan="off", log_config=None)
    config.load()
    assert issubclass(config.http_protocol_class, BoundedHttpToolsProtocol)
