"""Mail: the outbox's letters as messages (``letters.py``, ``templates/``) and how they leave (``transports.py``)."""
