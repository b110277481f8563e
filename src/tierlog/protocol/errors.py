"""Kafka's error codes: one table of (code, name, retriable?, description).

Names and codes follow Kafka's ``Errors`` enum; a code is retriable when
Kafka's exception for it is a ``RetriableException``. Descriptions are our own.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ErrorCode", "describe", "is_retriable"]

# code, Kafka name, retriable, description
_TABLE = [
    (-1, "UNKNOWN_SERVER_ERROR", False, "The server hit an unexpected error handling the request."),
    (0, "NONE", False, "Success."),
    (1, "OFFSET_OUT_OF_RANGE", False, "The offset is outside the range the server holds for this partition."),
    (2, "CORRUPT_MESSAGE", True, "A record batch failed its CRC check, has an invalid size or is otherwise corrupt."),
    (3, "UNKNOWN_TOPIC_OR_PARTITION", True, "This server does not host the topic-partition."),
    (4, "INVALID_FETCH_SIZE", False, "The fetch size is invalid."),
    (5, "LEADER_NOT_AVAILABLE", True, "The partition has no leader right now (an election is under way)."),
    (6, "NOT_LEADER_OR_FOLLOWER", True, "This server is not the leader (or not a follower) of the partition."),
    (7, "REQUEST_TIMED_OUT", True, "The request timed out."),
    (8, "BROKER_NOT_AVAILABLE", False, "The broker is not available."),
    (9, "REPLICA_NOT_AVAILABLE", True, "The replica is not available for the partition."),
    (10, "MESSAGE_TOO_LARGE", False, "A record batch is larger than the server accepts."),
    (11, "STALE_CONTROLLER_EPOCH", False, "The request came from a controller whose epoch is stale."),
    (12, "OFFSET_METADATA_TOO_LARGE", False, "The committed offset's metadata string is too large."),
    (13, "NETWORK_EXCEPTION", True, "The connection closed before a response arrived."),
    (14, "COORDINATOR_LOAD_IN_PROGRESS", True, "The coordinator is still loading its state."),
    (15, "COORDINATOR_NOT_AVAILABLE", True, "The coordinator is not available."),
    (16, "NOT_COORDINATOR", True, "This server is not the coordinator for the key."),
    (17, "INVALID_TOPIC_EXCEPTION", False, "The topic name is invalid or the topic cannot take this operation."),
    (18, "RECORD_LIST_TOO_LARGE", False, "The batch is larger than the segment size allows."),
    (19, "NOT_ENOUGH_REPLICAS", True, "Too few in-sync replicas to accept the write."),
    (20, "NOT_ENOUGH_REPLICAS_AFTER_APPEND", True, "The write was appended, but to fewer in-sync replicas than required."),
    (21, "INVALID_REQUIRED_ACKS", False, "The produce request asked for an invalid acks value."),
    (22, "ILLEGAL_GENERATION", False, "The group generation id is not current."),
    (23, "INCONSISTENT_GROUP_PROTOCOL", False, "The member's protocols do not match those of the group."),
    (24, "INVALID_GROUP_ID", False, "The group id is invalid."),
    (25, "UNKNOWN_MEMBER_ID", False, "The coordinator does not know this member."),
    (26, "INVALID_SESSION_TIMEOUT", False, "The session timeout is outside the broker's allowed range."),
    (27, "REBALANCE_IN_PROGRESS", False, "The group is rebalancing; the member must rejoin."),
    (28, "INVALID_COMMIT_OFFSET_SIZE", False, "The offset commit is too large."),
    (29, "TOPIC_AUTHORIZATION_FAILED", False, "Not authorized to access the topic."),
    (30, "GROUP_AUTHORIZATION_FAILED", False, "Not authorized to access the group."),
    (31, "CLUSTER_AUTHORIZATION_FAILED", False, "Not authorized for this cluster operation."),
    (32, "INVALID_TIMESTAMP", False, "A record timestamp is outside the accepted range."),
    (33, "UNSUPPORTED_SASL_MECHANISM", False, "The SASL mechanism is not supported."),
    (34, "ILLEGAL_SASL_STATE", False, "The request is not valid in the current SASL state."),
    (35, "UNSUPPORTED_VERSION", False, "The API version is not supported."),
    (36, "TOPIC_ALREADY_EXISTS", False, "The topic already exists."),
    (37, "INVALID_PARTITIONS", False, "The number of partitions is invalid."),
    (38, "INVALID_REPLICATION_FACTOR", False, "The replication factor is invalid."),
    (39, "INVALID_REPLICA_ASSIGNMENT", False, "The replica assignment is invalid."),
    (40, "INVALID_CONFIG", False, "The configuration is invalid."),
    (41, "NOT_CONTROLLER", True, "This server is not the active controller."),
    (42, "INVALID_REQUEST", False, "The request is malformed or not valid here."),
    (43, "UNSUPPORTED_FOR_MESSAGE_FORMAT", False, "The message format on the broker does not support this request."),
    (44, "POLICY_VIOLATION", False, "The request breaks a configured policy."),
    (45, "OUT_OF_ORDER_SEQUENCE_NUMBER", False, "The producer's sequence number is out of order."),
    (46, "DUPLICATE_SEQUENCE_NUMBER", False, "The producer's sequence number was already written."),
    (47, "INVALID_PRODUCER_EPOCH", False, "The producer epoch is older than the current one."),
    (48, "INVALID_TXN_STATE", False, "The operation is not valid in the transaction's state."),
    (49, "INVALID_PRODUCER_ID_MAPPING", False, "The producer id does not match the transactional id."),
    (50, "INVALID_TRANSACTION_TIMEOUT", False, "The transaction timeout exceeds the broker's maximum."),
    (51, "CONCURRENT_TRANSACTIONS", True, "Another transaction operation on this producer is still in progress."),
    (52, "TRANSACTION_COORDINATOR_FENCED", False, "A newer transaction coordinator has fenced this one."),
    (53, "TRANSACTIONAL_ID_AUTHORIZATION_FAILED", False, "Not authorized for the transactional id."),
    (54, "SECURITY_DISABLED", False, "Security features are disabled."),
    (55, "OPERATION_NOT_ATTEMPTED", False, "The operation was not attempted because another in the batch failed."),
    (56, "KAFKA_STORAGE_ERROR", True, "A disk error prevented the operation."),
    (57, "LOG_DIR_NOT_FOUND", False, "The log directory does not exist."),
    (58, "SASL_AUTHENTICATION_FAILED", False, "SASL authentication failed."),
    (59, "UNKNOWN_PRODUCER_ID", False, "The broker has no state for this producer id."),
    (60, "REASSIGNMENT_IN_PROGRESS", False, "A partition reassignment is already in progress."),
    (61, "DELEGATION_TOKEN_AUTH_DISABLED", False, "Delegation tokens are disabled."),
    (62, "DELEGATION_TOKEN_NOT_FOUND", False, "The delegation token does not exist."),
    (63, "DELEGATION_TOKEN_OWNER_MISMATCH", False, "The principal does not own the delegation token."),
    (64, "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED", False, "Delegation token requests are not allowed on this channel."),
    (65, "DELEGATION_TOKEN_AUTHORIZATION_FAILED", False, "Not authorized for the delegation token."),
    (66, "DELEGATION_TOKEN_EXPIRED", False, "The delegation token has expired."),
    (67, "INVALID_PRINCIPAL_TYPE", False, "The principal type is not supported."),
    (68, "NON_EMPTY_GROUP", False, "The group still has members."),
    (69, "GROUP_ID_NOT_FOUND", False, "The group does not exist."),
    (70, "FETCH_SESSION_ID_NOT_FOUND", True, "The fetch session does not exist."),
    (71, "INVALID_FETCH_SESSION_EPOCH", True, "The fetch session epoch is not the expected one."),
    (72, "LISTENER_NOT_FOUND", True, "The leader has no endpoint on the listener the request came in on."),
    (73, "TOPIC_DELETION_DISABLED", False, "Topic deletion is disabled."),
    (74, "FENCED_LEADER_EPOCH", True, "The request's leader epoch is older than the broker's."),
    (75, "UNKNOWN_LEADER_EPOCH", True, "The request's leader epoch is newer than the broker's."),
    (76, "UNSUPPORTED_COMPRESSION_TYPE", False, "The compression type is not supported for this request version."),
    (77, "STALE_BROKER_EPOCH", False, "The broker epoch is stale."),
    (78, "OFFSET_NOT_AVAILABLE", True, "The leader's high watermark has not caught up to the requested offset."),
    (79, "MEMBER_ID_REQUIRED", False, "The member must rejoin with the member id the coordinator gave it."),
    (80, "PREFERRED_LEADER_NOT_AVAILABLE", True, "The preferred leader is not available."),
    (81, "GROUP_MAX_SIZE_REACHED", False, "The group has reached its maximum size."),
    (82, "FENCED_INSTANCE_ID", False, "Another member with the same group instance id has fenced this one."),
    (83, "ELIGIBLE_LEADERS_NOT_AVAILABLE", True, "No eligible leader is available for the partition."),
    (84, "ELECTION_NOT_NEEDED", True, "The leader election was not needed."),
    (85, "NO_REASSIGNMENT_IN_PROGRESS", False, "No partition reassignment is in progress."),
    (86, "GROUP_SUBSCRIBED_TO_TOPIC", False, "The group still subscribes to the topic, so its offsets cannot be deleted."),
    (87, "INVALID_RECORD", False, "A record failed the broker's validation."),
    (88, "UNSTABLE_OFFSET_COMMIT", True, "There are unstable offsets awaiting a transaction's completion."),
    (89, "THROTTLING_QUOTA_EXCEEDED", True, "The throttling quota has been exceeded."),
    (90, "PRODUCER_FENCED", False, "A newer producer with the same transactional id has fenced this one."),
    (91, "RESOURCE_NOT_FOUND", False, "The resource does not exist."),
    (92, "DUPLICATE_RESOURCE", False, "The resource appears more than once in the request."),
    (93, "UNACCEPTABLE_CREDENTIAL", False, "The credential does not meet the requirements."),
    (94, "INCONSISTENT_VOTER_SET", False, "The voter sets of the quorum members disagree."),
    (95, "INVALID_UPDATE_VERSION", False, "The update version is invalid."),
    (96, "FEATURE_UPDATE_FAILED", False, "The feature update failed."),
    (97, "PRINCIPAL_DESERIALIZATION_FAILURE", False, "The forwarded principal could not be deserialized."),
    (98, "SNAPSHOT_NOT_FOUND", False, "The snapshot does not exist."),
    (99, "POSITION_OUT_OF_RANGE", False, "The position is negative or beyond the end of the snapshot."),
    (100, "UNKNOWN_TOPIC_ID", True, "This server does not host a topic with this id."),
    (101, "DUPLICATE_BROKER_REGISTRATION", False, "The broker id is already registered."),
    (102, "BROKER_ID_NOT_REGISTERED", False, "The broker id is not registered."),
    (103, "INCONSISTENT_TOPIC_ID", True, "The topic id does not match the one the broker knows."),
    (104, "INCONSISTENT_CLUSTER_ID", False, "The cluster id does not match."),
    (105, "TRANSACTIONAL_ID_NOT_FOUND", False, "The transactional id does not exist."),
    (106, "FETCH_SESSION_TOPIC_ID_ERROR", True, "The fetch session's topic ids are missing or inconsistent."),
    (107, "INELIGIBLE_REPLICA", False, "The new ISR holds a replica that is not eligible to join it."),
    (108, "NEW_LEADER_ELECTED", False, "The AlterPartition was rejected because a new leader was elected."),
    (109, "OFFSET_MOVED_TO_TIERED_STORAGE", False, "The offset now lives only in tiered (remote) storage."),
    (110, "FENCED_MEMBER_EPOCH", False, "The member epoch is fenced; the member must rejoin with epoch 0."),
    (111, "UNRELEASED_INSTANCE_ID", False, "The group instance id is still held by another member."),
    (112, "UNSUPPORTED_ASSIGNOR", False, "The assignor is not supported by the group."),
    (113, "STALE_MEMBER_EPOCH", False, "The member epoch is stale."),
    (114, "MISMATCHED_ENDPOINT_TYPE", False, "The request went to the wrong kind of endpoint."),
    (115, "UNSUPPORTED_ENDPOINT_TYPE", False, "This endpoint type is not supported."),
    (116, "UNKNOWN_CONTROLLER_ID", False, "The controller id is unknown."),
    (117, "UNKNOWN_SUBSCRIPTION_ID", False, "The client telemetry subscription id is unknown."),
    (118, "TELEMETRY_TOO_LARGE", False, "The client telemetry payload is too large."),
    (119, "INVALID_REGISTRATION", False, "The controller registration is invalid."),
    (120, "TRANSACTION_ABORTABLE", False, "The server hit an error the transaction can recover from by aborting."),
    (121, "INVALID_RECORD_STATE", False, "The record state is invalid for this acknowledgement."),
    (122, "SHARE_SESSION_NOT_FOUND", True, "The share session does not exist."),
    (123, "INVALID_SHARE_SESSION_EPOCH", True, "The share session epoch is invalid."),
    (124, "FENCED_STATE_EPOCH", False, "The share-group state epoch is fenced."),
    (125, "INVALID_VOTER_KEY", False, "The voter key does not match the receiver's replica key."),
    (126, "DUPLICATE_VOTER", False, "The voter is already in the voter set."),
    (127, "VOTER_NOT_FOUND", False, "The voter is not in the voter set."),
    (128, "INVALID_REGULAR_EXPRESSION", False, "The regular expression is invalid."),
]

ErrorCode = IntEnum("ErrorCode", [(name, code) for code, name, _, _ in _TABLE],
                    module=__name__)
ErrorCode.__doc__ = "Kafka's error codes, with Kafka's names."

_RETRIABLE = frozenset(code for code, _, retriable, _ in _TABLE if retriable)
_DESCRIPTIONS = {code: text for code, _, _, text in _TABLE}


def is_retriable(code: int) -> bool:
    """Whether a client may retry the operation that got ``code``."""
    return int(code) in _RETRIABLE


def describe(code: int) -> str:
    """A short description of ``code`` (also for codes unknown to us)."""
    text = _DESCRIPTIONS.get(int(code))
    return text if text is not None else f"Unknown error code {int(code)}."
