"""One partition replica hosted by this broker: the owner of its writes and reads.

``partition.Partition`` (appends as leader / follower, reads bounded by an
isolation level, leader state, producer state behind the log), ``outcomes`` (what
they take and give back), ``offsets`` (ListOffsets lookups on its public views).
"""
from .outcomes import NO_UPDATE, AppendOrigin, AppendOutcome, FetchIsolation, PartitionRead, PartitionUpdate
from .partition import Partition, append_origin_error

__all__ = ["NO_UPDATE", "AppendOrigin", "AppendOutcome", "FetchIsolation", "Partition", "PartitionRead", "PartitionUpdate",
           "append_origin_error"]
