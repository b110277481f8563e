"""MetricsEndpoint serves a node's own registry over HTTP from its event loop, bounded, and closes with it."""
import asyncio
import gzip
import socket
import threading
import urllib.error
import urllib.request

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily

from tierlog.config import ConfigError
from tierlog.metadata.apply_metrics import ApplyMetrics
from tierlog.server import metrics_endpoint
from tierlog.server.metrics_endpoint import MetricsEndpoint


def _get(host: str, port: int, path: str = "/metrics") -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


async def _serve(registry, check):
    endpoint = await MetricsEndpoint.start(registry, "127.0.0.1", 0)
    try:
        return await check(*endpoint.bound)
    finally:
        await endpoint.close()


def test_serves_the_registry_on_an_ephemeral_port_until_closed():
    registry = CollectorRegistry()
    ApplyMetrics(registry, live_since_ms=0).batch_applied(17, 1_000, 1_004)
    bound = []

    async def check(host, port):
        bound.append((host, port))
        return await asyncio.to_thread(_get, host, port)

    status, text = asyncio.run(_serve(registry, check))
    assert status == 200 and bound[0][1] > 0
    assert "broker_metadata_metrics_last_applied_record_offset 17.0" in text
    assert 'broker_metadata_metrics_apply_lag_ms_bucket{le="5.0"} 1.0' in text
    with pytest.raises(OSError):
        socket.create_connection(bound[0], timeout=2).close()


def test_other_paths_and_bad_requests_get_http_errors():
    async def check(host, port):
        not_found = await asyncio.to_thread(_get, host, port, "/other")
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"nonsense\r\n\r\n")
        bad = await reader.read()
        writer.close()
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"GET /metrics HTTP/1.1\r\n" + b"X: " + b"y" * metrics_endpoint.REQUEST_HEAD_MAX_BYTES + b"\r\n\r\n")
        too_big = await reader.read()
        writer.close()
        return not_found, bad, too_big

    not_found, bad, too_big = asyncio.run(_serve(CollectorRegistry(), check))
    assert not_found[0] == 404
    assert bad.startswith(b"HTTP/1.1 400 ")
    assert too_big.startswith(b"HTTP/1.1 431 ")


def test_scrapes_beyond_the_limit_are_closed_at_once():
    async def check(host, port):
        idle = [await asyncio.open_connection(host, port) for _ in range(metrics_endpoint.CONNECTIONS_MAX)]
        # accepted in order: the first CONNECTIONS_MAX are scrapes in progress (they send nothing)
        reader, writer = await asyncio.open_connection(host, port)
        refused = await asyncio.wait_for(reader.read(), 5)     # closed without an answer
        for _, w in idle:
            w.close()
        writer.close()
        return refused

    assert asyncio.run(_serve(CollectorRegistry(), check)) == b""


def test_a_port_in_use_is_a_config_error():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(ConfigError, match=r"metrics\.prometheus\.listener: cannot listen on 127\.0\.0\.1:"):
            asyncio.run(MetricsEndpoint.start(CollectorRegistry(), "127.0.0.1", taken.getsockname()[1]))


def _request(host: str, port: int, method: str = "GET", headers: dict | None = None) -> tuple[int, dict, bytes]:
    req = urllib.request.Request(f"http://{host}:{port}/metrics", method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def test_prometheus_clients_exposition_head_gzip_openmetrics_and_filters():
    registry = CollectorRegistry()
    ApplyMetrics(registry, live_since_ms=0).batch_applied(17, 1_000, 1_004)

    async def check(host, port):
        ask = [("GET", {}), ("HEAD", {}), ("GET", {"Accept-Encoding": "gzip"}),
               ("GET", {"Accept": "application/openmetrics-text; version=1.0.0"}), ("POST", {}), ("OPTIONS", {})]
        answers = [await asyncio.to_thread(_request, host, port, m, h) for m, h in ask]
        filtered = await asyncio.to_thread(
            _get, host, port, "/metrics?name[]=broker_metadata_metrics_last_applied_record_offset")
        return answers, filtered

    (plain, head, zipped, openmetrics, post, options), filtered = asyncio.run(_serve(registry, check))
    assert plain[0] == 200 and plain[1]["Content-Type"].startswith("text/plain; version=0.0.4")
    assert head[0] == 200 and head[2] == b"" and int(head[1]["Content-Length"]) == len(plain[2])
    assert zipped[1]["Content-Encoding"] == "gzip" and gzip.decompress(zipped[2]) == plain[2]
    assert openmetrics[1]["Content-Type"].startswith("application/openmetrics-text")
    assert openmetrics[2].endswith(b"# EOF\n")
    assert post[0] == 405 and options[0] == 200
    assert filtered[1].splitlines()[-1] == "broker_metadata_metrics_last_applied_record_offset 17.0"


def test_a_failing_collector_is_a_500_and_the_endpoint_goes_on():
    class Broken:
        def collect(self):
            raise RuntimeError("broken")

    registry = CollectorRegistry()
    registry.register(Broken())

    async def check(host, port):
        return [await asyncio.to_thread(_get, host, port) for _ in range(2)]

    assert [status for status, _ in asyncio.run(_serve(registry, check))] == [500, 500]


def test_prepare_runs_on_the_loop_and_the_collection_on_a_worker_thread():
    threads = {}

    class TwoPhase:
        def prepare(self):
            threads["prepare"] = threading.get_ident()

        def collect(self):
            threads["collect"] = threading.get_ident()
            yield GaugeMetricFamily("two_phase", "a snapshot's value", value=1)

    registry = CollectorRegistry()
    collector = TwoPhase()
    registry.register(collector)

    async def serve():
        loop_thread = threading.get_ident()
        endpoint = await MetricsEndpoint.start(registry, "127.0.0.1", 0, prepare=collector.prepare)
        try:
            status, text = await asyncio.to_thread(_get, *endpoint.bound)
        finally:
            await endpoint.close()
        return loop_thread, status, text

    loop_thread, status, text = asyncio.run(serve())
    assert status == 200 and "two_phase 1.0" in text
    assert threads["prepare"] == loop_thread != threads["collect"]
