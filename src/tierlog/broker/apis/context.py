"""What a request handler may use of the broker.

Every API module's ``handle(broker, header, request)`` takes a
:class:`HandlerContext`: exactly the broker's members that handlers use, and
for its parts (metadata, controller, replicas) exactly the methods they call.
``broker.broker.Broker`` satisfies it structurally (so does the broker that
``leader_hint.LeaderHints`` reads); the annotations are for readers and type
checkers (``isinstance`` checks only that the members exist); a test may pass any object
that does. A handler that needs more of the broker extends this protocol
first, so the surface handlers depend on stays visible in one place.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, Union, runtime_checkable

if TYPE_CHECKING:
    from tierlog.broker.client_telemetry import ClientTelemetry
    from tierlog.broker.fetch_purgatory import FetchPurgatory
    from tierlog.broker.fetch_session import FetchSessionCache, SessionPartition
    from tierlog.broker.log_dir_moves import LogDirMoves
    from tierlog.broker.partition import AppendOrigin, AppendOutcome, Partition, PartitionUpdate
    from tierlog.broker.producer_ids import ProducerIdManager
    from tierlog.broker.share_coordinator import ShareCoordinator
    from tierlog.broker.share_partitions import SharePartitions
    from tierlog.broker.share_persister import SharePersister
    from tierlog.broker.txn_verification import ProducedBatch
    from tierlog.config import NodeConfig
    from tierlog.metadata import BrokerInfo, MetadataImage
    from tierlog.metadata.authorizer import Authorizer
    from tierlog.protocol import ErrorCode, RequestHeader
    from tierlog.protocol.typed.api_versions import ApiVersion
    from tierlog.storage import LogManager

__all__ = ["ControllerSender", "GroupCoordinatorService", "Handler", "HandlerContext", "HostedReplicas", "MetadataSource",
           "Response",
           "TransactionCoordinatorService", "TxnVerification"]


class MetadataSource(Protocol):
    """The broker's metadata image, and a wait for a change to show in it."""

    @property
    def image(self) -> MetadataImage: ...

    async def wait_for(self, predicate: Callable[[MetadataImage], bool], timeout_s: float) -> bool: ...


class ControllerSender(Protocol):
    """The channel to the active controller (admin requests are forwarded)."""

    async def send(self, api_key: int, body: Mapping[str, Any], timeout_s: float, version: int | None = None,
                   resend_after_timeout: bool = True) -> Any: ...
    # the answer decoded from the wire: the caller declares its response's type


class TaskSpawner(Protocol):
    """Background work a handler starts (auto topic creation); owned and awaited on shutdown."""

    def spawn(self, coro: Coroutine, name: str | None = None) -> asyncio.Task | None: ...


class HostedReplicas(Protocol):
    """The partitions this broker hosts: replication hooks and long polls."""

    topic_defaults: Mapping[str, str]
    logs: LogManager            # the log dirs and their logs (DescribeLogDirs)
    log_dir_moves: LogDirMoves  # moving replicas between them (AlterReplicaLogDirs)

    def get(self, topic: str, partition: int) -> Partition | None: ...

    def append_records(self, part: Partition, records: bytearray, origin: AppendOrigin, required_acks: int,
                       timeout_ms: int) -> tuple[AppendOutcome, asyncio.Future | None]: ...

    def append_markers(self, part: Partition, markers: list[tuple[bytearray, int]],
                       timeout_ms: int) -> tuple[list[int], asyncio.Future | None]: ...

    def apply_round(self, moved: list[tuple[Partition, PartitionUpdate]]) -> None: ...

    def on_follower_fetch(self, part: Partition, replica_id: int, fetched: SessionPartition,
                          replica_epoch: int, moved: list[tuple[Partition, PartitionUpdate]]) -> int: ...

    def on_replica_fetch(self, replica_id: int) -> None: ...

    def must_answer_now(self, replica_id: int, holds: Callable[[tuple[str, int]], bool]) -> bool: ...

    def delete_records(self, part: Partition, offset: int,
                       timeout_ms: int) -> tuple[int, int, asyncio.Future | None]: ...


class RemoteReads(Protocol):
    """Tiered storage as handlers use it: the reader of remote segments (``broker.remote``)."""

    reader: object          # broker.remote.reader.RemoteReader: read, offset_for_timestamp, max_wait_s
    metadata: object        # broker.remote.metadata_manager.RemoteLogMetadataManager: is_ready


class GroupCoordinatorService(Protocol):
    """The group coordinator (``broker.group_coordinator.GroupCoordinator``)."""

    num_partitions: int
    replication_factor: int
    segment_bytes: int

    def partition_for(self, group_id: str) -> int: ...

    def read(self, group_id: str, fn: Callable[..., _Message], error_answer: Callable[[int], _Message]) -> _Message: ...

    async def run(self, group_id: str, call: Callable, error_answer: Callable[[int], Mapping[str, Any]]) -> dict: ...

    def loaded_shards(self) -> tuple[list, bool]: ...

    def should_create_topic(self) -> bool: ...

    def topics_view(self, image: MetadataImage) -> object: ...

    def on_txn_marker(self, part, producer_id: int, commit: bool) -> None: ...


class TransactionCoordinatorService(Protocol):
    """The transaction coordinator (``broker.transaction_coordinator.TransactionCoordinator``)."""

    num_partitions: int
    replication_factor: int
    min_isr: int
    segment_bytes: int

    def partition_for(self, transactional_id: str) -> int: ...

    def should_create_topic(self) -> bool: ...

    async def init_producer_id(self, transactional_id: str, timeout_ms: int, producer_id: int,
                               producer_epoch: int) -> tuple[int, int, int]: ...

    async def add_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                             partitions: frozenset[tuple[str, int]]) -> int: ...

    async def end_txn(self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool,
                      client_transaction_version: int = ...) -> tuple[int, int, int]: ...

    def describe(self, transactional_id: str) -> tuple[object | None, int]: ...

    def transactions(self) -> tuple[list, bool]: ...

    def verify_partitions(self, transactional_id: str, producer_id: int, producer_epoch: int,
                          partitions: list[tuple[str, int]]) -> dict[tuple[str, int], int]: ...


class TxnVerification(Protocol):
    """KIP-890 parts 1 and 2 at the leader (``broker.txn_verification.TxnVerifier``)."""

    async def verify(self, transactional_id: str | None, batches: Iterable[ProducedBatch],
                     version: int = ...) -> dict[tuple[str, int], int]: ...


@runtime_checkable
class HandlerContext(Protocol):
    """The broker as request handlers see it."""

    config: NodeConfig
    node_id: int
    metadata: MetadataSource
    controller_channel: ControllerSender
    background: TaskSpawner
    replicas: HostedReplicas
    api_versions: list[ApiVersion]
    clock_ms: Callable[[], int]
    fetch_sessions: FetchSessionCache
    fetch_purgatory: FetchPurgatory     # fetches parked until a partition has news
    producer_ids: ProducerIdManager
    fetch_max_bytes: int
    fetch_wait_max_ms: int
    remote: RemoteReads | None
    groups: GroupCoordinatorService
    authorizer: Authorizer | None       # None: authorizer.class.name unset, no ACL checks
    quotas: Any                         # broker.client_quotas.ClientQuotaManager, or None (mutation_quota)
    transactions: TransactionCoordinatorService
    txn_verifier: TxnVerification
    telemetry: ClientTelemetry          # KIP-714 client instances and their pushed metrics
    share_states: ShareCoordinator      # KIP-932's share coordinator (__share_group_state)
    share_persister: SharePersister     # the way to any share-partition's state, wherever its coordinator is
    share_partitions: SharePartitions   # KIP-932's share-partitions this broker leads, and share sessions

    @property
    def image(self) -> MetadataImage: ...

    def endpoint(self, node_id: int) -> BrokerInfo | None: ...

    def image_leader(self, topic: str, index: int) -> int: ...

    def led_partition(self, topic: str, index: int) -> tuple[Partition | None, ErrorCode]: ...

    def unhosted_error(self, topic: str, index: int) -> ErrorCode: ...


_Message = TypeVar("_Message")

#: what a ``handle`` returns: the response, or an awaitable of it (long polls, forwarding);
#: ``Response[CreateTopicsResponse]`` for one API's TypedDict (``protocol/typed``)
Response = Union[_Message, Awaitable[_Message]]      # noqa: UP007 (a generic alias, evaluated at run time)

#: an API module's ``handle``
Handler = Callable[["HandlerContext", "RequestHeader", Any], Response[Any]]
