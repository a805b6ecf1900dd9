"""Keys: the RS256 signing keys (rotated, published in the JWKS) and the sealing of secrets at rest."""
