"""Device cookies (identity/accounts/device_cookies.py): signed, bounded, expiring, and naming one user each."""

from __future__ import annotations

from identity.accounts.device_cookies import MAX_VALUE, DeviceCookies
from tests.support.clocks import MovableClock
from tests.support.defaults import TUNING

POLICY = TUNING.device_cookies
KEY = b"k" * 32


def test_a_remembered_user_is_known_and_no_other_user_is() -> None:
    cookies = DeviceCookies(KEY, POLICY)
    value = cookies.remember(None, "usr_ana").value
    assert cookies.knows(value, "usr_ana")
    assert not cookies.knows(value, "usr_bo")
    assert not cookies.knows(None, "usr_ana")


def test_an_altered_entry_or_another_key_is_not_honoured() -> None:
    cookies = DeviceCookies(KEY, POLICY)
    value = cookies.remember(None, "usr_ana").value
    user, expiry, tag = value.split(".")
    assert not cookies.knows(f"usr_bo.{expiry}.{tag}", "usr_bo")  # another user under Ana's tag
    assert not cookies.knows(f"{user}.{int(expiry) + 10**6}.{tag}", "usr_ana")  # a later expiry
    assert not DeviceCookies(b"o" * 32, POLICY).knows(value, "usr_ana")  # signed under another service secret


def test_a_device_cookie_stops_counting_after_its_lifetime() -> None:
    clock = MovableClock()
    cookies = DeviceCookies(KEY, POLICY, clock)
    value = cookies.remember(None, "usr_ana").value
    clock.advance(POLICY.lifetime.total_seconds() + 1)
    assert not cookies.knows(value, "usr_ana")


def test_a_browser_remembers_its_newest_users_up_to_the_bound_and_stays_small() -> None:
    cookies = DeviceCookies(KEY, POLICY)
    value = None
    for n in range(POLICY.max_users + 3):
        value = cookies.remember(value, f"usr_{n:028d}").value  # ids as long as the service makes them
    assert value is not None and len(value) < MAX_VALUE
    assert len(value.split("~")) == POLICY.max_users
    assert cookies.knows(value, f"usr_{POLICY.max_users + 2:028d}")
    assert not cookies.knows(value, f"usr_{0:028d}")  # the oldest was dropped


def test_signing_in_again_renews_one_entry_per_user() -> None:
    cookies = DeviceCookies(KEY, POLICY)
    value = cookies.remember(cookies.remember(None, "usr_ana").value, "usr_ana").value
    assert len(value.split("~")) == 1


def test_an_oversized_cookie_is_not_read() -> None:
    cookies = DeviceCookies(KEY, POLICY)
    value = cookies.remember(None, "usr_ana").value
    assert not cookies.knows(value + "~" + "x" * MAX_VALUE, "usr_ana")
