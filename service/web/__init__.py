"""The shared ground floor of the APIs: Connexion and ASGI adaptation, contracts, problems, CORS, body limits, the
edge; it imports nothing from the packages above it (pyproject.toml's layers of service)."""
