"""Requests the service makes to other servers from its background workers, never on a request's path: the
logout tokens of OpenID Connect Back-Channel Logout 1.0 (``backchannel.py``)."""
