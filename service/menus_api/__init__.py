"""The menus API edge: its Connexion app, the API-key gate, the rate limit and the answer cache."""
