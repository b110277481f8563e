"""KIP-612's connection creation rates (net/connection_rates.py)."""
from tierlog.net.connection_rates import ConnectionRates


def test_a_listener_over_its_rate_holds_new_connections_and_the_inter_broker_one_skips_the_broker_rate():
    rates = ConnectionRates(2, 1000, broker_rate=100, listener_rates={"EXTERNAL": 2}, exempt_listener="INTERNAL",
                            ip_quota=lambda ip: None, now_ms=0)
    assert [rates.accept("EXTERNAL", "10.0.0.1", 0)[0] for _ in range(2)] == [0, 0]
    assert rates.accept("EXTERNAL", "10.0.0.1", 0) == (500, 0)     # 3/s over 2/s for a 1 s window
    assert all(rates.accept("INTERNAL", "10.0.0.1", 0) == (0, 0) for _ in range(500))   # neither limit applies
    assert rates.accept("OTHER", "10.0.0.1", 0) == (0, 0)


def test_the_broker_rate_counts_every_listener_but_the_inter_broker_one():
    rates = ConnectionRates(2, 1000, broker_rate=2, listener_rates={}, exempt_listener="INTERNAL",
                            ip_quota=lambda ip: None, now_ms=0)
    assert rates.accept("A", "h", 0) == (0, 0) and rates.accept("B", "h", 0) == (0, 0)
    assert rates.accept("A", "h", 0)[0] > 0


def test_an_ip_over_its_quota_is_closed_after_its_throttle_time():
    quotas = {"10.0.0.1": 1.0}
    rates = ConnectionRates(2, 1000, None, {}, None, quotas.get, 0)
    assert rates.accept("L", "10.0.0.1", 0) == (0, 0)
    assert rates.accept("L", "10.0.0.1", 0) == (0, 1000)
    assert rates.accept("L", "10.0.0.2", 0) == (0, 0)
    assert rates.accept("L", "10.0.0.1", 5000) == (0, 0)           # the old samples are forgotten
