"""Serving the app: uvicorn (one process) or gunicorn with uvicorn workers, and the one subclass of a server class
the service keeps, the request-head bound of ``bounded_http``. Only the command line imports this package; the
domain, the handlers and the APIs never do (an import-linter contract in pyproject.toml)."""
