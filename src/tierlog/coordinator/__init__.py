"""The group coordinator (classic and KIP-848 consumer groups, ``__consumer_offsets``), sans-IO.

``GroupShard`` is the coordinator of one ``__consumer_offsets`` partition;
``coordinator_partition`` maps a group id to its partition; ``records`` holds
Kafka's key/value layouts of that topic.  The broker's shell
(``broker/group_coordinator.py``) loads shards, appends their records and
answers requests once the records are committed.  The transaction
coordinator's core is the ``transaction`` subpackage (``__transaction_state``).
"""
from tierlog.coordinator.config import GroupConfig
from tierlog.coordinator.consumer_group import CONSUMER, ConsumerGroup, TopicsView
from tierlog.coordinator.group import CLASSIC, ClassicGroup, GroupState, Member
from tierlog.coordinator.output import Output, with_error
from tierlog.coordinator.partitioner import coordinator_partition, java_string_hash
from tierlog.coordinator.shard import GroupShard

__all__ = ["CLASSIC", "CONSUMER", "ClassicGroup", "ConsumerGroup", "GroupConfig", "GroupShard", "GroupState", "Member",
           "Output", "TopicsView", "coordinator_partition", "java_string_hash", "with_error"]
