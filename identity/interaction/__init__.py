"""The browser sign-in as an interaction policy (``policy``: prompts, each with its checks) and one small handler
per page (``sign_in_pages`` builds them)."""
