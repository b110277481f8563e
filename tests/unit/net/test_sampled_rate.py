"""Kafka's windowed rate and the quota throttle time (net/sampled_rate.py)."""
from tierlog.net.sampled_rate import SampledRate, throttle_ms


def test_a_first_burst_counts_over_samples_minus_one_windows():
    r = SampledRate(11, 1000, now_ms=0)
    r.record(1000, 0)
    assert r.window_ms_at(0) == 10_000 and r.rate(0) == 100.0
    assert r.window_ms_at(500) == 10_500 and r.window_ms_at(10_999) == 10_999


def test_samples_roll_and_old_ones_are_forgotten():
    r = SampledRate(3, 1000, now_ms=0)
    r.record(300, 0)
    r.record(300, 1000)          # a second sample
    assert r.total(1500) == (600, 2)
    assert r.total(3500) == (300, 1)     # the sample of 0 ms is older than 3 windows
    assert r.total(10_000) == (0, 0)


def test_throttle_brings_the_rate_back_to_the_quota_and_is_capped():
    r = SampledRate(2, 1000, now_ms=0)
    r.record(200, 0)              # 200 per s over the minimum 1 s window
    assert throttle_ms(r, 100, 0) == 1000          # (200 - 100) / 100 * 1000 ms
    assert throttle_ms(r, 400, 0) == 0
    r.record(10_000, 0)
    assert throttle_ms(r, 100, 0) == 2000          # at most the samples' whole span
    assert r.average(0) == 5100
