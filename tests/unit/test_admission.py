"""The worker's admission rule (service/web/admission.py): a bound of requests in flight and of time queued."""

from __future__ import annotations

import asyncio

import pytest

from service.web.admission import ARRIVED, Admission


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_admits_up_to_max_in_flight_refuses_the_next_and_admits_again_once_one_is_released() -> None:
    refused: list[str] = []
    admission = Admission(2, 0.5, on_refused=refused.append, clock=Clock())
    assert admission.admit({}) and admission.admit({})
    assert not admission.admit({})
    admission.release()
    assert admission.admit({})
    assert refused == ["in_flight"] and admission.in_flight == 2


def test_refuses_a_request_queued_longer_than_max_queue_wait_and_counts_it_nowhere() -> None:
    clock, refused = Clock(), []
    admission = Admission(10, 0.5, on_refused=refused.append, clock=clock)
    assert admission.admit({ARRIVED: clock.now - 0.5})  # at the bound: taken
    assert not admission.admit({ARRIVED: clock.now - 0.51})
    assert admission.admit({})  # no stamp (a server other than ours): only the count applies
    assert refused == ["waited"] and admission.in_flight == 2


def test_counts_the_event_loops_lag_as_time_queued_before_the_head_was_read() -> None:
    clock, refused = Clock(), []
    admission = Admission(10, 0.5, on_refused=refused.append, clock=clock)
    admission.loop_lag = 0.25  # a turn of the loop takes that long: a head waits about as long to be read
    assert admission.admit({ARRIVED: clock.now - 0.25})  # 0.25 s stamped + 0.25 s of lag: at the bound, taken
    assert not admission.admit({ARRIVED: clock.now - 0.375})
    assert admission.admit({})  # no stamp: only the count applies
    assert refused == ["waited"]


def test_a_stall_of_the_loop_after_the_head_was_read_is_counted_once() -> None:
    """Two requests sent together: both heads are read in one turn, then the first one's turn holds the loop for
    0.3 s, and the watch's timer runs 0.3 s late. The second request has waited 0.3 s, under the bound: the lag is
    that same wait, already in its stamp, and must not be added to it again."""
    clock, refused = Clock(), []
    admission = Admission(10, 0.5, on_refused=refused.append, clock=clock)
    read = clock.now
    clock.now += 0.3
    admission.loop_lag, admission.lag_ended = 0.3, clock.now  # the stall ran from the head's read to now
    assert admission.admit({ARRIVED: read})
    assert admission.unseen(read) == 0.0
    assert admission.unseen(read - 0.1) == 0.0  # read before the stall began: nothing unseen either
    assert admission.unseen(read + 0.2) == pytest.approx(0.2)  # read 0.2 s into it: that much came before the read
    assert admission.unseen(clock.now) == pytest.approx(0.3)  # read as it ended: the lag stands for the wait unseen
    after_the_stall = clock.now
    clock.now += 0.25
    assert not admission.admit({ARRIVED: after_the_stall})  # 0.25 s stamped + 0.3 s of lag before the read
    assert refused == ["waited"]


def test_the_loop_watch_records_how_late_its_timer_ran_until_stopped() -> None:
    stopping = asyncio.Event()
    readings = iter([10.0, 10.25])  # before and after a timer of 0 s: it ran 0.25 s late

    def clock() -> float:
        now = next(readings)
        if now == 10.25:
            stopping.set()
        return now

    admission = Admission(10, 0.5, clock=clock)
    asyncio.run(admission.watch_loop(stopping, every=0))
    assert admission.loop_lag == 0.25 and admission.lag_ended == 10.25
