"""Requests the service makes to other servers from its background workers, never on a request's path: the
logout tokens of OpenID Connect Back-Channel Logout 1.0 (``backchannel.py``). Every host is resolved once by
``addresses.py`` and each address checked against the outbound rule before a connection is made."""
