"""Sessions: the browser's session with the provider, the developer console's, and telling the clients that hold a
session that it ended (OpenID Connect Back-Channel Logout 1.0)."""
