"""One typed settings object, built from one table: each setting is one row with its name, its ``MENUS_*``
variable, its type, its default, its bounds and what it is for (``table.py``).

- ``table.py``: the rows (``SettingsTable``), the only place a default is written;
- ``rows.py``: what a row is (``setting(...)``) and how the table is read back (``rows``);
- ``grammars.py``: how a variable's text becomes a value, and the error naming the variable otherwise;
- ``typed.py``: ``Settings``, the table read from the environment, and the policies it hands to the domain;
- ``smtp.py``: the grammar of ``MENUS_SMTP_URL``, which the mail transports connect to.
"""

from service.settings.grammars import (
    MEMORY_STORAGE as DEFAULT_RATE_LIMIT_STORAGE,
)
from service.settings.grammars import (
    ConfigurationError,
    check_storage_url,
    parse_networks,
)
from service.settings.smtp import SmtpServer, SmtpUrlError
from service.settings.table import DEFAULT_HOST, DEFAULT_PORT, default_database_url
from service.settings.typed import (
    Pool,
    Settings,
    max_keys_per_org_from,
    outbound_loopback_from,
    secret_keys_from,
)

__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "DEFAULT_RATE_LIMIT_STORAGE",
    "ConfigurationError",
    "Pool",
    "Settings",
    "SmtpServer",
    "SmtpUrlError",
    "check_storage_url",
    "default_database_url",
    "max_keys_per_org_from",
    "outbound_loopback_from",
    "parse_networks",
    "secret_keys_from",
]
