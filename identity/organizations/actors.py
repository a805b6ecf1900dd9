"""Who acts on an organization: a member in the console, a client of the organization with a management token
(acting with an admin's powers), or the operator at the command line (an owner's)."""

from __future__ import annotations

from dataclasses import dataclass

USER, CLIENT, COMMAND_LINE = "user", "client", "command_line"


@dataclass(frozen=True, slots=True)
class Actor:
    kind: str  # USER, CLIENT or COMMAND_LINE
    id: str | None  # the user's or the client's id; None for the command line
    org_id: str  # the organization acted on (every record reached is of this one)
    role: str  # the powers: a user's role; ``admin`` for a client; ``owner`` for the command line
    network: str | None = None  # the address the request came from (after the trusted proxies)
    org_name: str = ""  # for messages

    @classmethod
    def member(cls, user_id: str, org_id: str, role: str, network: str | None, org_name: str = "") -> Actor:
        return cls(USER, user_id, org_id, role, network, org_name)

    @classmethod
    def client(cls, client_id: str, org_id: str, network: str | None) -> Actor:
        """A client of the organization with a management token: an admin's powers, never an owner's."""
        return cls(CLIENT, client_id, org_id, "admin", network, "this organization")

    @classmethod
    def command_line(cls, org_id: str) -> Actor:
        return cls(COMMAND_LINE, None, org_id, "owner", None)

    @property
    def user_id(self) -> str | None:
        return self.id if self.kind == USER else None

    @property
    def client_id(self) -> str | None:
        return self.id if self.kind == CLIENT else None

    @property
    def whose(self) -> str:
        return self.org_name or "this organization"
