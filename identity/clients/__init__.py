"""Clients (applications): their registration and its metadata checks, client authentication (RFC 6749 §2.3,
RFC 7523), the web origins that may call the provider, and the consents users gave them."""
