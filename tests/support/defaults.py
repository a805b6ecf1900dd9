"""The service's default settings, for tests that build its parts by hand: each value comes from
``service/settings/table.py``, never a copy of it."""

from __future__ import annotations

from datetime import timedelta

from service.menus_api.limit_storage import RedisTuning
from service.settings import Settings

DEFAULTS = Settings(database_url="sqlite://")
POOL = DEFAULTS.database_pool()
REDIS = RedisTuning.of(DEFAULTS)
THROTTLE = DEFAULTS.tuning().throttle
ACCOUNT_LIMIT = THROTTLE.account_limit
ADDRESS_LIMIT = THROTTLE.address_limit
TUNING = DEFAULTS.tuning()
LIFETIMES = DEFAULTS.lifetimes()
SIGNING_KEYS_MAX_AGE = TUNING.signing_keys_max_age
CODE_LIFETIME = LIFETIMES.code
SIGN_IN_WINDOW = THROTTLE.window
PURGE_GRACE = TUNING.purge_grace
LAST_USED_RESOLUTION = timedelta(seconds=DEFAULTS.last_used_resolution)
HEAD_LINE_LIMIT = DEFAULTS.head_line_limit
HEAD_LIMIT = DEFAULTS.head_limit
HEAD_FIELDS_LIMIT = DEFAULTS.head_fields_limit
REFRESH_TOKEN_TTL = DEFAULTS.refresh_token_ttl
PUBLIC_REFRESH_TTL = DEFAULTS.public_refresh_ttl
API_KEY_CACHE_ENTRIES = DEFAULTS.api_key_cache_entries
KEY_REVOCATION_CHECK = DEFAULTS.key_revocation_check
KEY_REVOCATION_BOUND = DEFAULTS.key_revocation_bound
DELIVERY = TUNING.delivery
