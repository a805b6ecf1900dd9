"""Where a mailed link's flow started: ``email_links.return_to``.

The page a verification or password-reset link ends on ("Email address verified", "Password changed") links back
to where the flow that sent it started: the authorization request of the sign-in (made again, without its
``prompt``), or the developer console's account page. NULL for links sent without one (the command line, and
links from before this revision): their pages say so in words, as before.

Revision ID: 0010_link_return_to
Revises: 0009_credential_versions
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0010_link_return_to"
down_revision: str | Sequence[str] | None = "0009_credential_versions"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


# ADD COLUMN in place, never a batch copy (as 0008: on SQLite a batch copy would cascade to the rows that refer to
# the table); DROP COLUMN in place too (SQLite 3.35 and later).
def upgrade() -> None:
    op.add_column("email_links", sa.Column("return_to", sa.Text(), nullable=True))


def downgrade() -> None:
    op.execute("ALTER TABLE email_links DROP COLUMN return_to")
