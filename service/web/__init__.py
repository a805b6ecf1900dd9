"""The shared web layer: Connexion and ASGI adaptation, contracts, problems, CORS, body limits, the request observer."""
