"""What every concept of the identity domain shares: the clock, the tables and the one transaction kind, the errors,
the issuer's URLs, the audit trail, the text rule, and the words the domain registers. It imports no other package."""
