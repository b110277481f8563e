"""MetricsEndpoint serves a node's own registry over HTTP and closes with the node."""
import asyncio
import socket
import urllib.request

import pytest
from prometheus_client import CollectorRegistry

from tierlog.config import ConfigError
from tierlog.metadata.apply_metrics import ApplyMetrics
from tierlog.server.metrics_endpoint import MetricsEndpoint


def _scrape(host: str, port: int) -> str:
    with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=5) as resp:
        assert resp.status == 200
        return resp.read().decode()


def test_serves_the_registry_on_an_ephemeral_port_until_closed():
    registry = CollectorRegistry()
    ApplyMetrics(registry, live_since_ms=0).batch_applied(17, 1_000, 1_004)
    endpoint = MetricsEndpoint.start(registry, "127.0.0.1", 0)
    host, port = endpoint.bound
    try:
        text = _scrape(host, port)
    finally:
        asyncio.run(endpoint.close())
    assert port > 0
    assert "broker_metadata_metrics_last_applied_record_offset 17.0" in text
    assert 'broker_metadata_metrics_apply_lag_ms_bucket{le="5.0"} 1.0' in text
    with pytest.raises(OSError):
        socket.create_connection((host, port), timeout=2).close()


def test_a_port_in_use_is_a_config_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(ConfigError, match=r"metrics\.prometheus\.listener: cannot listen on 127\.0\.0\.1:"):
            MetricsEndpoint.start(CollectorRegistry(), "127.0.0.1", taken.getsockname()[1])
