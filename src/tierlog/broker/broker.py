"""The broker role: what request handlers may use, composed in one place.

Handlers get a ``Broker`` and reach the metadata image (``image``; ``metadata``
to wait for a change), the active controller (``controller_channel``, a channel that
forwards admin requests), the hosted partitions (``replicas``), fetch sessions,
the group coordinator (``groups``), the transaction coordinator (``transactions``) and settings through it; background work a
handler starts (an automatic topic creation) goes to ``background``, which ``close`` cancels and awaits.  It holds
no request logic of its own.
"""
from __future__ import annotations

from tierlog.clock import wall_clock_ms
from tierlog.config import NodeConfig
from tierlog.group.group_config import share_partition_config
from tierlog.metadata import BrokerInfo, MetadataImage
from tierlog.metadata.authorizer import authorizer_from_config
from tierlog.net.client import DEFAULT_ROUTE, PeerRoute
from tierlog.net.tasks import TaskSet
from tierlog.protocol.api import ApiKey
from tierlog.protocol.errors import ErrorCode

from .client_telemetry import ClientTelemetry
from .controller_channel import ControllerUnavailable
from .group_coordinator import GroupCoordinator
from .internal_topics import create_share_state_topic
from .lifecycle import BrokerLifecycleManager
from .producer_ids import ProducerIdManager
from .replica_manager import ReplicaManager
from .share_coordinator import ShareCoordinator
from .share_dead_letters import DeadLetters
from .share_partitions import SharePartitions
from .share_persister import SharePersister
from .telemetry_series import TelemetrySeries
from .transaction_coordinator import ProducerIdsUnavailable as TxnProducerIdsUnavailable
from .transaction_coordinator import TransactionCoordinator
from .txn_marker_sender import TxnMarkerSender
from .txn_verification import TxnVerifier

__all__ = ["Broker", "ProducerIdsUnavailable"]


class ProducerIdsUnavailable(Exception):
    """The controller refused a producer id block; ``args[0]`` is its error code."""


class Broker:
    def __init__(self, config: NodeConfig, metadata, controller_channel, replicas: ReplicaManager,
                 lifecycle: BrokerLifecycleManager, api_versions: list[dict], clock_ms=wall_clock_ms,
                 inter_broker: PeerRoute = DEFAULT_ROUTE, remote=None, quotas=None):
        self.config = config
        self.quotas = quotas                # broker.client_quotas.ClientQuotaManager (None: no quotas)
        self.node_id = config.node_id
        self.metadata = metadata            # .image, async .wait_for(predicate, timeout_s)
        self.controller_channel = controller_channel    # async .send(api_key, body, timeout_s, version)
        self.replicas = replicas
        self.api_versions = api_versions
        self.clock_ms = clock_ms
        self.fetch_sessions = replicas.fetch_sessions      # the replica manager marks partitions with news
        self.fetch_purgatory = replicas.fetch_purgatory    # and wakes the fetches parked on them
        self.producer_ids = ProducerIdManager(self._allocate_producer_ids)
        self.lifecycle = lifecycle          # registration and heartbeats: the broker epoch
        self.background = TaskSet(f"broker {self.node_id}")
        self.fetch_max_bytes = config["fetch.max.bytes"]
        self.fetch_wait_max_ms = max(config["replica.fetch.wait.max.ms"], config["request.timeout.ms"])
        self.remote = remote    # broker.remote.RemoteTier when remote.log.storage.system.enable
        self.groups = GroupCoordinator(config, replicas, clock_ms,      # consumer groups (__consumer_offsets)
                                       lambda group_id: metadata.image.group_config(group_id), self.image_leader)
        self.authorizer = authorizer_from_config(config.raw)             # KIP-801; None: no ACL checks
        replicas.add_leadership_listener(self.groups)
        markers = TxnMarkerSender(self.node_id, lambda: self.image, replicas, self.led_partition,
                                  self.groups.on_txn_marker, clock_ms, config["request.timeout.ms"], inter_broker)
        self.transactions = TransactionCoordinator(config, replicas, self._txn_producer_id, markers, clock_ms,
                                                   self.image_leader)
        replicas.add_leadership_listener(self.transactions)     # transactions (__transaction_state)
        # share groups (KIP-932): the share coordinator (__share_group_state, hosted once the topic exists)
        # and the share-partitions this broker leads, whose state it keeps
        self.share_states = ShareCoordinator(config, replicas, clock_ms, self.image_leader)
        replicas.add_leadership_listener(self.share_states.runtime)
        self.share_persister = persister = SharePersister(self.node_id, lambda: self.image, self.share_states,
                                                          lambda: create_share_state_topic(self), clock_ms,
                                                          inter_broker)
        self.share_partitions = SharePartitions(share_partition_config(config),
                                                config["group.share.max.share.sessions"], replicas, persister,
                                                lambda: self.image, remote, clock_ms,
                                                dead_letters=DeadLetters(self.node_id, lambda: self.image,
                                                                         inter_broker),
                                                idle_session_ms=config["group.share.max.session.timeout.ms"],
                                                group_settings=self.groups.config.rule_settings)
        self.txn_verifier = TxnVerifier(self.node_id, lambda: self.image, replicas, self.transactions, inter_broker)
        series = TelemetrySeries(lambda: self.telemetry.instance_count)
        self.telemetry = ClientTelemetry(lambda: self.image.client_metrics, config["telemetry.max.bytes"], series)

    async def _txn_producer_id(self) -> int:
        try:
            return await self.producer_ids.next_id()
        except (ControllerUnavailable, ProducerIdsUnavailable) as e:
            raise TxnProducerIdsUnavailable(str(e)) from e

    async def _allocate_producer_ids(self) -> range:
        """A block from the controller (AllocateProducerIds, 67); ``broker_epoch`` fences stale brokers."""
        body = {"BrokerId": self.node_id, "BrokerEpoch": self.broker_epoch()}
        resp = await self.controller_channel.send(ApiKey.ALLOCATE_PRODUCER_IDS, body, 10.0, 0)
        if resp["ErrorCode"] != ErrorCode.NONE:
            raise ProducerIdsUnavailable(resp["ErrorCode"])
        return range(resp["ProducerIdStart"], resp["ProducerIdStart"] + resp["ProducerIdLen"])

    def broker_epoch(self) -> int:
        return self.lifecycle.broker_epoch

    @property
    def image(self) -> MetadataImage:
        return self.metadata.image

    def endpoint(self, node_id: int) -> BrokerInfo | None:
        return self.image.brokers.get(node_id)

    def image_leader(self, topic: str, index: int) -> int:
        """The leader of a partition in the newest metadata image (-1: none, or no such partition)."""
        info = self.image.topics.get(topic)
        return info.partitions[index].leader if info is not None and 0 <= index < len(info.partitions) else -1

    def led_partition(self, topic: str, index: int):
        """(partition, NONE) when this node leads it, else (partition or None, Kafka error code); the
        partition says whether it leads (``Partition.is_leader``), not the image."""
        part = self.replicas.get(topic, index)
        if part is None:
            return None, self.unhosted_error(topic, index)
        return part, ErrorCode.NONE if part.is_leader else ErrorCode.NOT_LEADER_OR_FOLLOWER

    def unhosted_error(self, topic: str, index: int) -> ErrorCode:
        """The answer for a partition this broker does not host: NOT_LEADER_OR_FOLLOWER when the image
        has it, else UNKNOWN_TOPIC_OR_PARTITION."""
        info = self.image.topics.get(topic)
        known = info is not None and 0 <= index < len(info.partitions)
        return ErrorCode.NOT_LEADER_OR_FOLLOWER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

    async def close(self) -> None:
        """Cancel and await the background work handlers started, and the group coordinator's."""
        await self.background.close()
        await self.groups.close()
        await self.transactions.close()
        await self.share_partitions.close()
        await self.share_states.close()
        self.txn_verifier.close()
