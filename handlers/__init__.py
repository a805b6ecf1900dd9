"""Thin functions that Connexion routes to by operationId: take validated arguments, call the domain, reply."""
