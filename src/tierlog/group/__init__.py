"""The group coordinator (classic and KIP-848 consumer groups, ``__consumer_offsets``), sans-IO.

``GroupShard`` is the coordinator of one ``__consumer_offsets`` partition;
``coordinator_partition`` maps a group id to its partition; ``log_records`` holds
Kafka's key/value layouts of that topic.  The broker's shell
(``broker/group_coordinator.py``) loads shards, appends their records and
answers requests once the records are committed.  The transaction
coordinator's core is its own package, ``tierlog.txn`` (``__transaction_state``).
"""
from tierlog.group.consumer_group import CONSUMER, ConsumerGroup, TopicsView
from tierlog.group.group import CLASSIC, ClassicGroup, GroupState, Member
from tierlog.group.group_config import GroupConfig
from tierlog.group.output import Output, with_error
from tierlog.group.partitioner import coordinator_partition, java_string_hash
from tierlog.group.shard import GroupShard

__all__ = ["CLASSIC", "CONSUMER", "ClassicGroup", "ConsumerGroup", "GroupConfig", "GroupShard", "GroupState", "Member",
           "Output", "TopicsView", "coordinator_partition", "java_string_hash", "with_error"]
