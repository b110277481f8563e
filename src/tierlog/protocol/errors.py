"""Kafka's error codes: one enum of (code, name, retriable?, description).

Names and codes follow Kafka's ``Errors`` enum; a code is retriable when
Kafka's exception for it is a ``RetriableException``. Descriptions are our own.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Self

__all__ = ["ErrorCode", "describe", "is_retriable"]

class ErrorCode(IntEnum):
    """Kafka's error codes, with Kafka's names; each member also says whether a client may retry
    (``retriable``) and what it means (``text``)."""

    retriable: bool
    text: str

    def __new__(cls, code: int, retriable: bool, text: str) -> Self:
        member = int.__new__(cls, code)
        member._value_ = code
        member.retriable = retriable
        member.text = text
        return member

    # name = (code, retriable, description)
    UNKNOWN_SERVER_ERROR = (-1, False, "The server hit an unexpected error handling the request.")
    NONE = (0, False, "Success.")
    OFFSET_OUT_OF_RANGE = (1, False, "The offset is outside the range the server holds for this partition.")
    CORRUPT_MESSAGE = (2, True, "A record batch failed its CRC check, has an invalid size or is otherwise corrupt.")
    UNKNOWN_TOPIC_OR_PARTITION = (3, True, "This server does not host the topic-partition.")
    INVALID_FETCH_SIZE = (4, False, "The fetch size is invalid.")
    LEADER_NOT_AVAILABLE = (5, True, "The partition has no leader right now (an election is under way).")
    NOT_LEADER_OR_FOLLOWER = (6, True, "This server is not the leader (or not a follower) of the partition.")
    REQUEST_TIMED_OUT = (7, True, "The request timed out.")
    BROKER_NOT_AVAILABLE = (8, False, "The broker is not available.")
    REPLICA_NOT_AVAILABLE = (9, True, "The replica is not available for the partition.")
    MESSAGE_TOO_LARGE = (10, False, "A record batch is larger than the server accepts.")
    STALE_CONTROLLER_EPOCH = (11, False, "The request came from a controller whose epoch is stale.")
    OFFSET_METADATA_TOO_LARGE = (12, False, "The committed offset's metadata string is too large.")
    NETWORK_EXCEPTION = (13, True, "The connection closed before a response arrived.")
    COORDINATOR_LOAD_IN_PROGRESS = (14, True, "The coordinator is still loading its state.")
    COORDINATOR_NOT_AVAILABLE = (15, True, "The coordinator is not available.")
    NOT_COORDINATOR = (16, True, "This server is not the coordinator for the key.")
    INVALID_TOPIC_EXCEPTION = (17, False, "The topic name is invalid or the topic cannot take this operation.")
    RECORD_LIST_TOO_LARGE = (18, False, "The batch is larger than the segment size allows.")
    NOT_ENOUGH_REPLICAS = (19, True, "Too few in-sync replicas to accept the write.")
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = (
        20, True, "The write was appended, but to fewer in-sync replicas than required.")
    INVALID_REQUIRED_ACKS = (21, False, "The produce request asked for an invalid acks value.")
    ILLEGAL_GENERATION = (22, False, "The group generation id is not current.")
    INCONSISTENT_GROUP_PROTOCOL = (23, False, "The member's protocols do not match those of the group.")
    INVALID_GROUP_ID = (24, False, "The group id is invalid.")
    UNKNOWN_MEMBER_ID = (25, False, "The coordinator does not know this member.")
    INVALID_SESSION_TIMEOUT = (26, False, "The session timeout is outside the broker's allowed range.")
    REBALANCE_IN_PROGRESS = (27, False, "The group is rebalancing; the member must rejoin.")
    INVALID_COMMIT_OFFSET_SIZE = (28, False, "The offset commit is too large.")
    TOPIC_AUTHORIZATION_FAILED = (29, False, "Not authorized to access the topic.")
    GROUP_AUTHORIZATION_FAILED = (30, False, "Not authorized to access the group.")
    CLUSTER_AUTHORIZATION_FAILED = (31, False, "Not authorized for this cluster operation.")
    INVALID_TIMESTAMP = (32, False, "A record timestamp is outside the accepted range.")
    UNSUPPORTED_SASL_MECHANISM = (33, False, "The SASL mechanism is not supported.")
    ILLEGAL_SASL_STATE = (34, False, "The request is not valid in the current SASL state.")
    UNSUPPORTED_VERSION = (35, False, "The API version is not supported.")
    TOPIC_ALREADY_EXISTS = (36, False, "The topic already exists.")
    INVALID_PARTITIONS = (37, False, "The number of partitions is invalid.")
    INVALID_REPLICATION_FACTOR = (38, False, "The replication factor is invalid.")
    INVALID_REPLICA_ASSIGNMENT = (39, False, "The replica assignment is invalid.")
    INVALID_CONFIG = (40, False, "The configuration is invalid.")
    NOT_CONTROLLER = (41, True, "This server is not the active controller.")
    INVALID_REQUEST = (42, False, "The request is malformed or not valid here.")
    UNSUPPORTED_FOR_MESSAGE_FORMAT = (43, False, "The message format on the broker does not support this request.")
    POLICY_VIOLATION = (44, False, "The request breaks a configured policy.")
    OUT_OF_ORDER_SEQUENCE_NUMBER = (45, False, "The producer's sequence number is out of order.")
    DUPLICATE_SEQUENCE_NUMBER = (46, False, "The producer's sequence number was already written.")
    INVALID_PRODUCER_EPOCH = (47, False, "The producer epoch is older than the current one.")
    INVALID_TXN_STATE = (48, False, "The operation is not valid in the transaction's state.")
    INVALID_PRODUCER_ID_MAPPING = (49, False, "The producer id does not match the transactional id.")
    INVALID_TRANSACTION_TIMEOUT = (50, False, "The transaction timeout exceeds the broker's maximum.")
    CONCURRENT_TRANSACTIONS = (51, True, "Another transaction operation on this producer is still in progress.")
    TRANSACTION_COORDINATOR_FENCED = (52, False, "A newer transaction coordinator has fenced this one.")
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = (53, False, "Not authorized for the transactional id.")
    SECURITY_DISABLED = (54, False, "Security features are disabled.")
    OPERATION_NOT_ATTEMPTED = (55, False, "The operation was not attempted because another in the batch failed.")
    KAFKA_STORAGE_ERROR = (56, True, "A disk error prevented the operation.")
    LOG_DIR_NOT_FOUND = (57, False, "The log directory does not exist.")
    SASL_AUTHENTICATION_FAILED = (58, False, "SASL authentication failed.")
    UNKNOWN_PRODUCER_ID = (59, False, "The broker has no state for this producer id.")
    REASSIGNMENT_IN_PROGRESS = (60, False, "A partition reassignment is already in progress.")
    DELEGATION_TOKEN_AUTH_DISABLED = (61, False, "Delegation tokens are disabled.")
    DELEGATION_TOKEN_NOT_FOUND = (62, False, "The delegation token does not exist.")
    DELEGATION_TOKEN_OWNER_MISMATCH = (63, False, "The principal does not own the delegation token.")
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = (64, False, "Delegation token requests are not allowed on this channel.")
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = (65, False, "Not authorized for the delegation token.")
    DELEGATION_TOKEN_EXPIRED = (66, False, "The delegation token has expired.")
    INVALID_PRINCIPAL_TYPE = (67, False, "The principal type is not supported.")
    NON_EMPTY_GROUP = (68, False, "The group still has members.")
    GROUP_ID_NOT_FOUND = (69, False, "The group does not exist.")
    FETCH_SESSION_ID_NOT_FOUND = (70, True, "The fetch session does not exist.")
    INVALID_FETCH_SESSION_EPOCH = (71, True, "The fetch session epoch is not the expected one.")
    LISTENER_NOT_FOUND = (72, True, "The leader has no endpoint on the listener the request came in on.")
    TOPIC_DELETION_DISABLED = (73, False, "Topic deletion is disabled.")
    FENCED_LEADER_EPOCH = (74, True, "The request's leader epoch is older than the broker's.")
    UNKNOWN_LEADER_EPOCH = (75, True, "The request's leader epoch is newer than the broker's.")
    UNSUPPORTED_COMPRESSION_TYPE = (76, False, "The compression type is not supported for this request version.")
    STALE_BROKER_EPOCH = (77, False, "The broker epoch is stale.")
    OFFSET_NOT_AVAILABLE = (78, True, "The leader's high watermark has not caught up to the requested offset.")
    MEMBER_ID_REQUIRED = (79, False, "The member must rejoin with the member id the coordinator gave it.")
    PREFERRED_LEADER_NOT_AVAILABLE = (80, True, "The preferred leader is not available.")
    GROUP_MAX_SIZE_REACHED = (81, False, "The group has reached its maximum size.")
    FENCED_INSTANCE_ID = (82, False, "Another member with the same group instance id has fenced this one.")
    ELIGIBLE_LEADERS_NOT_AVAILABLE = (83, True, "No eligible leader is available for the partition.")
    ELECTION_NOT_NEEDED = (84, True, "The leader election was not needed.")
    NO_REASSIGNMENT_IN_PROGRESS = (85, False, "No partition reassignment is in progress.")
    GROUP_SUBSCRIBED_TO_TOPIC = (
        86, False, "The group still subscribes to the topic, so its offsets cannot be deleted.")
    INVALID_RECORD = (87, False, "A record failed the broker's validation.")
    UNSTABLE_OFFSET_COMMIT = (88, True, "There are unstable offsets awaiting a transaction's completion.")
    THROTTLING_QUOTA_EXCEEDED = (89, True, "The throttling quota has been exceeded.")
    PRODUCER_FENCED = (90, False, "A newer producer with the same transactional id has fenced this one.")
    RESOURCE_NOT_FOUND = (91, False, "The resource does not exist.")
    DUPLICATE_RESOURCE = (92, False, "The resource appears more than once in the request.")
    UNACCEPTABLE_CREDENTIAL = (93, False, "The credential does not meet the requirements.")
    INCONSISTENT_VOTER_SET = (94, False, "The voter sets of the quorum members disagree.")
    INVALID_UPDATE_VERSION = (95, False, "The update version is invalid.")
    FEATURE_UPDATE_FAILED = (96, False, "The feature update failed.")
    PRINCIPAL_DESERIALIZATION_FAILURE = (97, False, "The forwarded principal could not be deserialized.")
    SNAPSHOT_NOT_FOUND = (98, False, "The snapshot does not exist.")
    POSITION_OUT_OF_RANGE = (99, False, "The position is negative or beyond the end of the snapshot.")
    UNKNOWN_TOPIC_ID = (100, True, "This server does not host a topic with this id.")
    DUPLICATE_BROKER_REGISTRATION = (101, False, "The broker id is already registered.")
    BROKER_ID_NOT_REGISTERED = (102, False, "The broker id is not registered.")
    INCONSISTENT_TOPIC_ID = (103, True, "The topic id does not match the one the broker knows.")
    INCONSISTENT_CLUSTER_ID = (104, False, "The cluster id does not match.")
    TRANSACTIONAL_ID_NOT_FOUND = (105, False, "The transactional id does not exist.")
    FETCH_SESSION_TOPIC_ID_ERROR = (106, True, "The fetch session's topic ids are missing or inconsistent.")
    INELIGIBLE_REPLICA = (107, False, "The new ISR holds a replica that is not eligible to join it.")
    NEW_LEADER_ELECTED = (108, False, "The AlterPartition was rejected because a new leader was elected.")
    OFFSET_MOVED_TO_TIERED_STORAGE = (109, False, "The offset now lives only in tiered (remote) storage.")
    FENCED_MEMBER_EPOCH = (110, False, "The member epoch is fenced; the member must rejoin with epoch 0.")
    UNRELEASED_INSTANCE_ID = (111, False, "The group instance id is still held by another member.")
    UNSUPPORTED_ASSIGNOR = (112, False, "The assignor is not supported by the group.")
    STALE_MEMBER_EPOCH = (113, False, "The member epoch is stale.")
    MISMATCHED_ENDPOINT_TYPE = (114, False, "The request went to the wrong kind of endpoint.")
    UNSUPPORTED_ENDPOINT_TYPE = (115, False, "This endpoint type is not supported.")
    UNKNOWN_CONTROLLER_ID = (116, False, "The controller id is unknown.")
    UNKNOWN_SUBSCRIPTION_ID = (117, False, "The client telemetry subscription id is unknown.")
    TELEMETRY_TOO_LARGE = (118, False, "The client telemetry payload is too large.")
    INVALID_REGISTRATION = (119, False, "The controller registration is invalid.")
    TRANSACTION_ABORTABLE = (120, False, "The server hit an error the transaction can recover from by aborting.")
    INVALID_RECORD_STATE = (121, False, "The record state is invalid for this acknowledgement.")
    SHARE_SESSION_NOT_FOUND = (122, True, "The share session does not exist.")
    INVALID_SHARE_SESSION_EPOCH = (123, True, "The share session epoch is invalid.")
    FENCED_STATE_EPOCH = (124, False, "The share-group state epoch is fenced.")
    INVALID_VOTER_KEY = (125, False, "The voter key does not match the receiver's replica key.")
    DUPLICATE_VOTER = (126, False, "The voter is already in the voter set.")
    VOTER_NOT_FOUND = (127, False, "The voter is not in the voter set.")
    INVALID_REGULAR_EXPRESSION = (128, False, "The regular expression is invalid.")
    SHARE_SESSION_LIMIT_REACHED = (133, True, "The limit of share sessions has been reached.")


_RETRIABLE = frozenset(int(code) for code in ErrorCode if code.retriable)
_DESCRIPTIONS = {int(code): code.text for code in ErrorCode}


def is_retriable(code: int) -> bool:
    """Whether a client may retry the operation that got ``code``."""
    return int(code) in _RETRIABLE


_NAMES = {int(code): code.name for code in ErrorCode}


def error_name(code: int) -> str:
    """Kafka's name of ``code`` (``error N`` for a code unknown to us)."""
    name = _NAMES.get(int(code))
    return name if name is not None else f"error {int(code)}"


def describe(code: int) -> str:
    """A short description of ``code`` (also for codes unknown to us)."""
    text = _DESCRIPTIONS.get(int(code))
    return text if text is not None else f"Unknown error code {int(code)}."
