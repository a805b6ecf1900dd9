"""The identity API edge: its Connexion app over the OpenID Connect provider, and its HTTP shapes."""
