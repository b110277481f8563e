"""MetadataDelta: replay metadata records onto an image, then build the next image.

    delta = MetadataDelta(image, now_ms=batch.append_timestamp)
    for record in records:
        delta.replay(record)
    new_image = delta.apply(MetadataProvenance(last_offset, epoch, timestamp))

The delta keeps working copies of only what the records touch (changed brokers,
changed topics); ``apply`` builds the next image with structural sharing: the
topic table, the topic-id index and the broker -> topics index are PMaps, so a
batch touching one topic copies that topic and one bucket of each map, never
the other 100k topics.

Broker events (KIP-630 "Amount of Data Replicated")
---------------------------------------------------
Fencing a broker writes ONE small record, not a PartitionChangeRecord per
partition. ``FenceBrokerRecord``, ``UnfenceBrokerRecord``,
``BrokerRegistrationChangeRecord`` (fence / unfence / controlled shutdown),
``RegisterBrokerRecord`` and ``UnregisterBrokerRecord`` are *events*: after
updating the broker, the delta compares the broker's usability (registered,
unfenced, not shutting down) before and after, and derives every affected
partition deterministically from the state the log has built so far:

* usable -> unusable: for each partition listing the broker (found through the
  image's broker -> topics index plus topics this delta touched), the broker
  leaves the ISR (``election.remove_from_isr``: KIP-966, the last ISR member
  moves to the ELR); if it led the partition (or the partition has no leader),
  a new leader is elected with ``election.elect_leader`` (ANY, unclean per
  ``unclean.leader.election.enable``, KIP-1303 thresholds as below,
  ``now_ms`` = the batch's append timestamp).
* unusable -> usable: every leaderless partition listing the broker runs the
  same ANY election (the broker may now be a valid ELR / last-known leader, or
  an unclean candidate).
* a replica whose log dir is offline (KIP-858, ``directories``: its assigned
  dir is not among its broker's registered online dirs) is never elected.
* a change bumps ``partition_epoch``; a leader change also bumps ``leader_epoch``
  (an ISR-only change keeps the leader epoch, as current Kafka does).

KIP-1303 thresholds of a derived election, per topic, first found of: the
topic override, the cluster-wide dynamic broker config (ConfigRecord on the
default broker resource ""), the static default the event record itself
carries (``EligibleLocalLogMs`` / ``EligibleLocalLogBytes``: the writing
controller's server.properties values, see ``records``), -1 (off).  These are
exactly the effective values the active controller's own elections read
(``PartitionControlManager.thresholds``), so a value set only in
server.properties counts in fence and controlled-shutdown elections too.

Every replica of the metadata log replays the same records with the same
append timestamps, so it derives the same image. Snapshots write derived
state explicitly (PartitionRecords with the resulting leader/ISR/ELR), and
brokers are written before topics, so loading a snapshot derives nothing.

Directories (KIP-858): a PartitionChangeRecord without ``Directories`` that
changes the replicas keeps the kept replicas' dirs and gives new ones their
broker's default (``directories.realign``), so replicas and dirs stay aligned.

Replay errors (a record referring to an unknown topic / broker, a broker epoch
mismatch) raise :class:`MetadataReplayError` and leave the delta unchanged by
that record.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any, TypeVar

from .acls import AclBinding
from .client_quotas import QuotaEntity, entity_of
from .cluster_records import (
    CONFIG_RESOURCE_BROKER,
    CONFIG_RESOURCE_CLIENT_METRICS,
    CONFIG_RESOURCE_GROUP,
    CONFIG_RESOURCE_TOPIC,
    NO_LEADER,
    NO_LEADER_CHANGE,
    AccessControlEntryRecord,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    FenceBrokerRecord,
    MetadataRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    ReplicaLogCoverage,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)
from .directories import offline_replicas, realign
from .feature_records import FeatureLevelRecord
from .image import (
    LEADER_RECOVERING,
    BrokerInfo,
    MetadataImage,
    MetadataProvenance,
    PartitionInfo,
    TopicInfo,
    reindex,
)
from .leader_election import EligibilityThresholds, elect_leader, remove_from_isr
from .pmap import REMOVE, PMap, Removal
from .quota_records import ClientQuotaRecord
from .scram import ScramCredential, ScramMechanism
from .scram_image import credential_of
from .scram_records import RemoveUserScramCredentialRecord, UserScramCredentialRecord

__all__ = [
    "ELIGIBLE_LOCAL_LOG_BYTES",
    "ELIGIBLE_LOCAL_LOG_MS",
    "MetadataDelta",
    "MetadataReplayError",
    "partition_from_record",
]

ELIGIBLE_LOCAL_LOG_MS = "leader.election.eligible.local.log.ms"
ELIGIBLE_LOCAL_LOG_BYTES = "leader.election.eligible.local.log.bytes"
MIN_INSYNC_REPLICAS = "min.insync.replicas"
UNCLEAN_ELECTION = "unclean.leader.election.enable"

T = TypeVar("T")
#: (topic id, partitions (None: not recorded yet), configs) of a topic as this delta sees it
_TopicView = tuple[bytes, Sequence["PartitionInfo | None"], Mapping[str, str]]


class MetadataReplayError(ValueError):
    """A record that cannot apply to the current state (unknown topic, bad epoch)."""


class _TopicWork:
    __slots__ = ("configs", "name", "partitions", "topic_id")

    def __init__(self, name: str, topic_id: bytes, partitions: list[PartitionInfo | None],
                 configs: dict[str, str]):
        self.name, self.topic_id = name, topic_id
        self.partitions, self.configs = partitions, configs

    def freeze(self) -> TopicInfo:
        partitions = tuple(p for p in self.partitions if p is not None)
        if len(partitions) != len(self.partitions):
            missing = [i for i, p in enumerate(self.partitions) if p is None]
            raise MetadataReplayError(f"topic {self.name}: partitions {missing} missing")
        return TopicInfo(self.name, self.topic_id, partitions, MappingProxyType(dict(self.configs)))


def partition_from_record(r: PartitionRecord) -> PartitionInfo:
    return PartitionInfo(
        r.partition_id, r.leader, r.leader_epoch, tuple(r.replicas), tuple(r.isr),
        r.partition_epoch, tuple(r.eligible_leader_replicas or ()),
        tuple(r.last_known_elr or ()), tuple(r.adding_replicas), tuple(r.removing_replicas),
        r.leader_recovery_state, _coverage(r.local_log_coverage, r.replicas),
        tuple(r.directories) if len(r.directories) == len(r.replicas) else ())


def _coverage(entries: Iterable[ReplicaLogCoverage], replicas: Iterable[int]) -> tuple[ReplicaLogCoverage, ...]:
    keep = set(replicas)
    return tuple(sorted((c for c in entries if c.broker_id in keep), key=lambda c: c.broker_id))


class MetadataDelta:
    def __init__(self, image: MetadataImage, now_ms: int = 0):
        self.image = image
        self.now_ms = now_ms                 # append time of the batch being replayed
        self.records_replayed = 0
        self.bytes_replayed = 0              # set by the loader (encoded sizes)
        self._brokers: dict[int, BrokerInfo | Removal] = {}
        self._topics: dict[str, _TopicWork | None] = {}     # None: removed
        self._ids: dict[bytes, str | Removal] = {}           # topic id -> name
        self._replicas_changed: set[str] = set()
        self._touched: dict[int, set[str]] = {}
        self._configs: dict[str, dict[str, str] | Removal] = {}     # by broker resource
        self._group_configs: dict[str, dict[str, str]] = {}          # by group id (empty: none left)
        self._client_metrics: dict[str, dict[str, str]] = {}         # by resource name (empty: none left)
        self._producer_ids: ProducerIdsRecord | None = None
        # (mechanism, user) -> credential, None: removed
        self._scram: dict[tuple[int, str], ScramCredential | None] = {}
        self._acls: dict[bytes, AclBinding | Removal] = {}       # by ACL id (KIP-801)
        self._features: dict[str, int | Removal] = {}           # feature name -> level (REMOVE: level 0)
        self._quotas: dict[QuotaEntity, dict[str, float | None]] = {}   # entity -> key -> value (None: removed)
        self._static_thresholds = (-1, -1)   # KIP-1303 defaults carried by the event being replayed
        self._handlers: dict[type, Callable[[Any], None]] = {
            RegisterBrokerRecord: self._register, UnregisterBrokerRecord: self._unregister,
            TopicRecord: self._topic, PartitionRecord: self._partition,
            ConfigRecord: self._config, PartitionChangeRecord: self._partition_change,
            FenceBrokerRecord: self._fence, UnfenceBrokerRecord: self._unfence,
            RemoveTopicRecord: self._remove_topic, ProducerIdsRecord: self._producer_ids_rec,
            BrokerRegistrationChangeRecord: self._registration_change,
            NoOpRecord: lambda r: None,
            UserScramCredentialRecord: self._scram_credential,
            RemoveUserScramCredentialRecord: self._remove_scram_credential,
            AccessControlEntryRecord: self._acl, RemoveAccessControlEntryRecord: self._remove_acl,
            FeatureLevelRecord: self._feature_level,
            ClientQuotaRecord: self._client_quota,
        }

    # -- what changed (for subscribers) ---------------------------------------
    @property
    def changed_topics(self) -> set[str]:
        """Names of topics created, changed or removed by this delta."""
        return set(self._topics)

    @property
    def changed_brokers(self) -> set[int]:
        return set(self._brokers)

    @property
    def changed_configs(self) -> set[str]:
        """Broker config resources ("" the cluster default, else a broker id) changed by this delta."""
        return set(self._configs)

    # -- replay ----------------------------------------------------------------
    def replay(self, record: MetadataRecord, now_ms: int | None = None) -> None:
        if now_ms is not None:
            self.now_ms = now_ms
        handler = self._handlers.get(type(record))
        if handler is None:
            raise MetadataReplayError(f"no replay for {type(record).__name__}")
        handler(record)
        self.records_replayed += 1

    # lookups over image + pending changes
    def broker(self, node_id: int) -> BrokerInfo | None:
        b = self._brokers.get(node_id)
        if b is None:
            return self.image.brokers.get(node_id)
        return None if b is REMOVE else b

    def _topic_name(self, topic_id: bytes) -> str | None:
        n = self._ids.get(topic_id)
        if n is None:
            return self.image.topic_ids.get(topic_id)
        return None if n is REMOVE else n

    def _topic_view(self, name: str) -> _TopicView | None:
        """(topic_id, partitions sequence, configs mapping) or None."""
        if name in self._topics:
            w = self._topics[name]
            return None if w is None else (w.topic_id, w.partitions, w.configs)
        t = self.image.topics.get(name)
        return None if t is None else (t.topic_id, t.partitions, t.configs)

    def _work(self, name: str) -> _TopicWork:
        w = self._topics.get(name)
        if w is None:
            if name in self._topics:
                raise MetadataReplayError(f"topic {name} was removed")
            t = self.image.topics.get(name)
            if t is None:
                raise MetadataReplayError(f"unknown topic {name}")
            w = self._topics[name] = _TopicWork(name, t.topic_id, list(t.partitions),
                                                dict(t.configs))
        return w

    def _work_by_id(self, topic_id: bytes) -> _TopicWork:
        name = self._topic_name(bytes(topic_id))
        if name is None:
            raise MetadataReplayError(f"unknown topic id {bytes(topic_id).hex()}")
        return self._work(name)

    def _usable(self) -> set[int]:
        ids = set(self.image.brokers) | set(self._brokers)
        return {i for i in ids if (b := self.broker(i)) is not None and b.usable}

    def _usable_for(self, p: PartitionInfo, usable: set[int]) -> set[int]:
        """``usable`` without the replicas of ``p`` whose log dir is offline (KIP-858: they cannot lead)."""
        offline = offline_replicas(p.replicas, p.directories, self.broker)
        return usable - offline if offline else usable

    def _cluster_config(self, name: str, default: T) -> str | T:
        pending = self._configs.get("")
        c: Mapping[str, str]
        if pending is None:
            c = self.image.cluster_configs()
        elif pending is REMOVE:
            c = {}
        else:
            c = pending
        return c.get(name, default)

    def _thresholds(self, configs: Mapping[str, str]) -> EligibilityThresholds:
        """KIP-1303 "Topic Configuration Overrides": topic value, else cluster-wide dynamic
        value, else the static default the event record carries, else -1."""
        static_ms, static_bytes = self._static_thresholds
        return EligibilityThresholds(
            _as_int(self._topic_config(configs, ELIGIBLE_LOCAL_LOG_MS, static_ms), -1),
            _as_int(self._topic_config(configs, ELIGIBLE_LOCAL_LOG_BYTES, static_bytes), -1))

    def _topic_config(self, configs: Mapping[str, str], name: str, default: T) -> str | T:
        if name in configs:
            return configs[name]
        return self._cluster_config(name, default)

    # -- brokers ---------------------------------------------------------------
    def _set_broker(self, node_id: int, new: BrokerInfo | None, event: MetadataRecord) -> None:
        old = self.broker(node_id)
        self._static_thresholds = (getattr(event, "eligible_local_log_ms", -1),
                                   getattr(event, "eligible_local_log_bytes", -1))
        self._brokers[node_id] = REMOVE if new is None else new
        was = old is not None and old.usable
        now = new is not None and new.usable
        if was and not now:
            self._derive_unusable(node_id)
        elif now and not was:
            self._derive_usable(node_id)

    def _register(self, r: RegisterBrokerRecord) -> None:
        ep = r.endpoints[0] if r.endpoints else None
        self._set_broker(r.broker_id, BrokerInfo(
            r.broker_id, ep.host if ep else "", ep.port if ep else 0, r.rack,
            r.broker_epoch, bool(r.fenced), bool(r.in_controlled_shutdown),
            bytes(r.incarnation_id), tuple(r.endpoints), tuple(r.features), tuple(r.log_dirs)), r)

    def _checked(self, node_id: int, epoch: int) -> BrokerInfo:
        b = self.broker(node_id)
        if b is None:
            raise MetadataReplayError(f"unknown broker {node_id}")
        if b.epoch != epoch:
            raise MetadataReplayError(f"broker {node_id} has epoch {b.epoch}, record says {epoch}")
        return b

    def _unregister(self, r: UnregisterBrokerRecord) -> None:
        self._checked(r.broker_id, r.broker_epoch)
        self._set_broker(r.broker_id, None, r)

    def _fence(self, r: FenceBrokerRecord) -> None:
        b = self._checked(r.id, r.epoch)
        self._set_broker(r.id, replace(b, fenced=True), r)

    def _unfence(self, r: UnfenceBrokerRecord) -> None:
        b = self._checked(r.id, r.epoch)
        self._set_broker(r.id, replace(b, fenced=False), r)

    def _registration_change(self, r: BrokerRegistrationChangeRecord) -> None:
        b = self._checked(r.broker_id, r.broker_epoch)
        fenced = {1: True, -1: False}.get(r.fenced, b.fenced)
        icsd = True if r.in_controlled_shutdown == 1 else b.in_controlled_shutdown
        log_dirs = tuple(r.log_dirs) if r.log_dirs else b.log_dirs     # empty: no change (Kafka's tagged default)
        self._set_broker(r.broker_id, replace(b, fenced=fenced, in_controlled_shutdown=icsd, log_dirs=log_dirs), r)

    # -- derivation (KIP-630 events) --------------------------------------------
    def _topics_hosting(self, node_id: int) -> list[str]:
        names = list(self.image.broker_topics.get(node_id, ()))
        extra = self._touched.get(node_id)
        if extra:
            seen = set(names)
            names.extend(sorted(n for n in extra if n not in seen))
        return names

    def _derive_unusable(self, node_id: int) -> None:
        usable = self._usable()
        for name in self._topics_hosting(node_id):
            view = self._topic_view(name)
            if view is None:
                continue
            _, parts, configs = view
            thresholds = self._thresholds(configs)
            min_isr = _as_int(self._topic_config(configs, MIN_INSYNC_REPLICAS, 1), 1)
            unclean = str(self._topic_config(configs, UNCLEAN_ELECTION, "false")).lower() == "true"
            work = None
            for i, p in enumerate(parts):
                if p is None or (node_id not in p.isr and p.leader != node_id):
                    continue
                isr, elr = remove_from_isr(p.isr, p.elr, node_id, min_isr)
                leader, lke, is_unclean = p.leader, p.last_known_elr, False
                if leader in (node_id, NO_LEADER):
                    res = elect_leader(
                        replicas=p.replicas, isr=isr, leader=NO_LEADER, usable=self._usable_for(p, usable),
                        elr=elr, last_known_elr=lke, unclean_allowed=unclean,
                        coverage=p.coverage(), thresholds=thresholds, now_ms=self.now_ms)
                    leader, isr, elr, lke, is_unclean = (
                        res.leader, res.isr, res.elr, res.last_known_elr, res.unclean)
                if work is None:
                    work = self._work(name)
                work.partitions[i] = _next_state(p, leader, isr, elr, lke, is_unclean)

    def _derive_usable(self, node_id: int) -> None:
        usable = self._usable()
        for name in self._topics_hosting(node_id):
            view = self._topic_view(name)
            if view is None:
                continue
            _, parts, configs = view
            thresholds = self._thresholds(configs)
            unclean = str(self._topic_config(configs, UNCLEAN_ELECTION, "false")).lower() == "true"
            work = None
            for i, p in enumerate(parts):
                if p is None or p.leader != NO_LEADER or node_id not in p.replicas:
                    continue
                res = elect_leader(
                    replicas=p.replicas, isr=p.isr, leader=NO_LEADER, usable=self._usable_for(p, usable),
                    elr=p.elr, last_known_elr=p.last_known_elr, unclean_allowed=unclean,
                    coverage=p.coverage(), thresholds=thresholds, now_ms=self.now_ms)
                if res.leader == NO_LEADER:
                    continue
                if work is None:
                    work = self._work(name)
                work.partitions[i] = _next_state(p, res.leader, res.isr, res.elr,
                                                 res.last_known_elr, res.unclean)

    # -- topics and partitions ----------------------------------------------------
    def _touch(self, name: str, replicas: Iterable[int]) -> None:
        for b in replicas:
            self._touched.setdefault(b, set()).add(name)

    def _topic(self, r: TopicRecord) -> None:
        tid = bytes(r.topic_id)
        if self._topic_view(r.name) is not None:
            raise MetadataReplayError(f"topic {r.name} already exists")
        if self._topic_name(tid) is not None:
            raise MetadataReplayError(f"topic id {tid.hex()} already exists")
        self._topics[r.name] = _TopicWork(r.name, tid, [], {})
        self._ids[tid] = r.name
        self._replicas_changed.add(r.name)

    def _partition(self, r: PartitionRecord) -> None:
        w = self._work_by_id(r.topic_id)
        p = partition_from_record(r)
        if not 0 <= r.partition_id <= 1_000_000:
            raise MetadataReplayError(f"bad partition id {r.partition_id}")
        while len(w.partitions) <= r.partition_id:
            w.partitions.append(None)
        old = w.partitions[r.partition_id]
        w.partitions[r.partition_id] = p
        if old is None or old.replicas != p.replicas:
            self._replicas_changed.add(w.name)
            self._touch(w.name, p.replicas)

    def _partition_change(self, r: PartitionChangeRecord) -> None:
        w = self._work_by_id(r.topic_id)
        p = w.partitions[r.partition_id] if 0 <= r.partition_id < len(w.partitions) else None
        if p is None:
            raise MetadataReplayError(f"unknown partition {w.name}-{r.partition_id}")
        replicas = p.replicas if r.replicas is None else tuple(r.replicas)
        leader_changed = r.leader != NO_LEADER_CHANGE
        local_log = p.local_log
        if r.local_log_coverage is not None or r.replicas is not None:
            merged = p.coverage()
            for c in r.local_log_coverage or ():
                merged[c.broker_id] = c
            local_log = _coverage(merged.values(), replicas)
        if r.directories is not None:
            dirs = tuple(r.directories)
        elif replicas != p.replicas:
            dirs = realign(p.replicas, p.directories, replicas, self.broker)
        else:
            dirs = p.directories
        w.partitions[r.partition_id] = PartitionInfo(
            p.partition,
            r.leader if leader_changed else p.leader,
            p.leader_epoch + 1 if leader_changed else p.leader_epoch,
            replicas,
            p.isr if r.isr is None else tuple(r.isr),
            p.partition_epoch + 1,
            p.elr if r.eligible_leader_replicas is None else tuple(r.eligible_leader_replicas),
            p.last_known_elr if r.last_known_elr is None else tuple(r.last_known_elr),
            p.adding_replicas if r.adding_replicas is None else tuple(r.adding_replicas),
            p.removing_replicas if r.removing_replicas is None else tuple(r.removing_replicas),
            p.leader_recovery_state if r.leader_recovery_state == -1 else r.leader_recovery_state,
            local_log, dirs if len(dirs) == len(replicas) else ())
        if replicas != p.replicas:
            self._replicas_changed.add(w.name)
            self._touch(w.name, replicas)

    def _remove_topic(self, r: RemoveTopicRecord) -> None:
        tid = bytes(r.topic_id)
        name = self._topic_name(tid)
        if name is None:
            raise MetadataReplayError(f"unknown topic id {tid.hex()}")
        self._topics[name] = None
        self._ids[tid] = REMOVE
        self._replicas_changed.add(name)

    def _config(self, r: ConfigRecord) -> None:
        if r.resource_type == CONFIG_RESOURCE_TOPIC:
            w = self._work(r.resource_name)
            if r.value is None:
                w.configs.pop(r.name, None)
            else:
                w.configs[r.name] = r.value
        elif r.resource_type == CONFIG_RESOURCE_BROKER:
            c = self._configs.get(r.resource_name)
            if c is None or c is REMOVE:
                base = None if c is REMOVE else self.image.configs.get(r.resource_name)
                c = self._configs[r.resource_name] = dict(base or {})
            _set(c, r)
        elif r.resource_type == CONFIG_RESOURCE_GROUP:
            _set(_named(self._group_configs, self.image.group_configs, r.resource_name), r)
        elif r.resource_type == CONFIG_RESOURCE_CLIENT_METRICS:
            _set(_named(self._client_metrics, self.image.client_metrics, r.resource_name), r)
        # other resource types (broker loggers, ...) are not kept

    def _producer_ids_rec(self, r: ProducerIdsRecord) -> None:
        current = self._producer_ids or self.image.producer_ids
        if current is not None and r.next_producer_id < current.next_producer_id:
            raise MetadataReplayError(
                f"next producer id {r.next_producer_id} < {current.next_producer_id}")
        self._producer_ids = r

    def _feature_level(self, r: FeatureLevelRecord) -> None:
        """KIP-584: a feature's finalized level; level 0 removes it."""
        self._features[r.name] = REMOVE if r.feature_level == 0 else r.feature_level

    def _client_quota(self, r: ClientQuotaRecord) -> None:
        entity = entity_of((e.entity_type, e.entity_name) for e in r.entity)
        self._quotas.setdefault(entity, {})[r.key] = None if r.remove else r.value

    def _scram_credential(self, r: UserScramCredentialRecord) -> None:
        if ScramMechanism.by_type(r.mechanism) is None:
            raise MetadataReplayError(f"unknown SCRAM mechanism {r.mechanism} for user {r.name}")
        self._scram[(r.mechanism, r.name)] = credential_of(r)

    def _remove_scram_credential(self, r: RemoveUserScramCredentialRecord) -> None:
        key = (r.mechanism, r.name)
        if self._scram.get(key, self.image.scram.credentials.get(key)) is None:
            raise MetadataReplayError(f"no SCRAM credential to remove for user {r.name} mechanism {r.mechanism}")
        self._scram[key] = None
    def _has_acl(self, acl_id: bytes) -> bool:
        pending = self._acls.get(acl_id)
        return pending is not REMOVE and (pending is not None or acl_id in self.image.acls)

    def _acl(self, r: AccessControlEntryRecord) -> None:
        # Kafka's AclControlManager.replay: an id is added once
        if self._has_acl(r.id):
            raise MetadataReplayError(f"an ACL with id {r.id.hex()} already exists")
        self._acls[r.id] = r.binding()

    def _remove_acl(self, r: RemoveAccessControlEntryRecord) -> None:
        if not self._has_acl(r.id):
            raise MetadataReplayError(f"no ACL with id {r.id.hex()} to remove")
        self._acls[r.id] = REMOVE

    # -- apply -------------------------------------------------------------------
    def apply(self, provenance: MetadataProvenance | None = None) -> MetadataImage:
        """The next image: untouched topics, brokers and buckets are shared."""
        img = self.image
        topic_changes: dict[str, TopicInfo | Removal] = {}
        pairs: list[tuple[TopicInfo | None, TopicInfo | None]] = []
        for name, w in self._topics.items():
            new = None if w is None else w.freeze()
            old = img.topics.get(name)
            topic_changes[name] = REMOVE if new is None else new
            if name in self._replicas_changed:
                pairs.append((old, new))
        configs = img.configs
        if self._configs:
            configs = configs.evolve({k: REMOVE if v is REMOVE or not v else MappingProxyType(v)
                                      for k, v in self._configs.items()})
        group_configs = _evolve_named(img.group_configs, self._group_configs)
        client_metrics = _evolve_named(img.client_metrics, self._client_metrics)
        return MetadataImage(
            img.cluster_id, img.controller_id,
            img.brokers.evolve(self._brokers),
            img.topics.evolve(topic_changes),
            img.epoch + 1,
            img.topic_ids.evolve(self._ids),
            reindex(img.broker_topics, pairs),
            configs,
            self._producer_ids or img.producer_ids,
            provenance or img.provenance,
            acls=img.acls.evolve(self._acls) if self._acls else img.acls,
            group_configs=group_configs,
            scram=img.scram.with_changes(self._scram),
            features=img.features.evolve(self._features) if self._features else img.features,
            client_quotas=img.client_quotas.with_changes(self._quotas),
            client_metrics=client_metrics)


def _named(changed: dict[str, dict[str, str]], before: Mapping[str, Mapping[str, str]], name: str) -> dict[str, str]:
    """The configs of the named resource (a group, a client metrics subscription) this delta changes."""
    c = changed.get(name)
    if c is None:
        c = changed[name] = dict(before.get(name) or {})
    return c


def _evolve_named(before: PMap[str, Mapping[str, str]], changed: dict[str, dict[str, str]]) -> PMap[str, Mapping[str, str]]:
    """``before`` with the changed resources' configs (a resource left without any is gone)."""
    if not changed:
        return before
    return before.evolve({k: MappingProxyType(v) if v else REMOVE for k, v in changed.items()})


def _set(configs: dict[str, str], r: ConfigRecord) -> None:
    if r.value is None:
        configs.pop(r.name, None)
    else:
        configs[r.name] = r.value


def _as_int(value: str | int, default: int) -> int:
    """A config value as an int; a malformed value (the controller validates configs,
    replay must never fail on one) counts as the default."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _next_state(p: PartitionInfo, leader: int, isr: Iterable[int], elr: Iterable[int], lke: Iterable[int],
                unclean: bool) -> PartitionInfo:
    return replace(
        p, leader=leader,
        leader_epoch=p.leader_epoch + 1 if leader != p.leader else p.leader_epoch,
        isr=tuple(isr), elr=tuple(elr), last_known_elr=tuple(lke),
        partition_epoch=p.partition_epoch + 1,
        leader_recovery_state=LEADER_RECOVERING if unclean else p.leader_recovery_state)
