"""Message schemas, one module per Kafka API, and the registry ``APIS``.

A schema here is not an advertised API: the broker advertises what its
handlers in ``broker/apis`` register. The KRaft control-record payloads
(``control_records``) are not APIs and are not in ``APIS``.
"""

from tierlog.protocol.api import ApiSpec
from tierlog.protocol.messages import (
    add_offsets_to_txn,
    add_partitions_to_txn,
    allocate_producer_ids,
    alter_client_quotas,
    alter_configs,
    alter_partition,
    alter_partition_reassignments,
    alter_replica_log_dirs,
    alter_user_scram_credentials,
    api_versions,
    assign_replicas_to_dirs,
    begin_quorum_epoch,
    broker_heartbeat,
    broker_registration,
    consumer_group_describe,
    consumer_group_heartbeat,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_client_quotas,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_quorum,
    describe_topic_partitions,
    describe_transactions,
    describe_user_scram_credentials,
    elect_leaders,
    end_quorum_epoch,
    end_txn,
    fetch,
    fetch_snapshot,
    find_coordinator,
    get_telemetry_subscriptions,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_client_metrics_resources,
    list_groups,
    list_offsets,
    list_partition_reassignments,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    push_telemetry,
    sasl_authenticate,
    sasl_handshake,
    sync_group,
    txn_offset_commit,
    unregister_broker,
    vote,
    write_txn_markers,
)

__all__ = ["APIS"]

_MODULES = (
    produce, fetch, list_offsets, metadata, offset_commit, offset_fetch,
    find_coordinator, join_group, heartbeat, leave_group, sync_group,
    describe_groups, list_groups, api_versions, create_topics, delete_topics,
    init_producer_id, offset_for_leader_epoch, describe_configs,
    elect_leaders, incremental_alter_configs, alter_partition_reassignments,
    list_partition_reassignments, vote, begin_quorum_epoch, end_quorum_epoch,
    describe_quorum, alter_partition, fetch_snapshot, describe_cluster,
    broker_registration, broker_heartbeat, unregister_broker,
    allocate_producer_ids, describe_topic_partitions,
    alter_configs, delete_records, create_partitions, describe_log_dirs, delete_groups, offset_delete,
    consumer_group_heartbeat, consumer_group_describe, sasl_handshake, sasl_authenticate,
    describe_acls, create_acls, delete_acls,
    assign_replicas_to_dirs, alter_replica_log_dirs,
    add_partitions_to_txn, add_offsets_to_txn, end_txn, write_txn_markers, txn_offset_commit,
    describe_producers, describe_transactions, list_transactions,
    describe_user_scram_credentials, alter_user_scram_credentials,
    describe_client_quotas, alter_client_quotas,
    get_telemetry_subscriptions, push_telemetry, list_client_metrics_resources,
)

#: every API with schemas, by key
APIS: dict[int, ApiSpec] = {
    m.SPEC.key: m.SPEC for m in sorted(_MODULES, key=lambda m: m.SPEC.key)
}
