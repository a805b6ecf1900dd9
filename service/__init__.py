"""The Regional Menus service: the app factory and settings, above one package per concern (database, web,
menus_api, identity_api, console_api, ops, cli)."""

import warnings

__version__ = "0.2.0"

# Connexion imports starlette.testclient at start-up, which warns about its own test
# dependency; it concerns neither the service nor its users.
warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient` is deprecated")
