"""The Regional Menus service: app factory, settings, storage and command line."""

import warnings

__version__ = "0.1.0"

# Connexion imports starlette.testclient at start-up, which warns about its own test
# dependency; it concerns neither the service nor its users.
warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient` is deprecated")
