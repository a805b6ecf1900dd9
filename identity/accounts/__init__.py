"""Accounts: users, their passwords and organizations, sign-in throttling and device cookies, verified email
addresses, password resets and what a person does to their own account."""
