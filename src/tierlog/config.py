"""Node configuration: every broker setting with Kafka's name, type and default.

A node reads a Kafka-style ``server.properties``: Java properties, read with
javaproperties (``key=value``, ``key: value`` or ``key value`` lines, ``#`` / ``!``
comments, line continuations, escapes).  ``NodeConfig`` validates every known key, keeps unknown keys (Kafka
warns about those; so do we, see ``NodeConfig.unknown``) and exposes typed
accessors.  Broker-level ``log.*`` settings are the defaults of the topic-level
settings; ``topic_defaults()`` maps them onto topic config names
(``log.segment.bytes`` -> ``segment.bytes``), so one topic config table
(``tierlog.storage``) stays the single source of topic defaults.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import javaproperties

_V = TypeVar("_V")

__all__ = [
    "BROKER_CONFIGS",
    "ConfigDef",
    "ConfigError",
    "Listener",
    "NodeConfig",
    "float_setting",
    "format_properties",
    "int_setting",
    "parse_host_port",
    "parse_ip_overrides",
    "parse_listeners",
    "parse_properties",
    "parse_voters",
]

LONG_MAX = 2**63 - 1


class ConfigError(ValueError):
    """A configuration value is missing or invalid; the message names the key."""


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    type: str            # "int", "long", "string", "boolean", "list", "double"
    default: Any         # None = no default (required or optional-null)
    doc: str
    topic_synonym: str | None = None   # the topic-level config this broker key defaults


def _d(name, type_, default, doc, topic=None) -> ConfigDef:
    return ConfigDef(name, type_, default, doc, topic)


_DEFS = [
    _d("node.id", "int", None, "This node's id, unique in the cluster."),
    _d("process.roles", "list", "broker,controller", "Roles this process runs: broker, controller or both."),
    _d("cluster.id", "string", None, "Cluster id; generated and stored in meta.properties when absent."),
    _d("listeners", "list", "PLAINTEXT://127.0.0.1:9092", "Comma-separated listener URIs to bind."),
    _d("advertised.listeners", "list", None, "Listeners told to clients; defaults to listeners."),
    _d("log.dirs", "list", "./tierlog-data/node-1", "Directories holding partition logs."),
    _d("controller.listener.names", "list", "CONTROLLER", "Listeners the controller role serves (Raft, registration)."),
    _d("listener.security.protocol.map", "string", None,
       "LISTENER_NAME:SECURITY_PROTOCOL pairs (PLAINTEXT, SSL); unset: each protocol's name maps to itself "
       "and the controller listeners to PLAINTEXT (Kafka's KRaft default)."),
    _d("inter.broker.listener.name", "string", None,
       "Listener brokers use to reach each other (replica fetches, remote log metadata); "
       "unset: the first broker listener (Kafka's default is the one named PLAINTEXT)."),
    _d("controller.quorum.voters", "list", None,
       "Metadata quorum voters as id@host:port; unset on a lone combined node (it is its own quorum)."),
    _d("controller.quorum.bootstrap.servers", "list", None,
       "HOST:PORT of some controllers of a dynamic quorum (KIP-853; instead of controller.quorum.voters): "
       "asked for the leader, the voters then come from the metadata log."),
    _d("controller.quorum.election.timeout.ms", "int", 1000, "Base election timeout of the quorum."),
    _d("controller.quorum.election.backoff.max.ms", "int", 1000, "Longest backoff after a failed election."),
    _d("controller.quorum.fetch.timeout.ms", "int", 2000, "Time without a leader after which a voter elects."),
    _d("controller.quorum.request.timeout.ms", "int", 2000, "Timeout of one quorum request."),
    _d("controller.quorum.append.linger.ms", "int", 25, "How long the leader batches metadata records."),
    _d("metadata.log.dir", "string", None, "Directory of __cluster_metadata-0; defaults to the first log dir."),
    _d("metadata.log.segment.bytes", "int", 8388608, "Segment size of the metadata log."),
    _d("metadata.log.max.record.bytes.between.snapshots", "long", 20971520,
       "Metadata bytes appended after the latest snapshot that trigger a new one (KIP-630)."),
    _d("metadata.log.max.snapshot.interval.ms", "long", 3600000,
       "Longest time between metadata snapshots; 0 disables the time trigger (KIP-630)."),
    _d("controller.snapshot.minimum.records", "long", 0,
       "KIP-630's name: committed records after the latest snapshot that trigger one; 0 = unused."),
    _d("metadata.max.retention.bytes", "long", 104857600, "Metadata log bytes kept beyond the latest snapshot."),
    _d("metadata.max.retention.ms", "long", 604800000, "Age of metadata log data kept beyond the latest snapshot."),
    _d("metadata.max.idle.interval.ms", "int", 500, "An idle active controller appends a NoOpRecord this often."),
    _d("max.replication.lag.ms", "long", 30000,
       "KIP-630: a replica silent this long does not hold back the metadata log begin offset."),
    _d("metrics.prometheus.listener", "string", None,
       "HOST:PORT where the node serves its metrics to Prometheus (/metrics; port 0: any free port, "
       "empty host: every interface); unset: not served."),
    _d("tierlog.test.faults.file", "string", None,
       "Test only (the nemesis soak, bench/soak.py): a JSON file the node applies on SIGUSR2, its wall "
       "clock offset and disk delay (server/test_faults.py); unset (always, outside tests): no fault can be injected."),
    _d("broker.heartbeat.interval.ms", "int", 2000, "How often a broker heartbeats to the controller."),
    _d("broker.session.timeout.ms", "int", 9000, "Heartbeat silence after which the controller fences a broker."),
    _d("log.segment.verify.bytes.per.second", "long", 1048576,
       "tierlog: closed segments' batches are CRC-checked in the background at most this fast (0: off)."),
    _d("log.dir.failure.timeout.ms", "long", 30000,
       "A broker that cannot report a failed log dir to the controller within this time shuts down."),
    _d("replica.lag.time.max.ms", "long", 30000, "A follower not caught up this long leaves the ISR."),
    _d("replica.fetch.max.bytes", "int", 1048576, "Bytes per partition in a follower fetch."),
    _d("replica.fetch.response.max.bytes", "int", 10485760, "Bytes of one follower fetch response."),
    _d("replica.fetch.backoff.ms", "int", 1000, "Backoff of a follower fetch after an error."),
    _d("replica.high.watermark.checkpoint.interval.ms", "long", 5000,
       "How often high watermarks are written to replication-offset-checkpoint."),
    _d("leader.election.eligible.local.log.ms", "long", -1,
       "KIP-1303: local log time a replica must cover to be preferred as leader; -1 off.",
       "leader.election.eligible.local.log.ms"),
    _d("leader.election.eligible.local.log.bytes", "long", -1,
       "KIP-1303: local log bytes a replica must hold to be preferred as leader; -1 off.",
       "leader.election.eligible.local.log.bytes"),
    _d("auto.leader.rebalance.enable", "boolean", True, "Move leadership back to preferred replicas."),
    _d("leader.imbalance.per.broker.percentage", "int", 10, "Imbalance above which leaders are rebalanced."),
    _d("leader.imbalance.check.interval.seconds", "long", 300, "How often leader imbalance is checked."),
    _d("broker.rack", "string", None, "Rack of this broker, for rack-aware placement."),
    _d("num.partitions", "int", 1, "Default partition count of auto-created and created topics."),
    _d("default.replication.factor", "int", 1, "Default replication factor of new topics."),
    _d("auto.create.topics.enable", "boolean", True, "Create a topic when a client asks Metadata for it."),
    _d("delete.topic.enable", "boolean", True, "Allow DeleteTopics."),
    _d("offsets.topic.num.partitions", "int", 50, "Partitions of __consumer_offsets (fixed once it exists)."),
    _d("offsets.topic.replication.factor", "int", 3,
       "Replication factor of __consumer_offsets (the number of live brokers, when fewer)."),
    _d("offsets.topic.segment.bytes", "int", 104857600, "Segment size of __consumer_offsets."),
    _d("offsets.commit.timeout.ms", "int", 5000,
       "Longest an offset commit or a group write waits for the ISR before it is answered with an error."),
    _d("group.coordinator.append.linger.ms", "int", 10,
       "How long the group coordinator gathers writes to a __consumer_offsets partition into one batch "
       "before appending it (0: the end of the event-loop round)."),
    _d("transaction.state.log.num.partitions", "int", 50,
       "Partitions of __transaction_state (fixed once it exists)."),
    _d("transaction.state.log.replication.factor", "int", 3,
       "Replication factor of __transaction_state (the number of live brokers, when fewer)."),
    _d("transaction.state.log.min.isr", "int", 2,
       "min.insync.replicas of __transaction_state (at most its replication factor)."),
    _d("transaction.state.log.segment.bytes", "int", 104857600, "Segment size of __transaction_state."),
    _d("share.coordinator.state.topic.num.partitions", "int", 50,
       "Partitions of __share_group_state (fixed once it exists)."),
    _d("share.coordinator.state.topic.replication.factor", "int", 3,
       "Replication factor of __share_group_state (the number of live brokers, when fewer)."),
    _d("share.coordinator.state.topic.min.isr", "int", 2,
       "min.insync.replicas of __share_group_state (at most its replication factor)."),
    _d("share.coordinator.state.topic.segment.bytes", "int", 104857600, "Segment size of __share_group_state."),
    _d("share.coordinator.snapshot.update.records.per.snapshot", "int", 500,
       "ShareUpdate records written for a share-partition before the share coordinator writes a merged "
       "ShareSnapshot instead (bounds loading and merging)."),
    _d("share.coordinator.write.timeout.ms", "int", 5000,
       "Longest a share-state write waits for the ISR before it is answered with an error."),
    _d("share.coordinator.state.topic.prune.interval.ms", "int", 300000,
       "How often the share coordinator deletes the records of __share_group_state that every "
       "share-partition's latest ShareSnapshot makes redundant (raises the partition's log start)."),
    _d("transaction.max.timeout.ms", "int", 900000, "Longest transaction timeout a producer may ask for."),
    _d("transaction.abort.timed.out.transaction.cleanup.interval.ms", "int", 10000,
       "How often the transaction coordinator looks for transactions past their timeout and aborts them."),
    _d("add.partitions.to.txn.retry.backoff.max.ms", "int", 100,
       "How long the transaction coordinator holds an AddPartitionsToTxn / AddOffsetsToTxn that finds "
       "the previous transaction of its id still completing before it answers CONCURRENT_TRANSACTIONS "
       "(KIP-890; 0: answer at once; at most request.timeout.ms)."),
    _d("transactional.id.expiration.ms", "int", 604800000,
       "A transactional id without a transaction for this long expires."),
    _d("transaction.remove.expired.transaction.cleanup.interval.ms", "int", 3600000,
       "How often the transaction coordinator looks for transactional ids to expire."),
    _d("offsets.retention.minutes", "int", 10080, "Offsets of a group without members expire after this long."),
    _d("offsets.retention.check.interval.ms", "long", 600000, "How often expired offsets are looked for."),
    _d("offset.metadata.max.bytes", "int", 4096, "Longest metadata string an offset commit may carry."),
    _d("group.initial.rebalance.delay.ms", "int", 3000,
       "How long a new group's first rebalance waits for more members to join."),
    _d("group.min.session.timeout.ms", "int", 6000, "Shortest session timeout a group member may ask for."),
    _d("group.max.session.timeout.ms", "int", 1800000, "Longest session timeout a group member may ask for."),
    _d("group.max.size", "int", 2147483647, "Most members one consumer group may have."),
    _d("group.consumer.heartbeat.interval.ms", "int", 5000,
       "How often consumer-protocol (KIP-848) members are told to heartbeat."),
    _d("group.consumer.min.heartbeat.interval.ms", "int", 5000, "Lower bound of group.consumer.heartbeat.interval.ms."),
    _d("group.consumer.max.heartbeat.interval.ms", "int", 15000, "Upper bound of group.consumer.heartbeat.interval.ms."),
    _d("group.consumer.session.timeout.ms", "int", 45000,
       "A consumer-protocol member not heard from for this long is removed from its group."),
    _d("group.consumer.min.session.timeout.ms", "int", 45000, "Lower bound of group.consumer.session.timeout.ms."),
    _d("group.consumer.max.session.timeout.ms", "int", 60000, "Upper bound of group.consumer.session.timeout.ms."),
    _d("group.consumer.max.size", "int", 2147483647, "Most members one consumer-protocol group may have."),
    _d("group.share.heartbeat.interval.ms", "int", 5000, "How often share-group (KIP-932) members are told to heartbeat."),
    _d("group.share.min.heartbeat.interval.ms", "int", 5000, "Lower bound of group.share.heartbeat.interval.ms."),
    _d("group.share.max.heartbeat.interval.ms", "int", 15000, "Upper bound of group.share.heartbeat.interval.ms."),
    _d("group.share.session.timeout.ms", "int", 45000,
       "A share-group member not heard from for this long is removed from its group."),
    _d("group.share.min.session.timeout.ms", "int", 45000, "Lower bound of group.share.session.timeout.ms."),
    _d("group.share.max.session.timeout.ms", "int", 60000, "Upper bound of group.share.session.timeout.ms."),
    _d("group.share.max.size", "int", 200, "Most members one share group may have."),
    _d("group.share.record.lock.duration.ms", "int", 30000,
       "How long a share-group member holds the records it acquired before they go back to the group."),
    _d("group.share.min.record.lock.duration.ms", "int", 15000, "Lower bound of group.share.record.lock.duration.ms."),
    _d("group.share.max.record.lock.duration.ms", "int", 60000, "Upper bound of group.share.record.lock.duration.ms."),
    _d("group.share.delivery.count.limit", "int", 5,
       "Deliveries of a share-group record after which it is archived instead of delivered again."),
    _d("group.share.min.delivery.count.limit", "int", 2, "Lower bound of group.share.delivery.count.limit."),
    _d("group.share.max.delivery.count.limit", "int", 10, "Upper bound of group.share.delivery.count.limit."),
    _d("group.share.partition.max.record.locks", "int", 2000,
       "Most offsets in flight (acquired or waiting for redelivery) per share-partition on its leader."),
    _d("group.share.max.share.sessions", "int", 2000, "Most share sessions (one per member and broker) a broker keeps."),
    _d("group.consumer.assignors", "string", "uniform,range",
       "Server-side assignors of consumer-protocol groups (uniform, range); the first is the default."),
    _d("socket.request.max.bytes", "int", 104857600, "Largest request frame accepted; larger closes the connection."),
    _d("authorizer.class.name", "string", "",
       "org.apache.kafka.metadata.authorizer.StandardAuthorizer turns ACL checks on (KIP-801); empty: none."),
    _d("super.users", "string", "", "Principals (';'-separated, e.g. User:admin) every ACL check allows."),
    _d("allow.everyone.if.no.acl.found", "boolean", False,
       "With the authorizer on: allow an operation on a resource no ACL names at all."),
    _d("quota.window.num", "int", 11, "Samples a client quota's rate is measured over (KIP-13)."),
    _d("quota.window.size.seconds", "int", 1, "Length of each client quota sample, seconds (KIP-13)."),
    _d("controller.quota.window.num", "int", 11,
       "Windows of controller_mutation_rate a client may use at once: its token bucket's burst (KIP-599)."),
    _d("controller.quota.window.size.seconds", "int", 1, "Length of each controller mutation quota window (KIP-599)."),
    _d("queued.max.requests", "int", 500, "Requests read ahead per connection before reading pauses."),
    _d("queued.max.request.bytes", "long", 134217728,
       "Bytes of request frames the node's connections may buffer together (frames queued or being read); "
       "while they are exhausted no connection reads. -1: queued.max.requests x socket.request.max.bytes "
       "(Kafka's default, unbounded in practice)."),
    _d("connections.max.idle.ms", "long", 600000,
       "A connection without a request in progress, bytes in or a response out for this long is closed."),
    _d("connection.failed.authentication.delay.ms", "int", 100,
       "A connection whose SASL authentication failed gets its answer at once and is closed this long "
       "after it (Kafka's KIP-306; 0: at once): a guesser's next try waits for it, and clients that read "
       "the answer and the close together (kafka-python over TLS) still see the error."),
    _d("connections.max.reauth.ms", "long", 0,
       "KIP-368: a SASL session lasts this long (sent to the client as SessionLifetimeMs); the client must "
       "re-authenticate on the connection before it ends, else its next request closes the connection. "
       "0: sessions never expire. Per listener and mechanism: listener.name.<l>[.<mechanism>].connections.max.reauth.ms."),
    _d("socket.request.read.timeout.ms", "long", 30000,
       "tierlog's own: a request frame still incomplete this long after its first byte closes its connection "
       "(slow senders holding request memory)."),
    _d("max.request.partition.size.limit", "int", 2000,
       "Most partitions one DescribeTopicPartitions response carries (KIP-966)."),
    _d("telemetry.max.bytes", "int", 1048576,
       "The largest client telemetry push (KIP-714 PushTelemetry metrics, compressed and decompressed) "
       "the broker accepts; larger ones are answered TELEMETRY_TOO_LARGE."),
    _d("max.connections", "int", 10000,
       "Open connections the node accepts on all its listeners; more are closed when accepted "
       "(Kafka's default is unbounded)."),
    _d("max.connection.creation.rate", "int", 2147483647,
       "New connections per second the broker's listeners accept together (the inter-broker listener "
       "excepted; KIP-612); more wait. Per listener: listener.name.<l>.max.connection.creation.rate."),
    _d("max.connections.per.ip", "int", 1000,
       "Open connections the node accepts from one IP address; more are closed when accepted "
       "(Kafka's default is unbounded)."),
    _d("max.connections.per.ip.overrides", "string", "",
       "Per-IP limits overriding max.connections.per.ip: a comma-separated list of HOST_OR_IP:COUNT."),
    _d("message.max.bytes", "int", 1048588, "Largest record batch accepted.", "max.message.bytes"),
    _d("fetch.max.bytes", "int", 57671680, "Upper bound on the bytes of one fetch response."),
    _d("replica.fetch.wait.max.ms", "int", 500, "Longest a fetch may wait."),
    _d("max.incremental.fetch.session.cache.slots", "int", 1000, "Fetch sessions (KIP-227) kept per node."),
    _d("request.timeout.ms", "int", 30000, "Longest a request may be held (acks=all, long polls)."),
    _d("min.insync.replicas", "int", 1, "Replicas that must acknowledge an acks=all write.", "min.insync.replicas"),
    _d("unclean.leader.election.enable", "boolean", False, "Allow an out-of-sync replica to lead.",
       "unclean.leader.election.enable"),
    _d("log.segment.bytes", "int", 1073741824, "Segment size before roll.", "segment.bytes"),
    _d("log.roll.ms", "long", 604800000, "Segment age before roll.", "segment.ms"),
    _d("log.retention.ms", "long", 604800000, "Age after which segments are deleted; -1 keeps forever.",
       "retention.ms"),
    _d("log.retention.bytes", "long", -1, "Partition size above which old segments go; -1 no limit.",
       "retention.bytes"),
    _d("log.retention.check.interval.ms", "long", 300000, "How often retention runs."),
    _d("log.index.interval.bytes", "int", 4096, "Bytes between offset index entries.", "index.interval.bytes"),
    _d("log.index.size.max.bytes", "int", 10485760, "Largest index file.", "segment.index.bytes"),
    _d("log.flush.interval.messages", "long", LONG_MAX, "Messages between forced fsyncs.", "flush.messages"),
    _d("log.flush.interval.ms", "long", LONG_MAX, "Longest time data stays unflushed.", "flush.ms"),
    _d("log.flush.scheduler.interval.ms", "long", 1000, "How often the flush policy is checked."),
    _d("log.segment.delete.delay.ms", "long", 60000, "Delay before a deleted segment's file goes.",
       "file.delete.delay.ms"),
    _d("log.message.timestamp.type", "string", "CreateTime", "CreateTime or LogAppendTime.",
       "message.timestamp.type"),
    _d("log.cleanup.policy", "list", "delete", "Cleanup policy of new topics.", "cleanup.policy"),
    # --- the log cleaner (compaction of cleanup.policy=compact topics) ---
    _d("log.cleaner.enable", "boolean", True, "Run the log cleaner (compacted topics grow forever without it)."),
    _d("log.cleaner.threads", "int", 1, "Cleaner threads; tierlog runs one per log directory (0 disables it)."),
    _d("log.cleaner.backoff.ms", "long", 15000, "Sleep of a cleaner that found no log to clean."),
    _d("log.cleaner.dedupe.buffer.size", "long", 134217728,
       "Memory of the cleaners' key -> offset maps, shared by the log directories' cleaners."),
    _d("log.cleaner.io.buffer.size", "int", 524288, "Read and write buffer of a cleaner."),
    _d("log.cleaner.io.buffer.load.factor", "double", 0.9, "How full a cleaner's offset map may get."),
    _d("log.cleaner.min.cleanable.ratio", "double", 0.5, "Dirty ratio above which a log is cleaned.",
       "min.cleanable.dirty.ratio"),
    _d("log.cleaner.delete.retention.ms", "long", 86400000, "How long tombstones outlive the clean that saw them.",
       "delete.retention.ms"),
    _d("log.cleaner.min.compaction.lag.ms", "long", 0, "Shortest time a record stays uncompacted.",
       "min.compaction.lag.ms"),
    _d("log.cleaner.max.compaction.lag.ms", "long", LONG_MAX, "Longest time a record stays ineligible for compaction.",
       "max.compaction.lag.ms"),
    _d("compression.type", "string", "producer", "Topic compression; tierlog keeps the producer's.",
       "compression.type"),
    _d("log.local.retention.ms", "long", -2, "Local age kept for tiered topics; -2 uses log.retention.ms.",
       "local.retention.ms"),
    _d("log.local.retention.bytes", "long", -2, "Local bytes kept for tiered topics; -2 uses log.retention.bytes.",
       "local.retention.bytes"),
    # --- tiered storage (KIP-405); remote storage settings are the rsm.config.* keys ---
    _d("remote.log.storage.system.enable", "boolean", False, "Run tiered storage on this broker (KIP-405)."),
    _d("follower.fetch.last.tiered.offset.enable", "boolean", False,
       "An empty follower of a tiered topic starts at the leader's earliest pending upload offset (KIP-1023); "
       "dynamic cluster-wide."),
    _d("remote.log.manager.task.interval.ms", "long", 30000, "How often each leader copies and expires segments."),
    _d("remote.log.manager.task.retry.backoff.ms", "long", 500, "First backoff after a failed copy or expiration."),
    _d("remote.log.manager.task.retry.backoff.max.ms", "long", 30000, "Longest backoff after failed copies."),
    _d("remote.log.manager.task.retry.jitter", "double", 0.2, "Random fraction added to the backoff."),
    _d("remote.log.manager.copier.thread.pool.size", "int", 10, "Threads uploading segments."),
    _d("remote.log.manager.expiration.thread.pool.size", "int", 10, "Threads deleting remote segments."),
    _d("remote.log.manager.follower.thread.pool.size", "int", 2,
       "Threads building a follower's state from remote storage."),
    _d("remote.log.manager.copy.max.bytes.per.second", "long", LONG_MAX, "Upload rate limit of this broker."),
    _d("remote.log.manager.fetch.max.bytes.per.second", "long", LONG_MAX, "Remote read rate limit of this broker."),
    _d("remote.log.reader.threads", "int", 10, "Threads serving fetches from remote storage."),
    _d("remote.log.reader.max.pending.tasks", "int", 100,
       "Remote reads queued for the reader threads; beyond it the partition gets an error."),
    _d("remote.fetch.max.wait.ms", "int", 500, "Longest a fetch waits for a remote read."),
    _d("remote.list.offsets.request.timeout.ms", "long", 30000, "Longest a ListOffsets waits for remote storage."),
    _d("remote.log.index.file.cache.total.size.bytes", "long", 1073741824, "Remote indexes cached on local disk."),
    _d("remote.log.metadata.topic.num.partitions", "int", 50, "Partitions of __remote_log_metadata."),
    _d("remote.log.metadata.topic.replication.factor", "int", 3,
       "Replication factor of __remote_log_metadata (the broker count if smaller)."),
    _d("remote.log.metadata.topic.retention.ms", "long", -1, "Retention of __remote_log_metadata."),
    # --- topics as Iceberg tables (tierlog's own; docs/tables.md) ---
    _d("tierlog.table.catalog.type", "string", "sql", "The tables' Iceberg catalog: sql (SQLAlchemy) or rest "
       "(other tierlog.table.catalog.<property> settings go to the catalog as pyiceberg properties)."),
    _d("tierlog.table.catalog.uri", "string", "",
       "The catalog's URI; empty: SQLite in <remote storage root>/tierlog-tables (fs only)."),
    _d("tierlog.table.namespace", "string", "tierlog", "The tables' Iceberg namespace, levels separated by dots "
       "(e.g. bronze.tierlog); the dead-letter tables' is the same with _dead_letter added to its last level."),
    _d("tierlog.table.maintenance.interval.ms", "long", 3600000,
       "How often a leader expires its tables' old snapshots and deletes unreferenced Parquet files (>= 1000)."),
    _d("tierlog.table.snapshot.retention.ms", "long", 432000000,
       "Iceberg snapshots older than this are expired (Iceberg's default max snapshot age, 5 days)."),
]

PLUGIN_PREFIXES = ("rsm.config.", "rlmm.config.")   # remote storage / metadata plugin settings, passed through
# the tables' Iceberg catalog properties (tiered/table/catalog.py), given to pyiceberg as they are
PASSED_THROUGH_PREFIXES = ("tierlog.table.catalog.",)
# transport security settings, checked by the node's security spec (net.node_security) at start:
# never unknown-and-ignored, each one honoured or refused
SECURITY_PREFIXES = ("ssl.", "sasl.", "listener.name.", "security.")
BROKER_CONFIGS: dict[str, ConfigDef] = {d.name: d for d in _DEFS}
_PARSERS: dict[str, Callable[[str], object]] = {
    "int": int, "long": int, "double": float, "string": str,
    "list": lambda s: [x.strip() for x in s.split(",") if x.strip()],
    "boolean": lambda s: {"true": True, "false": False}[s.strip().lower()],
}


def parse_properties(text: str) -> dict[str, str]:
    """Java properties as Kafka reads them (javaproperties): ``key=value``, ``key: value`` and
    ``key value`` lines, ``#``/``!`` comments, ``\\`` line continuations and escapes
    (``\\t``, ``\\uXXXX``, ...); the last of a repeated key wins. Values are trimmed, as
    Kafka's ConfigDef trims them."""
    try:
        props = javaproperties.loads(text)
    except javaproperties.InvalidUEscapeError as e:
        raise ConfigError(f"bad properties file: {e}") from None
    return {key: value.strip() for key, value in props.items()}


def format_properties(props: dict[str, str], comment: str = "") -> str:
    """``key=value`` lines that ``parse_properties`` reads back as ``props`` (backslashes and
    line breaks in values escaped; keys are config names; values without surrounding blanks)."""
    lines = [f"# {comment}"] if comment else []
    for key, value in props.items():
        assert key and not set(key) & set(_KEY_SPECIALS), f"bad config key {key!r}"
        lines.append(f"{key}={''.join(_VALUE_ESCAPES.get(c, c) for c in value)}")
    return "\n".join(lines) + "\n"


_KEY_SPECIALS = " \t\f=:#!\\\n\r"
_VALUE_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}


@dataclass(frozen=True, slots=True)
class Listener:
    name: str
    host: str
    port: int


def parse_listeners(values: list[str]) -> list[Listener]:
    """``PLAINTEXT://host:port`` entries; an empty host means all interfaces."""
    out = []
    for v in values:
        name, sep, rest = v.partition("://")
        host, colon, port = rest.rpartition(":")
        if not sep or not colon or not port.isdigit():
            raise ConfigError(f"listeners: bad listener {v!r} (want NAME://HOST:PORT)")
        out.append(Listener(name.upper(), host.strip("[]"), int(port)))
    return out


def parse_host_port(key: str, value: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT``; an empty host means every interface, ``0.0.0.0``); port 0-65535."""
    host, colon, port = value.strip().rpartition(":")
    if not colon or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"{key}: bad value {value!r} (want HOST:PORT, port 0-65535)")
    return host.strip("[]") or "0.0.0.0", int(port)


def parse_ip_overrides(value: str) -> dict[str, int]:
    """``max.connections.per.ip.overrides``: ``host:count`` entries (host a name or an IP; ``[v6]:count``)."""
    out = {}
    for entry in (e.strip() for e in (value or "").split(",")):
        if not entry:
            continue
        host, colon, count = entry.rpartition(":")
        if not colon or not host or not count.isdigit():
            raise ConfigError(f"max.connections.per.ip.overrides: bad entry {entry!r} (want HOST:COUNT)")
        out[host.strip("[]")] = int(count)
    return out


def parse_voters(values: list[str]) -> dict[int, tuple[str, int]]:
    """``controller.quorum.voters``: ``id@host:port`` entries."""
    out = {}
    for v in values:
        node, at, addr = v.partition("@")
        host, colon, port = addr.rpartition(":")
        if not at or not node.strip().isdigit() or not colon or not port.isdigit():
            raise ConfigError(f"controller.quorum.voters: bad voter {v!r} (want ID@HOST:PORT)")
        out[int(node)] = (host.strip("[]"), int(port))
    return out


def int_setting(props: Mapping[str, object], key: str, default: int) -> int:
    """An int setting from a mapping of Kafka config names: a NodeConfig's values (parsed) or
    a plain dict (strings, as in tests)."""
    return int(_number_setting(props, key, default))


def float_setting(props: Mapping[str, object], key: str, default: float) -> float:
    """``int_setting`` for a double."""
    return float(_number_setting(props, key, default))


def _number_setting(props: Mapping[str, object], key: str, default: float) -> float | str:
    value = props.get(key, default)
    if not isinstance(value, int | float | str):
        raise ConfigError(f"{key}: want a number, got {value!r}")
    return value


class NodeConfig:
    """Validated node settings; ``cfg["log.dirs"]`` returns the typed value."""

    def __init__(self, props: dict[str, str]):
        self.raw = dict(props)
        self.values: dict[str, object] = {}
        for name, d in BROKER_CONFIGS.items():
            self.values[name] = self._parse(d, props.get(name))
        self.unknown = sorted(k for k in props if k not in BROKER_CONFIGS
                              and not k.startswith(PLUGIN_PREFIXES + SECURITY_PREFIXES + PASSED_THROUGH_PREFIXES))
        if self.values["node.id"] is None:
            raise ConfigError("node.id: required")
        self.listeners = parse_listeners(self.list_of("listeners"))
        if not self.listeners:
            raise ConfigError("listeners: at least one listener is required")
        adv = self.optional_list_of("advertised.listeners")
        self.advertised = parse_listeners(adv) if adv else self.listeners
        self.roles = frozenset(self.list_of("process.roles"))
        if not self.roles or not self.roles <= {"broker", "controller"}:
            raise ConfigError(f"process.roles: want broker, controller or both, got {','.join(self.roles)!r}")
        self.voters = parse_voters(self.optional_list_of("controller.quorum.voters") or [])
        self.bootstrap_servers = [parse_host_port("controller.quorum.bootstrap.servers", v)
                                  for v in self.optional_list_of("controller.quorum.bootstrap.servers") or []]
        self._check_quorum()
        self._check_inter_broker_listener()
        self._check_request_bounds()
        metrics = self.optional_str_of("metrics.prometheus.listener")
        self.metrics_listener = parse_host_port("metrics.prometheus.listener", metrics) if metrics else None

    def _check_inter_broker_listener(self) -> None:
        name = self.optional_str_of("inter.broker.listener.name")
        if not name or "broker" not in self.roles:
            return
        if name.strip().upper() in self.controller_listener_names:
            raise ConfigError(f"inter.broker.listener.name: {name} is a controller listener")
        if name.strip().upper() not in {lst.name for lst in self.broker_listeners}:
            raise ConfigError(f"inter.broker.listener.name: {name} is not one of the listeners")

    def _check_request_bounds(self) -> None:
        for key in ("socket.request.max.bytes", "queued.max.requests", "connections.max.idle.ms",
                    "socket.request.read.timeout.ms", "max.connections",
                    "share.coordinator.state.topic.num.partitions", "share.coordinator.snapshot.update.records.per.snapshot",
                    "share.coordinator.write.timeout.ms", "share.coordinator.state.topic.prune.interval.ms"):
            if self.int_of(key) <= 0:
                raise ConfigError(f"{key}: must be positive, got {self.int_of(key)}")
        for key in ("max.connections.per.ip", "connection.failed.authentication.delay.ms",
                    "group.coordinator.append.linger.ms", "add.partitions.to.txn.retry.backoff.max.ms"):
            if self.int_of(key) < 0:
                raise ConfigError(f"{key}: must not be negative")
        pool = self.int_of("queued.max.request.bytes")
        if pool == 0 or pool < -1:
            raise ConfigError(f"queued.max.request.bytes: want a positive byte count or -1, got {pool}")
        self.ip_overrides = parse_ip_overrides(self.str_of("max.connections.per.ip.overrides"))

    @property
    def request_memory_bytes(self) -> int:
        """``queued.max.request.bytes``, -1 resolved as Kafka does."""
        pool = self.int_of("queued.max.request.bytes")
        return pool if pool > 0 else self.int_of("queued.max.requests") * self.int_of("socket.request.max.bytes")

    @property
    def dynamic_quorum(self) -> bool:
        """KIP-853: the voters live in the metadata log (controller.quorum.bootstrap.servers)."""
        return bool(self.bootstrap_servers) and not self.voters

    def _check_quorum(self) -> None:
        if self.voters and self.bootstrap_servers:
            raise ConfigError("controller.quorum.voters and controller.quorum.bootstrap.servers: set one "
                              "(static voters, or a dynamic quorum found through bootstrap servers)")
        if self.dynamic_quorum:
            if "controller" in self.roles and not self.controller_listeners:
                raise ConfigError("listeners: a controller needs a listener named in controller.listener.names")
            return
        if not self.voters:
            if self.roles != {"broker", "controller"}:
                raise ConfigError("controller.quorum.voters or controller.quorum.bootstrap.servers: required "
                                  "unless the node runs both roles alone")
            return
        if "controller" in self.roles and self.node_id not in self.voters:
            raise ConfigError(f"controller.quorum.voters: node {self.node_id} has the controller role "
                              "but is not a voter")
        if "controller" in self.roles and not self.controller_listeners:
            raise ConfigError("listeners: a controller needs a listener named in controller.listener.names")

    @property
    def controller_listeners(self) -> list[Listener]:
        names = {n.upper() for n in self.list_of("controller.listener.names")}
        return [lst for lst in self.listeners if lst.name in names]

    @property
    def broker_listeners(self) -> list[Listener]:
        names = {n.upper() for n in self.list_of("controller.listener.names")}
        return [lst for lst in self.listeners if lst.name not in names]

    @property
    def controller_listener_names(self) -> list[str]:
        return [n.upper() for n in self.list_of("controller.listener.names")]

    @property
    def inter_broker_listener(self) -> str | None:
        """``inter.broker.listener.name``, else the first broker listener (None: no broker listener)."""
        name = self.optional_str_of("inter.broker.listener.name")
        if name:
            return name.strip().upper()
        return self.broker_listeners[0].name if self.broker_listeners else None

    @staticmethod
    def _parse(d: ConfigDef, text: str | None) -> object:
        if text is None:
            if d.type == "list" and isinstance(d.default, str):
                return _PARSERS["list"](d.default)
            return d.default
        try:
            return _PARSERS[d.type](text)
        except (ValueError, KeyError):
            raise ConfigError(f"{d.name}: invalid {d.type} value {text!r}") from None

    @classmethod
    def from_file(cls, path: str | Path, overrides: dict[str, str] | None = None) -> NodeConfig:
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise ConfigError(f"cannot read config file {path}: {e.strerror}") from None
        props = parse_properties(text)
        props.update(overrides or {})
        return cls(props)

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    # Typed reads: _parse gives each key the Python type its ConfigDef.type names (or its default,
    # None when it has none), so a mismatch here is a wrong key or type in BROKER_CONFIGS.
    def _typed(self, name: str, kind: type[_V]) -> _V | None:
        value = self.values[name]
        if value is not None and not isinstance(value, kind):
            raise TypeError(f"{name}: {value!r} is not a {kind.__name__}")
        return value

    def int_of(self, name: str) -> int:
        return self._required(name, self._typed(name, int))

    def str_of(self, name: str) -> str:
        return self._required(name, self._typed(name, str))

    def list_of(self, name: str) -> list[str]:
        return self._required(name, self._typed(name, list))

    def optional_str_of(self, name: str) -> str | None:
        return self._typed(name, str)

    def optional_list_of(self, name: str) -> list[str] | None:
        return self._typed(name, list)

    @staticmethod
    def _required(name: str, value: _V | None) -> _V:
        if value is None:
            raise ConfigError(f"{name}: required")
        return value

    def get(self, name: str, default: object = None) -> Any:
        """Mapping-style access: the typed value, or ``default`` for unknown or unset keys."""
        value = self.values.get(name)
        return default if value is None else value

    @property
    def node_id(self) -> int:
        return self.int_of("node.id")

    @property
    def log_dirs(self) -> list[Path]:
        return [Path(p) for p in self.list_of("log.dirs")]

    def topic_defaults(self) -> dict[str, str]:
        """Broker ``log.*`` settings expressed as topic config values (strings)."""
        out = {}
        for d in BROKER_CONFIGS.values():
            if d.topic_synonym:
                v = self.values[d.name]
                out[d.topic_synonym] = ",".join(v) if isinstance(v, list) else str(v).lower() \
                    if isinstance(v, bool) else str(v)
        return out

    def prefixed(self, prefix: str) -> dict[str, str]:
        """The raw settings under a plugin prefix (``rsm.config.``), prefix kept."""
        return {k: v for k, v in self.raw.items() if k.startswith(prefix)}

    def is_explicit(self, name: str) -> bool:
        return name in self.raw
