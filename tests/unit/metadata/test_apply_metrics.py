"""ApplyMetrics: Kafka's broker-metadata-metrics gauges and the apply lag histogram of live batches."""
from prometheus_client import CollectorRegistry

from tierlog.metadata.apply_metrics import PREFIX, ApplyMetrics

STARTED_MS = 1_000_000


def _metrics():
    registry = CollectorRegistry()
    return registry, ApplyMetrics(registry, live_since_ms=STARTED_MS)


def _value(registry, name, **labels):
    return registry.get_sample_value(PREFIX + name, labels)


def test_nothing_applied_yet():
    registry, _ = _metrics()
    assert _value(registry, "last_applied_record_offset") == -1
    assert _value(registry, "last_applied_record_timestamp") == -1
    assert _value(registry, "apply_lag_ms_count") == 0


def test_the_lag_is_the_apply_time_minus_the_append_time():
    registry, metrics = _metrics()
    metrics.batch_applied(41, STARTED_MS + 100, STARTED_MS + 112)
    assert _value(registry, "last_applied_record_offset") == 41
    assert _value(registry, "last_applied_record_timestamp") == STARTED_MS + 100
    assert _value(registry, "last_applied_record_lag_ms") == 12
    assert _value(registry, "apply_lag_ms_count") == 1
    assert _value(registry, "apply_lag_ms_sum") == 12
    assert _value(registry, "apply_lag_ms_bucket", le="10.0") == 0
    assert _value(registry, "apply_lag_ms_bucket", le="15.0") == 1


def test_the_histogram_keeps_every_live_batch_in_its_bucket():
    registry, metrics = _metrics()
    for offset, lag in enumerate((0, 3, 7, 49, 50, 51, 6000)):
        metrics.batch_applied(offset, STARTED_MS + 10, STARTED_MS + 10 + lag)
    assert _value(registry, "apply_lag_ms_bucket", le="1.0") == 1
    assert _value(registry, "apply_lag_ms_bucket", le="7.5") == 3
    assert _value(registry, "apply_lag_ms_bucket", le="50.0") == 5
    assert _value(registry, "apply_lag_ms_bucket", le="75.0") == 6
    assert _value(registry, "apply_lag_ms_bucket", le="5000.0") == 6
    assert _value(registry, "apply_lag_ms_bucket", le="+Inf") == 7
    assert _value(registry, "last_applied_record_offset") == 6


def test_batches_appended_before_the_node_started_are_replay_not_lag():
    registry, metrics = _metrics()
    metrics.batch_applied(5, STARTED_MS - 3_600_000, STARTED_MS + 20)      # from the local log, an hour old
    assert _value(registry, "apply_lag_ms_count") == 0 and metrics.replayed == 1
    assert _value(registry, "last_applied_record_offset") == 5             # the gauges follow it, as Kafka's
    assert _value(registry, "last_applied_record_lag_ms") == 3_600_020
    metrics.batch_applied(6, STARTED_MS, STARTED_MS + 4)                   # appended once running: counted
    assert _value(registry, "apply_lag_ms_count") == 1 and metrics.replayed == 1
    assert _value(registry, "last_applied_record_lag_ms") == 4


def test_a_leader_clock_ahead_of_ours_counts_as_no_lag():
    registry, metrics = _metrics()
    metrics.batch_applied(1, STARTED_MS + 50, STARTED_MS + 45)
    assert _value(registry, "last_applied_record_lag_ms") == 0
    assert _value(registry, "apply_lag_ms_bucket", le="1.0") == 1


def test_a_snapshot_moves_the_offset_and_timestamp_but_is_no_lag():
    registry, metrics = _metrics()
    metrics.snapshot_loaded(999, STARTED_MS - 10)
    assert _value(registry, "last_applied_record_offset") == 999
    assert _value(registry, "last_applied_record_timestamp") == STARTED_MS - 10
    assert _value(registry, "apply_lag_ms_count") == 0


def test_load_and_apply_errors_and_one_registry_per_node():
    registry, metrics = _metrics()
    other_registry, other = _metrics()          # a second node in the same process: no clash
    metrics.set_load_errors(3)
    metrics.set_apply_errors(2)
    other.batch_applied(7, STARTED_MS, STARTED_MS + 1)
    assert _value(registry, "metadata_load_error_count") == 3
    assert _value(registry, "metadata_apply_error_count") == 2
    assert _value(other_registry, "metadata_apply_error_count") == 0
    assert _value(other_registry, "metadata_load_error_count") == 0
    assert _value(registry, "apply_lag_ms_count") == 0 and _value(other_registry, "apply_lag_ms_count") == 1
