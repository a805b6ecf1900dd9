"""Modules a server process would import for features it never uses, loaded only when first used.

Connexion imports ``requests`` at module level for remote ``$ref`` resolution (our documents have none),
Starlette's test client and httpx for ``AbstractApp.test_client``, and Jinja (through Starlette's templating) for
its Swagger UI middleware, which the service leaves out (``service.web.swagger_ui`` serves the pages); uvicorn
imports its reload and multiprocess supervisors (watchfiles, multiprocessing) for ``uvicorn.run(reload=…,
workers=…)``, which ``serve`` never asks for; PyJWT imports ``cryptography.x509`` for keys given as certificates.
Our own uses wait for a first use too: Jinja renders the sign-in pages, the console and the letters; httpx posts
back-channel logout tokens. Together about 200 modules and 10 MiB of every worker that serves the APIs
(docs/performance.md, start-up).

``defer()``, called by ``serve`` before anything imports them, puts a finder first on ``sys.meta_path``. It
gives each module of ``DEFERRED`` as a module object with its usual name, spec, file and path, and nothing else in
it: reading any other attribute runs the module's own code into that same object (one thread runs it, another
that reads meanwhile waits for it), so whoever uses it gets the real module. A module that some importer
from-imports at import time (``from starlette.testclient import TestClient``) names those attributes in
``DEFERRED``: each is a function that loads the module and calls the real attribute. Their importers only ever
call them; once loaded, the module holds the real ones. Python source only: an extension module is imported as
usual.

``importlib.util.LazyLoader`` does the first part, but on Python 3.11 the next ``import requests`` anywhere reads
the module's ``__spec__`` through it, which loads the module at once (the import system checks whether it is
still initializing). A deferred module keeps its ``__spec__`` in its own namespace, so reading it loads nothing.
"""

from __future__ import annotations

import sys
import threading
import types
from collections.abc import Callable, Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec, SourceFileLoader, SourcelessFileLoader
from typing import Any

# module -> the attributes its importers bind at import time and only ever call
DEFERRED: dict[str, tuple[str, ...]] = {
    "requests": (),  # connexion.json_schema: URLHandler, remote $refs
    "httpx": (),  # connexion.security: remote token info; service.outbound: back-channel logout tokens
    "starlette.testclient": ("TestClient",),  # connexion.apps.abstract: AbstractApp.test_client
    "uvicorn.supervisors": ("ChangeReload", "Multiprocess"),  # uvicorn.main: run(reload=True) or run(workers=N)
    "jinja2": (),  # connexion.spec: templated documents; our sign-in pages, console and letters
    "starlette.templating": ("Jinja2Templates",),  # connexion.middleware.swagger_ui, which the service leaves out
    "cryptography.x509": (),  # jwt.algorithms: keys given as X.509 certificates (ours are bare RSA keys)
}
_LOADER = "__deferred_loader__"  # a deferred module's DeferringLoader, in its namespace until it is loaded


def defer(modules: dict[str, tuple[str, ...]] = DEFERRED) -> None:
    """Load ``modules`` only when first used (the ones already imported stay as they are). Idempotent."""
    if not any(isinstance(finder, DeferringFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, DeferringFinder(modules))


def is_deferred(name: str) -> bool:
    """Whether the module ``name`` is imported and has not been loaded yet."""
    return isinstance(sys.modules.get(name), DeferredModule)


class DeferringFinder(MetaPathFinder):
    """First on ``sys.meta_path``: the spec the other finders give a deferred module, with a deferring loader."""

    def __init__(self, modules: dict[str, tuple[str, ...]]) -> None:
        self.modules = modules

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in self.modules:
            return None
        for finder in sys.meta_path:
            if finder is not self and hasattr(finder, "find_spec"):
                spec: ModuleSpec | None = finder.find_spec(fullname, path, target)
                if spec is not None:
                    # Python source only: an extension module's object is made by its own loader, and cannot wait.
                    if isinstance(spec.loader, SourceFileLoader | SourcelessFileLoader):
                        spec.loader = DeferringLoader(spec.loader, self.modules[fullname])
                    return spec
        return None


class DeferringLoader(Loader):
    """Makes the module a ``DeferredModule``; ``load`` runs the real loader into it later, once."""

    def __init__(self, loader: SourceFileLoader | SourcelessFileLoader, forwarded: tuple[str, ...]) -> None:
        self.loader = loader
        self.forwarded = forwarded
        self.lock = threading.RLock()
        self.loading = False

    def create_module(self, spec: ModuleSpec) -> None:
        return None  # the default module object: name, spec, loader, file and path set by the import system

    def exec_module(self, module: types.ModuleType) -> None:
        module.__class__ = DeferredModule
        module.__dict__[_LOADER] = self
        for name in self.forwarded:
            setattr(module, name, _forwarder(module, name))

    def load(self, module: types.ModuleType) -> bool:
        """Run the module's code, once; False while this thread is running it (its own code reads a name it
        has not defined yet: an AttributeError, as for any module being imported)."""
        with self.lock:  # another thread that finds it loading waits here, then finds it loaded
            if not isinstance(module, DeferredModule):
                return True
            if self.loading:
                return False
            self.loading = True
            for name in self.forwarded:  # the real module defines them; a version without one raises, not loops
                module.__dict__.pop(name, None)
            module.__loader__ = self.loader
            if module.__spec__ is not None:
                module.__spec__.loader = self.loader
            try:
                self.loader.exec_module(module)
            except BaseException:
                sys.modules.pop(module.__name__, None)  # as a failed import: the next import starts again
                raise
            finally:
                self.loading = False
            del module.__dict__[_LOADER]
            module.__class__ = types.ModuleType  # type: ignore[assignment]  # a plain module from now on
            return True


class DeferredModule(types.ModuleType):
    """A module whose code has not run yet: reading a missing attribute runs it (PEP 562's ``__getattr__``)."""

    def __getattr__(self, name: str) -> Any:
        if name == "__path__":  # a from-import asks whether it is a package: a package's path is set already
            raise AttributeError(name)
        loader: DeferringLoader = self.__dict__[_LOADER]
        if not loader.load(self):
            raise AttributeError(f"partially initialized module {self.__name__!r} has no attribute {name!r}")
        return getattr(self, name)


def _forwarder(module: types.ModuleType, name: str) -> Callable[..., Any]:
    def forward(*args: Any, **kwargs: Any) -> Any:
        loader: DeferringLoader | None = module.__dict__.get(_LOADER)
        if loader is not None:
            loader.load(module)
        return getattr(module, name)(*args, **kwargs)

    forward.__name__ = forward.__qualname__ = name
    forward.__module__ = module.__name__
    forward.__doc__ = f"Loads {module.__name__} and calls its {name} (service.ops.deferred_imports)."
    return forward
