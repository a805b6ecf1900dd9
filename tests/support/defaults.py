"""The service's default settings, for tests that build its parts by hand: each value comes from
``service/settings.py``, never a copy of it."""

from __future__ import annotations

from datetime import timedelta

from service.menus_api.ratelimit import RedisTuning
from service.settings import Settings

DEFAULTS = Settings(database_url="sqlite://")
POOL = DEFAULTS.database_pool()
REDIS = RedisTuning.of(DEFAULTS)
THROTTLE = DEFAULTS.tuning().throttle
ACCOUNT_LIMIT = THROTTLE.account_limit
ADDRESS_LIMIT = THROTTLE.address_limit
SIGNING_KEYS_MAX_AGE = DEFAULTS.tuning().signing_keys_max_age
LAST_USED_RESOLUTION = timedelta(seconds=DEFAULTS.last_used_resolution)
