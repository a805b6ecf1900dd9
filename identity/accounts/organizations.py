"""Organizations: ``{id, name, slug}``. Every user belongs to at least one."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import IntegrityError

from identity.common.clock import SYSTEM_CLOCK, Clock, new_id
from identity.common.tables import organizations
from identity.common.text import display_name
from identity.common.upsert import dialect_insert


@dataclass(frozen=True, slots=True)
class Organization:
    id: str
    name: str
    slug: str

    def as_dict(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "slug": self.slug}


def slugify(name: str) -> str:
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")[:60] or "org"


def check_name(name: str) -> str:
    return display_name(name, "the organization's name")


SLUG_ATTEMPTS = 5  # organizations of one name created at the same instant, each taking the next free slug
KNOWN_ORGANIZATIONS = 4096  # organizations ``known`` keeps at most (about 200 bytes each)


class OrganizationStore:
    def __init__(self, engine: Engine, clock: Clock = SYSTEM_CLOCK) -> None:
        self._engine = engine
        self._clock = clock
        self._known: dict[str, Organization] = {}

    def known(self, org_id: str) -> Organization | None:
        """``get``, kept once found: an organization never changes once created (no rename, no delete), so the
        token path (client_credentials names it in every token) reads it once. Unknown ids are never kept."""
        org = self._known.get(org_id)
        if org is None:
            org = self.get(org_id)
            if org is not None:
                if len(self._known) >= KNOWN_ORGANIZATIONS:
                    self._known.clear()  # a rare full table: start again rather than track ages
                self._known[org_id] = org
        return org

    def create(self, name: str) -> Organization:
        with self._engine.begin() as connection:
            return self.create_in(connection, name, self._clock.now())

    @staticmethod
    def create_in(connection: Connection, name: str, created_at: datetime) -> Organization:
        """Create inside the caller's transaction (sign-up creates a user and their organization at once).

        The slug is the name's, or the name's with the first free number (``acme-2``). Two organizations of one
        name created at once (two sign-ups) would pick the same: the insert gives way on the slug (``ON CONFLICT
        DO NOTHING``, which on PostgreSQL waits for the other insert to commit) and the next free one is taken."""
        name = check_name(name)
        base = slugify(name)
        for _ in range(SLUG_ATTEMPTS):
            taken = set(
                connection.scalars(
                    sa.select(organizations.c.slug).where(
                        sa.or_(organizations.c.slug == base, organizations.c.slug.like(f"{base}-%"))
                    )
                )
            )
            slug = (
                base
                if base not in taken
                else next(f"{base}-{n}" for n in range(2, len(taken) + 3) if f"{base}-{n}" not in taken)
            )
            org = Organization(new_id("org"), name, slug)
            insert = (
                dialect_insert(connection.dialect.name)(organizations)
                .values(id=org.id, name=org.name, slug=org.slug, created_at=created_at)
                .on_conflict_do_nothing(index_elements=["slug"])
                .returning(organizations.c.id)
            )
            if connection.execute(insert).first() is not None:
                return org
        raise RuntimeError(f"no free slug for {base!r} after {SLUG_ATTEMPTS} attempts")  # pragma: no cover

    def ensure(self, org_id: str, name: str, slug: str) -> Organization:
        """The organization ``org_id``, created with ``name`` and ``slug`` if absent (a service's own record,
        made by whichever node starts first; the others find it)."""
        try:
            with self._engine.begin() as connection:
                if connection.execute(_BY_ID, {"org_id": org_id}).first() is None:
                    connection.execute(
                        organizations.insert().values(id=org_id, name=name, slug=slug, created_at=self._clock.now())
                    )
        except IntegrityError:
            pass  # another node created it at the same moment
        found = self.get(org_id)
        if found is None:
            raise RuntimeError(f"the organization {org_id!r} could not be created")
        return found

    def get(self, org_id: str) -> Organization | None:
        with self._engine.connect() as connection:
            row = connection.execute(_BY_ID, {"org_id": org_id}).first()
        return Organization(row.id, row.name, row.slug) if row else None

    def list(self) -> list[Organization]:
        with self._engine.connect() as connection:
            rows = connection.execute(sa.select(organizations).order_by(organizations.c.name, organizations.c.id))
            return [Organization(row.id, row.name, row.slug) for row in rows]


# Built once: every application token looks its organization up, and building a statement costs more than running it.
_BY_ID = sa.select(organizations).where(organizations.c.id == sa.bindparam("org_id"))
