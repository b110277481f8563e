"""One tierlog process: loads its config, opens its logs and serves its listeners.

Start-up order: log dirs and ``meta.properties`` (cluster id, node id), the log
manager (recovering every partition), the metadata store, the partitions the
image assigns here, then the listeners.  ``stop()`` closes the listeners,
flushes and closes every log.  Until the metadata quorum lands a node runs the
broker and controller roles combined, with ``LocalMetadataStore`` as its truth.
"""
from __future__ import annotations

import asyncio
import base64
import logging
import os
import signal
import uuid
from pathlib import Path

from tierlog.broker.broker import Broker, wall_clock_ms
from tierlog.broker.apis import REGISTRY as BROKER_APIS
from tierlog.broker.replica_manager import ReplicaManager
from tierlog.config import ConfigError, NodeConfig, parse_properties
from tierlog.metadata import BrokerInfo, LocalMetadataStore
from tierlog.net.dispatch import RequestDispatcher, api_versions_list
from tierlog.net.server import Limits, Server
from tierlog.storage import LogManager

__all__ = ["Node", "run_node"]

log = logging.getLogger(__name__)
META_PROPERTIES = "meta.properties"
TICK_MIN_MS = 50


class Node:
    def __init__(self, config: NodeConfig):
        self.config = config
        self.servers: list[Server] = []
        self.bound: list[tuple[str, int]] = []
        self.logs: LogManager | None = None
        self._tick_task: asyncio.Task | None = None
        self._stopped = asyncio.Event()

    async def start(self) -> None:
        cfg = self.config
        for d in cfg.log_dirs:
            d.mkdir(parents=True, exist_ok=True)
        cluster_id = _ensure_meta_properties(cfg)
        now = wall_clock_ms()
        self.logs = LogManager(cfg.log_dirs, now, cfg["log.retention.check.interval.ms"])
        adv = cfg.advertised[0]
        me = BrokerInfo(cfg.node_id, adv.host or "127.0.0.1", adv.port, cfg["broker.rack"])
        metadata = LocalMetadataStore(cfg.log_dirs[0], cluster_id, me)
        replicas = ReplicaManager(cfg.node_id, self.logs, cfg.topic_defaults(), wall_clock_ms)
        replicas.apply_image(metadata.image)
        broker = Broker(cfg, metadata, replicas, api_versions_list(BROKER_APIS))
        limits = Limits(cfg["socket.request.max.bytes"], cfg["queued.max.requests"], cfg["max.connections"])
        dispatcher = RequestDispatcher(broker, BROKER_APIS)
        for listener in cfg.listeners:
            server = Server(dispatcher, limits)
            port = await server.start(listener.host, listener.port)
            self.servers.append(server)
            self.bound.append((listener.host or "0.0.0.0", port))
        self._tick_task = asyncio.get_running_loop().create_task(self._ticker())
        log.info("node %d serving %s (cluster %s)", cfg.node_id,
                 ", ".join(f"{h}:{p}" for h, p in self.bound), cluster_id)

    async def _ticker(self) -> None:
        interval = max(TICK_MIN_MS, min(self.config["log.flush.scheduler.interval.ms"], 1000)) / 1000
        while True:
            await asyncio.sleep(interval)
            try:
                self.logs.tick(wall_clock_ms())
            except Exception:
                log.exception("log maintenance failed; retrying next tick")

    def request_stop(self) -> None:
        self._stopped.set()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    async def stop(self) -> None:
        if self._tick_task is not None:
            self._tick_task.cancel()
        for server in self.servers:
            await server.stop()
        if self.logs is not None:
            self.logs.flush_all(wall_clock_ms())
            self.logs.close()
        log.info("node %d stopped", self.config.node_id)


def _ensure_meta_properties(cfg: NodeConfig) -> str:
    """Every log dir carries meta.properties with the same cluster and node id, as in Kafka."""
    found = {}
    for d in cfg.log_dirs:
        path = d / META_PROPERTIES
        if path.exists():
            found[d] = parse_properties(path.read_text())
    for d, props in found.items():
        if props.get("node.id") != str(cfg.node_id):
            raise ConfigError(f"{d / META_PROPERTIES}: node.id {props.get('node.id')} does not match "
                              f"node.id {cfg.node_id} in the config")
    ids = {p.get("cluster.id") for p in found.values()} | ({cfg["cluster.id"]} if cfg["cluster.id"] else set())
    if len(ids) > 1:
        raise ConfigError(f"log dirs belong to different clusters: {sorted(i for i in ids if i)}")
    cluster_id = ids.pop() if ids else base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    for d in cfg.log_dirs:
        if d not in found:
            _write_atomically(d / META_PROPERTIES,
                              f"version=1\ncluster.id={cluster_id}\nnode.id={cfg.node_id}\n")
    return cluster_id


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


async def _serve(config: NodeConfig, on_ready) -> None:
    node = Node(config)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, node.request_stop)
    try:
        await node.start()
        on_ready(node)
        await node.wait_stopped()
    finally:
        await node.stop()


def run_node(config: NodeConfig, on_ready=lambda node: None) -> None:
    """Run one node until SIGTERM/SIGINT; uses uvloop when installed."""
    try:
        import uvloop
        uvloop.run(_serve(config, on_ready))
    except ImportError:
        asyncio.run(_serve(config, on_ready))
