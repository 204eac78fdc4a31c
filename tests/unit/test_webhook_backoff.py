"""When a failed webhook delivery is tried again (ledger/app/webhooks.py): exponential
backoff with jitter from an injected random source, and a receiver's Retry-After on 429 and
503 (seconds or an HTTP date), bounded by retry_base and retry_max."""

from __future__ import annotations

from email.utils import formatdate

import pytest

from ledger.app.webhooks import JITTER, Sent, WebhookConfig, retry_after_seconds

CONFIG = WebhookConfig(retry_base=5.0, retry_max=3600.0)
NOW = 1_800_000_000.0


def test_the_backoff_doubles_up_to_retry_max_and_jitter_only_shortens_it() -> None:
    assert [CONFIG.backoff(n, rand=lambda: 0.0) for n in range(1, 6)] == [5, 10, 20, 40, 80]
    assert CONFIG.backoff(30, rand=lambda: 0.0) == 3600
    assert CONFIG.backoff(10_000, rand=lambda: 0.0) == 3600  # no overflow
    assert CONFIG.backoff(1, rand=lambda: 0.5) == pytest.approx(5 * (1 - JITTER / 2))
    assert CONFIG.backoff(30, rand=lambda: 0.999999) == pytest.approx(3600 * (1 - JITTER),
                                                                     rel=1e-5)
    for n in (1, 3, 12, 30):
        for r in (0.0, 0.25, 0.5, 0.75, 0.999):
            wait = CONFIG.backoff(n, rand=lambda r=r: r)
            cap = min(3600, 5 * 2 ** (n - 1))
            assert cap * (1 - JITTER) <= wait <= cap <= CONFIG.retry_max
    # A source out of range is held within it.
    assert CONFIG.backoff(2, rand=lambda: -3.0) == 10
    assert CONFIG.backoff(2, rand=lambda: 7.0) == pytest.approx(10 * (1 - JITTER))


def test_endpoints_failing_together_spread_out() -> None:
    """Many endpoints whose receiver failed at once: with the default random source their
    retries no longer all fall on the same second (a lockstep at every doubling)."""
    for attempt in (1, 4, 30):
        waits = {round(CONFIG.backoff(attempt), 3) for _ in range(100)}
        assert len(waits) > 50, attempt


def test_retries_go_on_past_24_hours() -> None:
    """API.md: retried with exponential backoff for at least 24 hours (never given up: every
    attempt has a next one, at most retry_max later)."""
    elapsed, attempt = 0.0, 0
    while elapsed <= 86400:
        attempt += 1
        wait = CONFIG.backoff(attempt, rand=lambda: 0.999)
        assert 0 < wait <= CONFIG.retry_max
        elapsed += wait
    assert attempt > 24


@pytest.mark.parametrize("value,seconds", [
    ("120", 120.0), (" 7 ", 7.0), ("0", 0.0),
    (formatdate(NOW + 90, usegmt=True), 90.0),  # IMF-fixdate
    ("Sun, 06 Nov 1994 08:49:37 GMT", 0.0),  # a date passed: now
    ("-5", None), ("1.5", None), ("soon", None), ("", None), ("٣", None)])
def test_retry_after_is_seconds_or_an_http_date(value: str, seconds: float | None) -> None:
    assert retry_after_seconds(value, NOW) == seconds


@pytest.mark.parametrize("status,header,wait", [
    (429, "120", 120.0), (503, "120", 120.0),
    (503, formatdate(NOW + 600, usegmt=True), 600.0),
    (429, "86400", 3600.0),  # at most retry_max
    (429, "0", 5.0), (503, "Sun, 06 Nov 1994 08:49:37 GMT", 5.0),  # at least retry_base
    (429, "-5", 10.0), (503, "later", 10.0),  # nonsense: the backoff (attempt 2)
    (500, "120", 10.0), (410, "120", 10.0), ("timeout", None, 10.0)])  # not 429 / 503
def test_a_429_or_503_retry_after_sets_the_next_wait(status: int | str, header: str | None,
                                                     wait: float) -> None:
    sent = Sent(status, 12, header)
    assert CONFIG.wait(2, sent, NOW, rand=lambda: 0.0) == wait
