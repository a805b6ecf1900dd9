"""The Regional Menus service: the command line over the app factory, over one package per concern, floors that
point down (pyproject.toml): cli -> app -> (menus_api | identity_api | console_api | mail | outbound) -> ops ->
database -> web -> settings."""

import warnings

__version__ = "0.2.0"

# Connexion imports starlette.testclient at start-up, which warns about its own test
# dependency; it concerns neither the service nor its users.
warnings.filterwarnings("ignore", message="Using `httpx` with `starlette.testclient` is deprecated")
