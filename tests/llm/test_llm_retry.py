"""The retry rules on their own: which statuses, which hints, the cap, the backoff."""

from __future__ import annotations

import pytest

from gigi_core.llm.retry import RetryPolicy, is_retryable_status, parse_retry_after, retry_hint
from gigi_core.testing.fake_providers import http_date


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503, 504, 529])
def test_retryable_statuses(status: int) -> None:
    assert is_retryable_status(status)


@pytest.mark.parametrize("status", [400, 401, 402, 403, 404, 413, 422, 501])
def test_never_retried_statuses(status: int) -> None:
    assert not is_retryable_status(status)


def test_retry_after_seconds_and_garbage() -> None:
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after("-3") is None  # negative hints are rejected (issue 15)
    assert parse_retry_after("soon") is None


def test_retry_after_http_date() -> None:
    value = http_date(30)
    wait = parse_retry_after(value)
    assert wait is not None and 28 <= wait <= 31
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past


def test_hint_precedence_ms_then_seconds_then_body() -> None:
    assert retry_hint({"Retry-After-Ms": "250", "retry-after": "9"}, 46.0) == 0.25
    assert retry_hint({"retry-after": "9"}, 46.0) == 9.0
    assert retry_hint({}, 46.0) == 46.0
    assert retry_hint({"retry-after": "nonsense"}, None) is None


def test_delay_uses_hint_and_fails_fast_above_cap() -> None:
    policy = RetryPolicy(max_retry_wait=60)
    assert policy.delay(1, 3.0) == 3.0
    assert policy.delay(1, 60.0) == 60.0
    assert policy.delay(1, 3600.0) is None


def test_backoff_is_exponential_jittered_and_capped() -> None:
    low = RetryPolicy(base_delay=0.5, max_backoff=8, jitter=lambda: 0.0)
    high = RetryPolicy(base_delay=0.5, max_backoff=8, jitter=lambda: 1.0)
    assert [high.backoff(n) for n in (1, 2, 3, 4, 5, 6)] == [0.5, 1, 2, 4, 8, 8]
    assert [low.backoff(n) for n in (1, 2, 3)] == [0.25, 0.5, 1.0]
    assert low.delay(2, None) == 0.5
