"""The developer console: its app (``console_app.py``), web side, relying party, cookies and pages."""
