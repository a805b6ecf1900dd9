"""What leaves by mail and by the outbox: the outbox itself (mail and logout tokens, delivered from the state
database) and the single-use links that mails carry."""
