"""Errors of the identity domain that callers turn into their own answers."""


class InvalidInput(ValueError):
    """Bad input from an operator or a form; the message is safe to show."""


class UnknownRecord(LookupError):
    """No organization, user or client has that id."""
