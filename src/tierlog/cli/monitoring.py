"""What ``tierlog up`` writes under ``<data-dir>/monitoring/``: a Prometheus scrape config of
its nodes and the Grafana dashboard of tierlog's metrics (docs/metrics.md).

``prometheus_config(targets)`` is a ``prometheus.yml`` scraping every node's
``/metrics`` every 15 s (``targets``: (node id, roles, HOST:PORT or None); the node id and
roles become the ``node_id`` and ``role`` labels). ``dashboard()`` is the Grafana
dashboard (schema 39, one Prometheus data source chosen by the ``datasource``
variable, ``instance`` and ``topic`` variables): cluster overview, per-broker
throughput and request latency, URP / under min ISR / offline partitions, ISR churn,
consumer group lag, tiered storage copy / fetch bytes, errors and copy lag. Its
queries use the names tierlog exports; ``docs/grafana/tierlog.json`` is this
dashboard as a file (tests/unit/cli/test_monitoring.py keeps them equal).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

__all__ = ["DASHBOARD_UID", "SCRAPE_INTERVAL", "SHARE_TRAFFIC_METRICS", "dashboard", "dashboard_json", "dashboard_metrics",
           "prometheus_config", "write_monitoring"]

DASHBOARD_UID = "tierlog-overview"
SCRAPE_INTERVAL = "15s"
_BTM = "kafka_server_brokertopicmetrics_"
_RM = "kafka_server_replicamanager_"
_KC = "kafka_controller_kafkacontroller_"
_RQ = "kafka_network_requestmetrics_"
_GCM = "kafka_server_group_coordinator_metrics_"
_SPM = "kafka_server_sharepartitionmetrics_"
_INSTANCE = 'instance=~"$instance"'
_TOPIC = 'topic=~"$topic"'


def prometheus_config(targets: list[tuple[int, str, str | None]]) -> str:
    lines = ["# Written by `tierlog up`: scrapes every node of the cluster.",
             "# prometheus --config.file=<this file>; the Grafana dashboard is grafana-dashboard.json beside it.",
             "global:", f"  scrape_interval: {SCRAPE_INTERVAL}", "scrape_configs:", "  - job_name: tierlog",
             "    metrics_path: /metrics", "    static_configs:"]
    for node_id, roles, address in targets:
        if address is None:         # metrics off
            continue
        lines += [f"      - targets: ['{address}']", "        labels:", f"          node_id: '{node_id}'",
                  f"          role: '{roles}'"]
    return "\n".join(lines) + "\n"


def write_monitoring(directory: Path, targets: list[tuple[int, str, str | None]]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "prometheus.yml").write_text(prometheus_config(targets))
    (directory / "grafana-dashboard.json").write_text(dashboard_json())


def dashboard_json() -> str:
    return json.dumps(dashboard(), indent=2) + "\n"


def _rate(name: str, by: str, *selectors: str) -> str:
    return f"sum by ({by}) (rate({name}{{{','.join(selectors)}}}[$__rate_interval]))"


def _quantile(name: str, q: float) -> str:
    return (f"histogram_quantile({q}, sum by (le, request) "
            f"(rate({name}_bucket{{{_INSTANCE}}}[$__rate_interval])))")


# (title, unit, [(expr, legend)], panel type)
_ROWS: list[tuple[str, list[tuple[str, str, list[tuple[str, str]], str]]]] = [
    ("Cluster overview", [
        ("Active controllers", "none", [(f"sum({_KC}activecontrollercount)", "active")], "stat"),
        ("Brokers (active / fenced)", "none", [(f"sum({_KC}activebrokercount)", "active"),
                                               (f"sum({_KC}fencedbrokercount)", "fenced")], "stat"),
        ("Topics / partitions", "none", [(f"sum({_KC}globaltopiccount)", "topics"),
                                         (f"sum({_KC}globalpartitioncount)", "partitions")], "stat"),
        ("Offline partitions", "none", [(f"sum({_KC}offlinepartitionscount)", "offline")], "stat"),
    ]),
    ("Throughput per broker", [
        ("Bytes in", "Bps", [(_rate(_BTM + "bytesin_total", "instance", _INSTANCE, _TOPIC), "{{instance}}")],
         "timeseries"),
        ("Bytes out", "Bps", [(_rate(_BTM + "bytesout_total", "instance", _INSTANCE, _TOPIC), "{{instance}}")],
         "timeseries"),
        ("Messages in", "short", [(_rate(_BTM + "messagesin_total", "instance", _INSTANCE, _TOPIC),
                                   "{{instance}}")], "timeseries"),
        ("Produce / fetch requests (failed)", "reqps", [
            (_rate(_BTM + "totalproducerequests_total", "instance", _INSTANCE, _TOPIC), "produce {{instance}}"),
            (_rate(_BTM + "failedproducerequests_total", "instance", _INSTANCE, _TOPIC), "failed produce {{instance}}"),
            (_rate(_BTM + "totalfetchrequests_total", "instance", _INSTANCE, _TOPIC), "fetch {{instance}}"),
            (_rate(_BTM + "failedfetchrequests_total", "instance", _INSTANCE, _TOPIC), "failed fetch {{instance}}"),
        ], "timeseries"),
    ]),
    ("Request latency", [
        ("Requests per second by type", "reqps", [(_rate(_RQ + "requests_total", "request", _INSTANCE),
                                                   "{{request}}")], "timeseries"),
        ("Total time p99 (ms)", "ms", [(_quantile(_RQ + "totaltimems", 0.99), "{{request}}")], "timeseries"),
        ("Total time p50 (ms)", "ms", [(_quantile(_RQ + "totaltimems", 0.5), "{{request}}")], "timeseries"),
        ("Request queue time p99 (ms)", "ms", [(_quantile(_RQ + "requestqueuetimems", 0.99), "{{request}}")],
         "timeseries"),
    ]),
    ("Replication", [
        ("Under-replicated partitions", "none", [(f"sum by (instance) ({_RM}underreplicatedpartitions)",
                                                  "{{instance}}")], "timeseries"),
        ("Under min ISR partitions", "none", [(f"sum by (instance) ({_RM}underminisrpartitioncount)",
                                               "{{instance}}")], "timeseries"),
        ("ISR shrinks / expands", "short", [
            (_rate(_RM + "isrshrinks_total", "instance", _INSTANCE), "shrinks {{instance}}"),
            (_rate(_RM + "isrexpands_total", "instance", _INSTANCE), "expands {{instance}}")], "timeseries"),
        ("Partitions / leaders per broker", "none", [
            (f"sum by (instance) ({_RM}partitioncount)", "partitions {{instance}}"),
            (f"sum by (instance) ({_RM}leadercount)", "leaders {{instance}}")], "timeseries"),
    ]),
    ("Consumer groups and logs", [
        ("Consumer group lag", "short", [(f"sum by (consumergroup, topic) (kafka_consumergroup_lag{{{_TOPIC}}})",
                                          "{{consumergroup}} {{topic}}")], "timeseries"),
        ("Log size by topic", "bytes", [(f"sum by (topic) (kafka_log_log_size{{{_TOPIC}}})", "{{topic}}")],
         "timeseries"),
    ]),
    ("Share groups", [
        ("Share groups by state", "none", [(f"sum by (state) ({_GCM}share_group_count)", "{{state}}")], "timeseries"),
        ("Share records in flight", "short", [(f"sum by (group) ({_SPM}inflightmessagecount{{{_INSTANCE}}})",
                                               "{{group}}")], "timeseries"),
        ("Share lock timeouts / redeliveries / dead letters", "short", [
            (_rate(_SPM + "acquisitionlocktimeout_total", "group", _INSTANCE), "lock timeouts {{group}}"),
            (_rate("tierlog_share_redeliveries_total", "group", _INSTANCE), "redeliveries {{group}}"),
            (_rate("tierlog_share_dead_letters_total", "group", _INSTANCE), "dead letters {{group}}")], "timeseries"),
    ]),
    ("Tiered storage", [
        ("Remote copy / fetch bytes", "Bps", [
            (_rate(_BTM + "remotecopybytes_total", "topic", _TOPIC), "copy {{topic}}"),
            (_rate(_BTM + "remotefetchbytes_total", "topic", _TOPIC), "fetch {{topic}}")], "timeseries"),
        ("Remote copy / fetch errors", "short", [
            (_rate(_BTM + "remotecopyerrors_total", "topic", _TOPIC), "copy {{topic}}"),
            (_rate(_BTM + "remotefetcherrors_total", "topic", _TOPIC), "fetch {{topic}}")], "timeseries"),
        ("Remote copy lag", "bytes", [(f"sum by (topic) ({_BTM}remotecopylagbytes{{{_TOPIC}}})", "{{topic}}")],
         "timeseries"),
        ("Remote log size", "bytes", [(f"sum by (topic) ({_BTM}remotelogsizebytes{{{_TOPIC}}})", "{{topic}}")],
         "timeseries"),
    ]),
    ("Process", [
        ("CPU (cores)", "short", [("rate(process_cpu_seconds_total[$__rate_interval])", "{{instance}}")],
         "timeseries"),
        ("Resident memory", "bytes", [("process_resident_memory_bytes", "{{instance}}")], "timeseries"),
    ]),
]

_DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


def dashboard() -> dict:
    panels, y, next_id = [], 0, 1
    for row_title, row in _ROWS:
        panels.append({"id": next_id, "type": "row", "title": row_title, "collapsed": False,
                       "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "panels": []})
        next_id, y = next_id + 1, y + 1
        width = 24 // len(row)
        for i, (title, unit, queries, kind) in enumerate(row):
            panels.append(_panel(next_id, title, unit, queries, kind, {"h": 8, "w": width, "x": i * width, "y": y}))
            next_id += 1
        y += 8
    return {"uid": DASHBOARD_UID, "title": "tierlog", "tags": ["tierlog", "kafka"], "schemaVersion": 39,
            "version": 1, "editable": True, "refresh": "30s", "time": {"from": "now-1h", "to": "now"},
            "templating": {"list": _variables()}, "panels": panels, "annotations": {"list": []}}


def _panel(panel_id: int, title: str, unit: str, queries, kind: str, grid: dict) -> dict:
    targets = [{"refId": chr(ord("A") + i), "expr": expr, "legendFormat": legend, "datasource": _DATASOURCE}
               for i, (expr, legend) in enumerate(queries)]
    return {"id": panel_id, "type": kind, "title": title, "datasource": _DATASOURCE, "gridPos": grid,
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []}, "options": {}, "targets": targets}


def _variables() -> list[dict]:
    def query_var(name: str, query: str) -> dict:
        return {"name": name, "type": "query", "datasource": _DATASOURCE, "query": query,
                "definition": query, "includeAll": True, "multi": True, "allValue": ".*",
                "current": {"text": "All", "value": "$__all"}, "refresh": 2}
    return [{"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"},
            query_var("instance", "label_values(kafka_server_replicamanager_partitioncount, instance)"),
            query_var("topic", "label_values(kafka_log_log_size, topic)")]


_PROMQL_WORDS = {"sum", "by", "rate", "histogram_quantile", "le", "request", "instance", "topic", "consumergroup"}
#: dashboard metrics a broker serves only once a share group has fetched from it (families labelled by
#: group, with no sample before); tests/integration/test_share_consumer.py checks them on a live scrape
SHARE_TRAFFIC_METRICS = {_SPM + "inflightmessagecount", _SPM + "acquisitionlocktimeout_total",
                         "tierlog_share_redeliveries_total", "tierlog_share_dead_letters_total"}


def dashboard_metrics() -> set[str]:
    """The metric names the dashboard's queries read (a histogram by its family name)."""
    names = set()
    for panel in dashboard()["panels"]:
        for target in panel.get("targets", []):
            expr = re.sub(r'"[^"]*"', "", target["expr"])
            for word in re.findall(r"[a-z_][a-z0-9_]*(?=[{\[)\s]|$)", expr):
                if "_" in word and word not in _PROMQL_WORDS and not word.startswith("__"):
                    names.add(word.removesuffix("_bucket"))
    return names
