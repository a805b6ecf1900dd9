"""Consent per (user, client, organization); the developer console's sessions on the server.

``consents`` gains ``org_id``, in its primary key. A consent given before this revision was given to a
client, for whichever organization the user had chosen then, which was not recorded. It is kept where it
can be attributed without doubt, that is for users who belong to exactly one organization (the consent
can only have been for that one); it is dropped for users of several organizations, who are asked once
again, for the organization they sign in with. Dropping asks a question again; guessing would grant a
client an organization the user may never have allowed.

``console_sessions``: one row per console session (the SHA-256 of the id its cookie carries); signing out
of the console ends the row, so a copied cookie opens nothing afterwards, on any node.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ATTRIBUTE = """
UPDATE consents SET org_id = (SELECT m.org_id FROM memberships m WHERE m.user_id = consents.user_id)
WHERE (SELECT count(*) FROM memberships m WHERE m.user_id = consents.user_id) = 1
"""


def upgrade() -> None:
    with op.batch_alter_table("consents", schema=None) as batch_op:
        batch_op.add_column(sa.Column("org_id", sa.String(length=32), nullable=True))
    op.execute(ATTRIBUTE)
    op.execute("DELETE FROM consents WHERE org_id IS NULL")
    if op.get_bind().dialect.name == "sqlite":
        # SQLite cannot alter a primary key: the table is copied, org_id reflected as a key column.
        key_column = sa.Column("org_id", sa.String(length=32), primary_key=True, nullable=False)
        with op.batch_alter_table("consents", schema=None, recreate="always", reflect_args=(key_column,)) as batch_op:
            batch_op.create_foreign_key(
                "fk_consents_org_id_organizations", "organizations", ["org_id"], ["id"], ondelete="CASCADE"
            )
    else:
        op.drop_constraint("consents_pkey", "consents", type_="primary")
        op.alter_column("consents", "org_id", existing_type=sa.String(length=32), nullable=False)
        op.create_primary_key("consents_pkey", "consents", ["user_id", "client_id", "org_id"])
        op.create_foreign_key(
            "fk_consents_org_id_organizations", "consents", "organizations", ["org_id"], ["id"], ondelete="CASCADE"
        )

    op.create_table(
        "console_sessions",
        sa.Column("id_hash", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=32), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id_hash"),
    )
    with op.batch_alter_table("console_sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_console_sessions_expires_at"), ["expires_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("console_sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_console_sessions_expires_at"))
    op.drop_table("console_sessions")
    # One consent per (user, client) again: the organizations' consents of one client merge into one row is not
    # possible without choosing; every consent is dropped and users are asked again.
    op.execute("DELETE FROM consents")
    if op.get_bind().dialect.name == "sqlite":
        with op.batch_alter_table("consents", schema=None, recreate="always") as batch_op:
            batch_op.drop_constraint("fk_consents_org_id_organizations", type_="foreignkey")
            batch_op.drop_column("org_id")
    else:
        op.drop_constraint("fk_consents_org_id_organizations", "consents", type_="foreignkey")
        op.drop_constraint("consents_pkey", "consents", type_="primary")
        op.drop_column("consents", "org_id")
        op.create_primary_key("consents_pkey", "consents", ["user_id", "client_id"])
