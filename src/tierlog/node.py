"""One tierlog process: composes the broker and/or controller roles from its config.

Every process holds a replica of the metadata log (``__cluster_metadata-0`` in
``metadata.log.dir``): a voter when it has the controller role, an observer
otherwise.  Commit delivery is a pull: the Raft core's Outputs carry what became
committed, ``RaftDriver`` puts it on the node's ``committed`` queue, and the node's
``CommitApplier`` task applies it in order - ``MetadataLoader`` turns committed
records into images, the broker role serves clients from them, the controller role
(``QuorumController``) follows them and writes new records as the quorum leader.

Start-up order: meta.properties, the Raft replica (loading the latest snapshot
and the log), the controller role, the broker role: its listeners are bound
first (registration names their ports), then the broker is built whole and
served, registers, and once the controller has unfenced it starts replicating;
it reports ready (the ``node ...`` line) then.  ``stop()`` runs the broker's
controlled shutdown, cancels and awaits every background task, resigns quorum
leadership, closes listeners, flushes logs.

Metrics, in the node's own ``CollectorRegistry`` (docs/metrics.md): every batch the
applier applies goes to ``ApplyMetrics`` (Kafka's ``broker-metadata-metrics``); every
answered request to ``RequestMetrics`` (the dispatchers' observer) and, on a broker,
to ``BrokerTopicStats``; the broker's and the controller's gauges are collected at
scrape time (``BrokerMetricsCollector``, ``ControllerMetricsCollector``), and the
process's by prometheus-client's ``ProcessCollector``. With
``metrics.prometheus.listener`` set, ``MetricsEndpoint`` serves them at ``/metrics``
from start-up (bound first) until ``stop()``.

A node with both roles and no ``controller.quorum.voters`` is a quorum of one
(development mode): it needs no controller listener.

Transport security (``net.node_security.node_security``): each listener serves the
protocol ``listener.security.protocol.map`` gives it (an SSL listener with its
``ssl.*`` settings' context, built before anything is bound, so a listener
without a usable keystore stops the start with one line); the Raft replica and
the controller channels connect with the first controller listener's security,
replica fetchers and the remote log metadata manager to other brokers'
``inter.broker.listener.name`` endpoints with that listener's.
"""
from __future__ import annotations

import asyncio
import io
import logging
import random
import signal
import socket
import uuid
from collections.abc import Callable
from pathlib import Path

from prometheus_client import CollectorRegistry, ProcessCollector

from tierlog.broker.apis import REGISTRY as BROKER_APIS
from tierlog.broker.apis import advertised as advertised_apis
from tierlog.broker.broker import Broker
from tierlog.broker.broker_metrics import BrokerMetricsCollector
from tierlog.broker.client_quotas import ClientQuotaManager
from tierlog.broker.controller_channel import ControllerChannel
from tierlog.broker.lifecycle import BrokerLifecycleManager, Endpoint
from tierlog.broker.remote.tier import RemoteTier
from tierlog.broker.replica_manager import LAST_TIERED_OFFSET_ENABLE, ReplicaManager
from tierlog.broker.role import LifecycleLoop, MetadataView
from tierlog.broker.share_metrics import ShareMetricsCollector
from tierlog.broker.topic_stats import BrokerTopicStats
from tierlog.clock import monotonic_ms, wall_clock_ms
from tierlog.config import BROKER_CONFIGS, ConfigError, NodeConfig
from tierlog.controller.controller_config import ControllerConfig
from tierlog.controller.quorum_controller import QuorumController
from tierlog.metadata.apply_metrics import ApplyMetrics
from tierlog.metadata.authorizer import authorizer_from_config
from tierlog.metadata.bootstrap import BootstrapError, read_bootstrap
from tierlog.metadata.feature_records import with_default_features
from tierlog.metadata.loader import MetadataLoader
from tierlog.metadata.scram import ScramMechanism
from tierlog.metadata.snapshot_generator import SnapshotGenerator
from tierlog.net.client import PeerRoute, Peers
from tierlog.net.connection_quotas import ConnectionQuotas
from tierlog.net.connection_rates import ConnectionRates
from tierlog.net.dispatch import RequestDispatcher, api_versions_list
from tierlog.net.memory_pool import MemoryPool
from tierlog.net.node_security import (
    NodeSecurity,
    node_security,
    own_principal_warnings,
)
from tierlog.net.request_metrics import RequestMetrics
from tierlog.net.sasl_gate import sasl_sessions
from tierlog.net.sasl_plain import PlainAuthenticator
from tierlog.net.sasl_scram import ScramServer
from tierlog.net.security import SecurityConfigError, listener_prefix
from tierlog.net.server import Limits, Server, bind
from tierlog.net.ssl_context import server_context
from tierlog.net.ssl_principal import (
    PRINCIPAL_MAPPING_RULES,
    SslPrincipalMapper,
    peer_principal,
)
from tierlog.net.tasks import TaskSet, cancel_and_wait
from tierlog.raft import Committed
from tierlog.raft.file_log import METADATA_PARTITION_DIR
from tierlog.server.applied_offset import AppliedOffset
from tierlog.server.commit_applier import CommitApplier
from tierlog.server.controller_metrics import ControllerMetricsCollector
from tierlog.server.controller_server import CONTROLLER_APIS, ControllerServer
from tierlog.server.heap import settle_heap
from tierlog.server.image_digest import ImageDigestCollector
from tierlog.server.metrics_endpoint import MetricsEndpoint
from tierlog.server.raft_driver import RaftDriver
from tierlog.server.raft_replica import metadata_dir, open_raft_replica
from tierlog.server.test_faults import TEST_FAULTS_FILE, apply_test_faults
from tierlog.server.voter_update import VoterUpdate
from tierlog.storage import CleanerConfig, LogManager
from tierlog.storage.dir_lock import DirInUseError, DirLock
from tierlog.storage.meta_properties import ensure_meta_properties

__all__ = ["Node", "NodeFailure", "run_node"]

log = logging.getLogger(__name__)
REPLICATION_SETTINGS = ("replica.lag.time.max.ms", "request.timeout.ms", "replica.fetch.wait.max.ms",
                        "replica.fetch.response.max.bytes", "replica.fetch.max.bytes", "replica.fetch.backoff.ms",
                        "replica.high.watermark.checkpoint.interval.ms", "max.incremental.fetch.session.cache.slots",
                        LAST_TIERED_OFFSET_ENABLE)
TICK_MIN_MS = 50
READY_TIMEOUT_S = 120


class NodeFailure(Exception):
    """The node stopped by itself (every log dir failed...): one line for its exit."""


class Node:
    def __init__(self, config: NodeConfig):
        self.config = config
        self.servers: list[Server] = []
        self.bound: list[tuple[str, int]] = []
        self.logs: LogManager | None = None
        self.driver: RaftDriver | None = None
        self.controller_server: ControllerServer | None = None
        self.lifecycle: LifecycleLoop | None = None
        self.broker: Broker | None = None
        self._tasks = TaskSet(f"node {config.node_id}")
        self._ports: dict[str, int] = {}            # listener name -> bound port
        self.peers: Peers | None = None                 # the Raft replica's connections
        self._channel_peers: list[Peers] = []           # the controller channels' (_controller_channel)
        self.replicas: ReplicaManager | None = None
        self.remote: RemoteTier | None = None       # tiered storage, when remote.log.storage.system.enable
        self.metrics_registry = CollectorRegistry()     # this node's, not prometheus-client's global one
        ProcessCollector(registry=self.metrics_registry)
        self.request_metrics = RequestMetrics(self.metrics_registry)
        self.metrics_endpoint: MetricsEndpoint | None = None   # when metrics.prometheus.listener is set
        self._scrape_preparers: list = []       # scrape-time collectors' prepare(), run on the loop per scrape
        self._stopped = asyncio.Event()
        self._dir_locks: list[DirLock] = []          # Kafka's .lock in every log dir and the metadata dir
        self._dir_ids: dict[Path, bytes] = {}           # log dir -> its directory.id (KIP-858)
        self.failure: str | None = None                 # why the node stopped by itself (None: asked to)
        # every listener's connections count against the node's limits and share its request memory
        self._connection_quotas = ConnectionQuotas(config["max.connections"], config["max.connections.per.ip"],
                                                   _resolve_hosts(config.ip_overrides))
        self._request_memory = MemoryPool(config.request_memory_bytes)
        self._loader: MetadataLoader | None = None       # the committed image (SCRAM logins read it)
        self.security, self._ssl_contexts, self._sasl_sessions = _security(config, self._scram_credential)
        for warning in own_principal_warnings(config.raw, self.security, self.is_broker):
            log.warning(warning)
        self._principals = _ssl_principals(config, self.security)     # SSL listeners: the certificate's principal

    @property
    def is_broker(self) -> bool:
        return "broker" in self.config.roles

    @property
    def client_address(self) -> tuple[str, int]:
        """Where clients connect: the first broker listener (not a combined node's controller
        listener, which answers clients UNSUPPORTED_FEATURE), else the first listener."""
        for listener in self.config.broker_listeners:
            if listener.name in self._ports:
                return listener.host or "0.0.0.0", self._ports[listener.name]
        return self.bound[0]

    async def start(self) -> None:
        cfg = self.config
        self._dir_locks = _lock_dirs(_data_dirs(cfg))
        cluster_id, dir_ids = ensure_meta_properties(_data_dirs(cfg), cfg.node_id, cfg["cluster.id"])
        self._dir_ids = {d: dir_ids[d] for d in cfg.log_dirs}
        if cfg.metrics_listener is not None:
            self.metrics_endpoint = await MetricsEndpoint.start(self.metrics_registry, *cfg.metrics_listener,
                                                                prepare=self._prepare_scrape)
        replica = open_raft_replica(cfg, cluster_id, _dir_id_of(dir_ids, metadata_dir(cfg)), self.security.controller)
        self.peers, raft, voters = replica.peers, replica.node, replica.controller_ids
        loader = self._loader = MetadataLoader(cluster_id=cluster_id)
        committed: asyncio.Queue[Committed] = asyncio.Queue()      # RaftDriver -> CommitApplier, in log order
        applied = AppliedOffset()
        self.driver = RaftDriver(self.peers, cfg["controller.quorum.request.timeout.ms"] / 1000, raft, committed,
                                 (cfg.controller_listener_names or ["CONTROLLER"])[0])
        if "controller" in cfg.roles:
            controller_config = ControllerConfig.from_props({**cfg.prefixed("rsm.config.encryption."), **cfg.values},
                                                            cfg.topic_defaults(), cluster_id)
            quorum_controller = QuorumController(cfg.node_id, controller_config, random.Random(), wall_clock_ms(),
                                                 bootstrap_records=self._bootstrap_records())
            self.controller_server = ControllerServer(cfg.node_id, self.driver, applied, quorum_controller,
                                                      authorizer_from_config(cfg.raw))
            self.metrics_registry.register(ControllerMetricsCollector(quorum_controller))
        generator = SnapshotGenerator.from_config(raft.create_snapshot, _snapshot_settings(cfg), wall_clock_ms())
        loader.subscribe(generator.publish)
        self.metrics_registry.register(ImageDigestCollector(lambda: loader.image))
        applier = CommitApplier(committed, loader, generator, ApplyMetrics(self.metrics_registry, wall_clock_ms()),
                                applied, self.controller_server, self.driver.applied)
        self._tasks.spawn(applier.run(), name="commit-applier")
        self.driver.start()
        if self.controller_server is not None:
            self.controller_server.start_ticker()
            if cfg.dynamic_quorum:      # KIP-853: a moved controller listener goes into the voter set
                self._tasks.spawn(VoterUpdate(self.controller_server).run(), name="voter-update")
        for listener_cfg in cfg.controller_listeners:
            await self._serve(listener_cfg, RequestDispatcher(self.controller_server, CONTROLLER_APIS,
                                                              listener_cfg.name, (self.request_metrics,)))
        if self.is_broker:
            await self._start_broker(cluster_id, loader, voters)
        self._tasks.spawn(self._ticker(generator, loader), name="node-ticker")
        log.info("node %d (%s) serving %s (cluster %s)", cfg.node_id, ",".join(sorted(cfg.roles)),
                 ", ".join(f"{h}:{p}" for h, p in self.bound), cluster_id)

    def _metadata_dir(self) -> Path:
        """The Raft replica's log directory, which no partition log may take (LogManager's reserved_dirs)."""
        return metadata_dir(self.config) / METADATA_PARTITION_DIR

    def _controller_channel(self, purpose: str, voters: Callable[[], list[int]], loader: MetadataLoader) -> ControllerChannel:
        """A channel to the active controller with connections of its own, one per purpose as
        Kafka's NodeToControllerChannelManagers: a controller answers one request per
        connection at a time, so on the Raft driver's connections a forwarded request,
        a heartbeat or an AlterPartition would wait behind this node's parked metadata
        Fetch (up to its 500 ms wait); nor does a slow forward hold up a heartbeat."""
        cfg = self.config
        assert self.peers is not None, "start() opens the Raft peers before any controller channel"
        peers = Peers(f"tierlog-node-{cfg.node_id}-{purpose}", dict(self.peers.addresses), self.security.controller)
        self._channel_peers.append(peers)
        if self.driver is not None:
            self.driver.share_endpoints(peers)      # a dynamic quorum's voters, as the replica learns them
        return ControllerChannel(peers, voters, lambda: loader.image.controller_id if
                                 loader.image.controller_id >= 0 else None,
                                 cfg["controller.quorum.request.timeout.ms"] / 1000,
                                 cfg.node_id, self.controller_server)

    async def _start_broker(self, cluster_id: str, loader: MetadataLoader, voters: Callable[[], list[int]]) -> None:
        cfg = self.config
        self.logs = LogManager(cfg.log_dirs, wall_clock_ms(), cfg["log.retention.check.interval.ms"],
                               cleaner=CleanerConfig.from_props(cfg.values), clock_ms=wall_clock_ms,
                               reserved_dirs=[self._metadata_dir()], on_dir_offline=self._on_log_dir_offline,
                               verify_bytes_per_second=cfg["log.segment.verify.bytes.per.second"],
                               on_corrupt=self._on_corrupt_segment)
        online_ids = [self._dir_ids[d] for d in cfg.log_dirs if d not in self.logs.offline_dirs]
        if not online_ids:
            raise ConfigError(f"broker {cfg.node_id}: every log dir is offline ({', '.join(map(str, cfg.log_dirs))})")
        sockets = [(listener_cfg, bind(listener_cfg.host, listener_cfg.port)) for listener_cfg in cfg.broker_listeners]
        for listener_cfg, sock in sockets:
            self._ports[listener_cfg.name] = sock.getsockname()[1]
        manager = BrokerLifecycleManager(cfg.node_id, uuid.uuid4().bytes,
                                         [self._endpoint(lst) for lst in cfg.broker_listeners], cfg["broker.rack"],
                                         cfg.values, cluster_id=cluster_id, log_dirs=online_ids)
        controller_channel = self._controller_channel("forwarding", voters, loader)
        metadata_view = MetadataView(loader)
        topic_stats = BrokerTopicStats(lambda topic_id: _topic_name(metadata_view.image, topic_id))
        if cfg["remote.log.storage.system.enable"]:
            self.remote = RemoteTier(cfg, metadata_view, controller_channel, wall_clock_ms, topic_stats,
                                     self._inter_broker_route())
            await self.remote.check()
        self.replicas = ReplicaManager(cfg.node_id, self.logs, cfg.topic_defaults(), wall_clock_ms,
                                       self._controller_channel("alter-partition", voters, loader),
                                       lambda: manager.broker_epoch, lambda: loader.image,
                                       {k: cfg[k] for k in REPLICATION_SETTINGS}, self._inter_broker_route(),
                                       dir_ids=self._dir_ids, remote=self.remote,
                                       assignment_channel=self._assignment_channel(voters, loader))
        quotas = ClientQuotaManager(cfg.int_of("quota.window.num"), cfg.int_of("quota.window.size.seconds"),
                                    monotonic_ms, cfg.int_of("controller.quota.window.num")
                                    * cfg.int_of("controller.quota.window.size.seconds"))
        quotas.follow(loader.image.client_quotas)
        loader.subscribe(lambda image, delta: quotas.follow(image.client_quotas))
        self.metrics_registry.register(quotas)
        self.broker = Broker(cfg, metadata_view, controller_channel, self.replicas, manager,
                             api_versions_list(advertised_apis(BROKER_APIS)), inter_broker=self._inter_broker_route(),
                             remote=self.remote, quotas=quotas)
        collector = BrokerMetricsCollector(self.replicas, topic_stats, self.broker.groups, self.remote,
                                           lambda: metadata_view.image)
        self.metrics_registry.register(collector)
        self._scrape_preparers.append(collector.prepare)
        self.metrics_registry.register(self.broker.telemetry.series)          # KIP-714 pushed client metrics
        shares = ShareMetricsCollector(self.broker.share_partitions.metrics, self.broker.share_partitions.in_flight)
        self.metrics_registry.register(shares)                                 # KIP-932 share-partitions led here
        self._scrape_preparers.append(shares.prepare)
        self._scrape_preparers.append(lambda: self.broker.telemetry.prepare_scrape(wall_clock_ms()))
        observers = (self.request_metrics, topic_stats)
        rates = self._connection_rates(lambda ip: metadata_view.image.client_quotas.ip_rate(ip))
        for listener_cfg, sock in sockets:
            await self._serve(listener_cfg, RequestDispatcher(self.broker, BROKER_APIS, listener_cfg.name, observers,
                                                              quotas), sock,
                              lambda ip, now_ms, name=listener_cfg.name: rates.accept(name, ip, now_ms))
        self.lifecycle = LifecycleLoop(manager, self._controller_channel("lifecycle", voters, loader),
                                       lambda: loader.image.provenance.last_contained_offset,
                                       cfg["controller.quorum.request.timeout.ms"] / 1000, self._on_fatal)
        self.lifecycle.start()
        try:
            await asyncio.wait_for(self.lifecycle.wait_running(), READY_TIMEOUT_S)
        except TimeoutError:
            raise ConfigError(f"broker {cfg.node_id} was not unfenced within {READY_TIMEOUT_S}s: "
                              "is the controller quorum reachable?") from None
        # The controller answers a heartbeat "unfenced" once the record is committed, which can be
        # before this broker's image has it; until then its Metadata answers would leave it out, and
        # a client of a one-broker cluster would find no broker at all. Ready means listed.
        await metadata_view.wait_for(lambda image: _listed_unfenced(image, cfg.node_id), READY_TIMEOUT_S)
        # Only an image caught up with the metadata log (unfenced) may decide which local
        # logs to keep: an image replayed halfway would look like deleted topics.
        replicas = self.replicas
        replicas.start()
        if self.remote is not None:
            await self.remote.start()
        replicas.apply_image(loader.image)
        loader.subscribe(replicas.apply_image)
        loader.subscribe(self.broker.groups.on_image)       # a deleted topic's offsets leave its groups

    def _assignment_channel(self, voters: Callable[[], list[int]], loader: MetadataLoader) -> ControllerChannel | None:
        """AssignReplicasToDirs gets a channel of its own (Kafka's "directory-assignments") when the broker
        has several log dirs; with one, the controller assigns new replicas to it at creation and only replicas
        recorded before KIP-858 are assigned (on the AlterPartition channel)."""
        return self._controller_channel("directory-assignments", voters, loader) if len(self.config.log_dirs) > 1 \
            else None

    def _on_log_dir_offline(self, log_dir: Path) -> None:
        """The log manager took ``log_dir`` offline: report it in the heartbeats (KIP-858)."""
        if self.replicas is not None:
            self.replicas.mark_offline()
        if self.lifecycle is not None:
            self.lifecycle.propagate_directory_failure(self._dir_ids[log_dir])

    def _on_corrupt_segment(self, bad) -> None:
        """A closed segment's batch failed its CRC: a follower fetches it again (ReplicaManager)."""
        if self.replicas is not None:
            self.replicas.on_corrupt_segment(bad.key, bad.offset)

    def _on_fatal(self, reason: str) -> None:
        """The broker cannot go on (every log dir failed...): stop cleanly, exit with ``reason``."""
        log.error("broker %d shutting down: %s", self.config.node_id, reason)
        self.failure = reason
        self.request_stop()

    def _prepare_scrape(self) -> None:
        for prepare in self._scrape_preparers:
            prepare()

    def _bootstrap_records(self) -> list:
        """``tierlog format``'s records for a new cluster (metadata/bootstrap.py) and the default
        feature levels (transaction.version 2, metadata/feature_records.py)."""
        try:
            return with_default_features(read_bootstrap(self._metadata_dir().parent))
        except BootstrapError as e:
            raise ConfigError(str(e)) from None

    def _scram_credential(self, mechanism, user: str):
        """The SCRAM credential of ``user`` in this node's metadata image (None: none yet)."""
        return None if self._loader is None else self._loader.image.scram.credential(mechanism, user)

    def _inter_broker_route(self) -> PeerRoute:
        return PeerRoute(self.config.inter_broker_listener, self.security.inter_broker)

    def _endpoint(self, listener_cfg) -> Endpoint:
        """What this broker registers: the advertised host of the listener and its bound port."""
        adv = next((a for a in self.config.advertised if a.name == listener_cfg.name), listener_cfg)
        port = adv.port if adv is not listener_cfg and adv.port else self._ports[listener_cfg.name]
        return Endpoint(listener_cfg.name, adv.host or "127.0.0.1", port,
                        self.security.listeners[listener_cfg.name].protocol)

    def _connection_rates(self, ip_quota) -> ConnectionRates:
        """KIP-612's limits of the broker listeners: max.connection.creation.rate (the broker's, and
        listener.name.<l>.max.connection.creation.rate) and the client quotas' per-IP rates."""
        cfg = self.config
        unlimited = BROKER_CONFIGS["max.connection.creation.rate"].default
        broker_rate = cfg.int_of("max.connection.creation.rate")
        listener_rates = {}
        for lst in cfg.broker_listeners:
            value = cfg.raw.get(f"listener.name.{lst.name.lower()}.max.connection.creation.rate")
            if value is not None:
                listener_rates[lst.name] = float(value)
        return ConnectionRates(cfg.int_of("quota.window.num"), cfg.int_of("quota.window.size.seconds") * 1000,
                               None if broker_rate == unlimited else broker_rate, listener_rates,
                               cfg.inter_broker_listener, ip_quota, monotonic_ms())

    async def _serve(self, listener_cfg, dispatcher, sock=None, creation_rate=None) -> None:
        """Serve ``listener_cfg`` on ``sock`` (bound already) or on a socket bound now."""
        cfg = self.config
        limits = Limits(cfg["socket.request.max.bytes"], cfg["queued.max.requests"], self._connection_quotas,
                        self._request_memory, cfg["connections.max.idle.ms"], cfg["socket.request.read.timeout.ms"],
                        creation_rate)
        server = Server(dispatcher, limits, self._ssl_contexts.get(listener_cfg.name),
                        self._sasl_sessions.get(listener_cfg.name), self._principals.get(listener_cfg.name))
        port = await server.serve(sock if sock is not None else bind(listener_cfg.host, listener_cfg.port))
        self.servers.append(server)
        self.bound.append((listener_cfg.host or "0.0.0.0", port))
        self._ports[listener_cfg.name] = port

    async def _ticker(self, generator: SnapshotGenerator, loader: MetadataLoader) -> None:
        interval = max(TICK_MIN_MS, min(self.config["log.flush.scheduler.interval.ms"], 1000)) / 1000
        while True:
            await asyncio.sleep(interval)
            now = wall_clock_ms()
            try:
                if self.logs is not None:
                    self.logs.tick(now)
                generator.tick(loader.image, now)
            except Exception:
                log.exception("periodic maintenance failed; retrying next tick")

    def request_stop(self) -> None:
        self._stopped.set()

    async def wait_stopped(self) -> None:
        await self._stopped.wait()

    async def stop(self) -> None:
        if self.lifecycle is not None:
            await self.lifecycle.shutdown()
        await self._tasks.close()
        if self.broker is not None:
            await self.broker.close()
        if self.remote is not None:
            await self.remote.close()
        if self.replicas is not None:
            await self.replicas.stop()
        if self.controller_server is not None:
            await self.controller_server.stop()
        if self.driver is not None:
            await self.driver.stop()
        for server in self.servers:
            await server.stop()
        if self.metrics_endpoint is not None:
            await self.metrics_endpoint.close()
        for peers in (self.peers, *self._channel_peers):
            if peers is not None:
                peers.close()
        if self.logs is not None:
            self.logs.flush_all(wall_clock_ms())
            self.logs.close()
        for lock in self._dir_locks:
            lock.release()
        log.info("node %d stopped", self.config.node_id)


def _security(cfg: NodeConfig, scram_lookup) -> tuple[NodeSecurity, dict, dict]:
    """The node's security spec, its SSL listeners' contexts and its SASL listeners' per-connection
    gates (ConfigError: the node cannot honour it). SCRAM logins read ``scram_lookup(mechanism,
    user)``: the credentials of the node's metadata image."""
    try:
        security = node_security(cfg.raw, [lst.name for lst in cfg.listeners], cfg.controller_listener_names,
                                 cfg.inter_broker_listener if "broker" in cfg.roles else None)
        contexts = {name: server_context(spec.ssl) for name, spec in security.listeners.items()
                    if spec.ssl is not None}
        delay_s = cfg["connection.failed.authentication.delay.ms"] / 1000
        sessions = {name: sasl_sessions(name, {
            mechanism: _sasl_server(name, mechanism, jaas, scram_lookup) for mechanism, jaas in mechanisms.items()},
            delay_s, security.reauth_ms.get(name)) for name, mechanisms in security.sasl.items()}
    except SecurityConfigError as e:
        raise ConfigError(str(e)) from None
    return security, contexts, sessions


def _sasl_server(listener: str, mechanism: str, jaas: str | None, scram_lookup):
    """PLAIN's users from the listener's JAAS entry; a SCRAM session factory over the image."""
    scram = ScramMechanism.by_name(mechanism)
    if scram is not None:
        return lambda: ScramServer(scram, scram_lookup)
    assert jaas is not None, "node_security refuses a PLAIN listener without its JAAS entry"
    return PlainAuthenticator.from_jaas(f"{listener_prefix(listener)}{mechanism.lower()}.sasl.jaas.config", jaas)


def _ssl_principals(cfg: NodeConfig, security: NodeSecurity) -> dict:
    """SSL listeners' principal builders: ``ssl.principal.mapping.rules`` (or the listener's
    ``listener.name.<l>.ssl.principal.mapping.rules``) applied to the client certificate."""
    out = {}
    try:
        for name, spec in security.listeners.items():
            if spec.ssl is not None and not spec.protocol.uses_sasl:
                rules = cfg.raw.get(f"{listener_prefix(name)}{PRINCIPAL_MAPPING_RULES}",
                                    cfg.raw.get(PRINCIPAL_MAPPING_RULES))
                out[name] = peer_principal(SslPrincipalMapper(rules))
    except SecurityConfigError as e:
        raise ConfigError(str(e)) from None
    return out


def _data_dirs(cfg: NodeConfig) -> list[Path]:
    """The log dirs and the metadata log's parent dir, each once."""
    dirs = [*cfg.log_dirs, *([Path(cfg["metadata.log.dir"])] if cfg["metadata.log.dir"] else [])]
    return list({d.resolve(): d for d in dirs}.values())


def _lock_dirs(dirs: list[Path]) -> list[DirLock]:
    """Lock every data dir (creating it) or none: a dir in use raises ConfigError naming it and its holder."""
    locks: list[DirLock] = []
    try:
        for d in dirs:
            locks.append(DirLock.acquire(d))
    except DirInUseError as e:
        for lock in locks:
            lock.release()
        raise ConfigError(str(e)) from None
    return locks


def _resolve_hosts(overrides: dict[str, int]) -> dict[str, int]:
    """``max.connections.per.ip.overrides`` by IP address (host names resolved once, at start)."""
    out: dict[str, int] = {}
    for host, count in overrides.items():
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except OSError as e:
            raise ConfigError(f"max.connections.per.ip.overrides: cannot resolve {host!r}: {e}") from None
        out.update({str(info[4][0]): count for info in infos})
    return out


def _snapshot_settings(cfg: NodeConfig) -> dict:
    keys = ("metadata.log.max.record.bytes.between.snapshots", "metadata.log.max.snapshot.interval.ms")
    out = {k: cfg[k] for k in keys}
    if cfg["controller.snapshot.minimum.records"] > 0:
        out["controller.snapshot.minimum.records"] = cfg["controller.snapshot.minimum.records"]
    return out


def _dir_id_of(dir_ids: dict[Path, bytes], wanted: Path) -> bytes:
    """The directory id of ``wanted`` among the data dirs (matched by resolved path)."""
    return next(i for d, i in dir_ids.items() if d.resolve() == wanted.resolve())


async def _serve(config: NodeConfig, on_ready) -> None:
    node = Node(config)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, node.request_stop)
    loop.add_signal_handler(signal.SIGUSR1, _log_task_stacks)
    if (faults_file := config.optional_str_of(TEST_FAULTS_FILE)) is not None:     # test only
        loop.add_signal_handler(signal.SIGUSR2, apply_test_faults, Path(faults_file))
    try:
        if await _start_unless_stopped(node):
            settle_heap()
            on_ready(node)
            await node.wait_stopped()
    finally:
        await node.stop()
    if node.failure is not None:
        raise NodeFailure(f"node {config.node_id}: {node.failure}")


async def _start_unless_stopped(node: Node) -> bool:
    """Start ``node``; False when a stop (SIGTERM, SIGINT, a fatal error) came first: the start is
    cancelled, so a broker that cannot register stops at once, not after READY_TIMEOUT_S."""
    start = asyncio.ensure_future(node.start())
    stop = asyncio.ensure_future(node.wait_stopped())
    await asyncio.wait({start, stop}, return_when=asyncio.FIRST_COMPLETED)
    if start.done():
        await cancel_and_wait([stop], "node stop watch")
        start.result()          # a start that failed raises here
        return True
    await cancel_and_wait([start], "node start")
    return False


def _log_task_stacks() -> None:
    """SIGUSR1: every asyncio task's stack into the log (what a hung node is waiting for)."""
    out = io.StringIO()
    for task in asyncio.all_tasks():
        task.print_stack(limit=12, file=out)
    log.warning("SIGUSR1: %d asyncio tasks\n%s", len(asyncio.all_tasks()), out.getvalue())


def run_node(config: NodeConfig, on_ready=lambda node: None) -> None:
    """Run one node until SIGTERM/SIGINT; uses uvloop when installed.

    The import is settled before the node runs: a node running inside an ``except
    ImportError`` block would chain every traceback it logs to the missing uvloop.
    """
    try:
        import uvloop
    except ImportError:
        uvloop = None
    if uvloop is None:
        asyncio.run(_serve(config, on_ready))
    else:
        uvloop.run(_serve(config, on_ready))


def _topic_name(image, topic_id: bytes) -> str | None:
    topic = image.topic_by_id(topic_id)
    return None if topic is None else topic.name


def _listed_unfenced(image, node_id: int) -> bool:
    registration = image.brokers.get(node_id)
    return registration is not None and not registration.fenced
