"""Organizations run themselves: their members and roles, invitations by mail, their OAuth clients, and the
organization's own audit trail (docs/console.md, openapi/management.yaml).

The layer above ``identity.tokens`` (removing a member ends their tokens for the organization) and below
``identity.interaction`` (signing up through an invitation joins its organization). Whoever acts is an
``Actor`` (``actors.py``): a member in the console, a client of the organization with a management token, or
the command line. What each may do is ``roles.py``; what was done is written to the trail (``trail.py``) in the
transaction that does it.
"""
