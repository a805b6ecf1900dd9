from service.ratelimit import RateLimiter


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_bucket_allows_the_limit_then_refuses() -> None:
    limiter = RateLimiter(3, clock=Clock())
    decisions = [limiter.take("k") for _ in range(4)]
    assert [d.allowed for d in decisions] == [True, True, True, False]
    assert [d.remaining for d in decisions] == [2, 1, 0, 0]


def test_refused_request_says_when_to_retry() -> None:
    limiter = RateLimiter(60, clock=Clock())  # one token a second
    for _ in range(60):
        limiter.take("k")
    refused = limiter.take("k")
    assert not refused.allowed and refused.retry_after == 1


def test_bucket_refills_continuously() -> None:
    clock = Clock()
    limiter = RateLimiter(60, clock=clock)
    for _ in range(60):
        limiter.take("k")
    clock.now += 2.0
    assert limiter.take("k").allowed and limiter.take("k").allowed
    assert not limiter.take("k").allowed


def test_reset_is_seconds_until_full() -> None:
    clock = Clock()
    limiter = RateLimiter(60, clock=clock)
    for _ in range(30):
        decision = limiter.take("k")
    assert decision.reset == 30


def test_keys_have_separate_buckets() -> None:
    limiter = RateLimiter(1, clock=Clock())
    assert limiter.take("a").allowed
    assert limiter.take("b").allowed
    assert not limiter.take("a").allowed


def test_full_buckets_are_forgotten_when_memory_is_bounded() -> None:
    clock = Clock()
    limiter = RateLimiter(60, clock=clock, max_keys=2)
    limiter.take("a")
    limiter.take("b")
    clock.now += 120
    limiter.take("c")
    assert len(limiter._buckets) == 1
