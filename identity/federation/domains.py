"""The email domains organizations claim: an operator confirms each once (``orgs claim-domain ORG DOMAIN``), and no
two organizations hold one. An address in a claimed domain signs in at that organization's provider.

A domain is kept lower case, in its ASCII form (IDNA A-labels), without a trailing dot: ``Corp.Example.`` and
``corp.example`` are one domain. It must have two labels at least; a claim covers the domain itself, not its
subdomains (``eu.corp.example`` is a claim of its own).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from identity.common import audit
from identity.common.clock import SYSTEM_CLOCK, Clock, utc
from identity.common.errors import InvalidInput
from identity.common.tables import organizations
from identity.federation.tables import federation_domains

LABEL = re.compile(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?")
MAX_DOMAIN = 253  # RFC 1035 §2.3.4
CLAIMED_MAX_AGE = 5.0  # seconds a node answers "is any domain claimed?" from memory


@dataclass(frozen=True, slots=True)
class ClaimedDomain:
    domain: str
    org_id: str
    claimed_at: datetime

    def as_dict(self) -> dict[str, str]:
        return {"domain": self.domain, "org_id": self.org_id, "claimed_at": self.claimed_at.isoformat()}


def normalize(domain: str) -> str:
    """The domain as it is kept; ``InvalidInput`` when it is not a domain name of two labels or more."""
    text = domain.strip().rstrip(".").lower()
    try:
        ascii_form = text.encode("idna").decode("ascii") if text else ""
    except UnicodeError:
        ascii_form = ""
    labels = ascii_form.split(".")
    if len(ascii_form) > MAX_DOMAIN or len(labels) < 2 or not all(LABEL.fullmatch(label) for label in labels):
        raise InvalidInput("the domain must be a domain name such as corp.example")
    return ascii_form


def domain_of(email: str) -> str | None:
    """The domain of an address, normalized; None when it has none that could be claimed."""
    _, at, domain = email.strip().rpartition("@")
    if not at:
        return None
    try:
        return normalize(domain)
    except InvalidInput:
        return None


class DomainClaims:
    def __init__(self, engine: Engine, clock: Clock = SYSTEM_CLOCK) -> None:
        self._engine = engine
        self._clock = clock
        self._any: tuple[float, bool] | None = None  # (when read, on the monotonic clock; whether any is claimed)
        self._lock = threading.Lock()

    def claim(self, org_id: str, domain: str) -> ClaimedDomain:
        """The operator's confirmation that ``org_id`` may claim ``domain``; claiming it again for the same
        organization changes nothing; ``InvalidInput`` when another organization holds it or the organization is
        unknown."""
        domain = normalize(domain)
        with self._engine.begin() as connection:
            if connection.scalar(sa.select(organizations.c.id).where(organizations.c.id == org_id)) is None:
                raise InvalidInput(f"no organization has the id {org_id!r}")
            held = connection.execute(
                sa.select(federation_domains).where(federation_domains.c.domain == domain)
            ).first()
            if held is not None:
                if held.org_id != org_id:
                    raise InvalidInput(f"the domain {domain} is claimed by another organization")
                return ClaimedDomain(held.domain, held.org_id, utc(held.claimed_at))
            at = self._clock.now()
            try:
                with connection.begin_nested():
                    connection.execute(federation_domains.insert().values(domain=domain, org_id=org_id, claimed_at=at))
            except IntegrityError:  # claimed at the same moment by another command
                raise InvalidInput(f"the domain {domain} is claimed by another organization") from None
        self._any = None
        audit.record(audit.DOMAIN_CLAIMED, org_id=org_id)
        return ClaimedDomain(domain, org_id, at)

    def release(self, org_id: str, domain: str) -> bool:
        """The organization no longer claims the domain; True when it did."""
        domain = normalize(domain)
        with self._engine.begin() as connection:
            gone = connection.execute(
                federation_domains.delete().where(
                    federation_domains.c.domain == domain, federation_domains.c.org_id == org_id
                )
            ).rowcount
        self._any = None
        return bool(gone)

    def holder(self, domain: str) -> str | None:
        """The organization that holds ``domain`` (normalized), or None."""
        with self._engine.connect() as connection:
            found = connection.scalar(
                sa.select(federation_domains.c.org_id).where(federation_domains.c.domain == domain)
            )
        return str(found) if found is not None else None

    def of(self, org_id: str) -> list[ClaimedDomain]:
        query = sa.select(federation_domains).where(federation_domains.c.org_id == org_id)
        with self._engine.connect() as connection:
            rows = connection.execute(query.order_by(federation_domains.c.domain)).all()
        return [ClaimedDomain(row.domain, row.org_id, utc(row.claimed_at)) for row in rows]

    def all(self) -> list[ClaimedDomain]:
        with self._engine.connect() as connection:
            rows = connection.execute(sa.select(federation_domains).order_by(federation_domains.c.domain)).all()
        return [ClaimedDomain(row.domain, row.org_id, utc(row.claimed_at)) for row in rows]

    def any_claimed(self, monotonic: Callable[[], float] | None = None) -> bool:
        """Whether any organization claims a domain (the sign-in page asks for the email first only then); read
        again at most every ``CLAIMED_MAX_AGE`` seconds."""
        now = (monotonic or self._clock.monotonic)()
        kept = self._any
        if kept is not None and now - kept[0] < CLAIMED_MAX_AGE:
            return kept[1]
        with self._engine.connect() as connection:
            found = connection.scalar(sa.select(federation_domains.c.domain).limit(1)) is not None
        with self._lock:
            self._any = (now, found)
        return found
