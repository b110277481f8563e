"""`tierlog up`'s monitoring files: the per-node metrics ports, the scrape config and the Grafana dashboard."""
import json
import re
from pathlib import Path

import pytest

from tierlog.broker.broker_metrics import TOPIC_COUNTERS
from tierlog.cli.cmd_up import METRICS_PORT_OFFSET, metrics_listener
from tierlog.cli.errors import CliError
from tierlog.cli.monitoring import (
    DASHBOARD_UID,
    SHARE_TRAFFIC_METRICS,
    dashboard_json,
    dashboard_metrics,
    prometheus_config,
)

DOCS_DASHBOARD = Path(__file__).parents[3] / "docs" / "grafana" / "tierlog.json"
METRICS_DOC = Path(__file__).parents[3] / "docs" / "metrics.md"


def test_node_n_gets_the_base_port_plus_n():
    assert metrics_listener(4, "127.0.0.1", 9092, None) == f"127.0.0.1:{9092 + METRICS_PORT_OFFSET + 4}"
    assert metrics_listener(4, "127.0.0.1", 9092, "0.0.0.0:7000") == "0.0.0.0:7004"
    assert metrics_listener(4, "127.0.0.1", 9092, "0.0.0.0:0") == "0.0.0.0:0"        # a free port each
    assert metrics_listener(4, "127.0.0.1", 9092, "") == ""                          # off
    with pytest.raises(CliError, match="metrics.prometheus.listener expects HOST:PORT"):
        metrics_listener(1, "127.0.0.1", 9092, "7000")
    with pytest.raises(CliError, match=r"metrics port 65536 \(the metrics.prometheus.listener port \+ node id\)"):
        metrics_listener(1, "127.0.0.1", 9092, "h:65535")
    with pytest.raises(CliError, match=r"metrics port 65736 \(the --listen port \+ 200 \+ node id\)"):
        metrics_listener(1, "127.0.0.1", 65535, None)


def test_the_scrape_config_lists_every_node_with_metrics():
    text = prometheus_config([(1, "controller", "127.0.0.1:9293"), (2, "broker", "127.0.0.1:9294"),
                              (3, "broker", None)])
    assert "  - job_name: tierlog" in text and "    metrics_path: /metrics" in text
    assert re.findall(r"- targets: \['([^']+)'\]", text) == ["127.0.0.1:9293", "127.0.0.1:9294"]
    assert "node_id: '2'" in text and "role: 'broker'" in text


def test_the_docs_dashboard_is_the_generated_one():
    assert DOCS_DASHBOARD.read_text() == dashboard_json()


def _exprs(board: dict) -> list[str]:
    return [t["expr"] for p in board["panels"] for t in p.get("targets", [])]


def test_the_dashboard_is_well_formed():
    board = json.loads(dashboard_json())
    assert board["uid"] == DASHBOARD_UID and board["schemaVersion"] >= 36
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    for panel in board["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24 and grid["h"] > 0
        if panel["type"] != "row":
            assert panel["targets"] and all(t["expr"].count("(") == t["expr"].count(")") for t in panel["targets"])
    variables = {v["name"] for v in board["templating"]["list"]}
    used = {m for e in _exprs(board) for m in re.findall(r"\$(\w+)", e)} - {"__rate_interval"}
    assert used <= variables


def test_every_metric_the_dashboard_reads_is_documented():
    """Every name a query reads is exported by tierlog (docs/metrics.md lists the exported names; the
    integration test test_kafka_metrics.py checks the dashboard's names against a live scrape)."""
    documented = METRICS_DOC.read_text()
    names = dashboard_metrics()
    assert len(names) > 25 and "kafka_consumergroup_lag" in names
    assert names >= SHARE_TRAFFIC_METRICS
    for name in names:
        assert f"`{name}" in documented, name
    for name, meter in TOPIC_COUNTERS.values():
        assert f"`kafka_server_brokertopicmetrics_{name}_total`" in documented and meter in documented

