"""One partition replica hosted by this broker: the owner of its writes and reads.

``partition.Partition`` (appends as leader / follower, reads bounded by an
isolation level, leader state, producer state behind the log), ``outcomes`` (what
they take and give back), ``offsets`` (ListOffsets lookups on its public views).
"""
from .outcomes import AppendOrigin, AppendOutcome, FetchIsolation, PartitionRead
from .partition import Partition, append_origin_error

__all__ = ["AppendOrigin", "AppendOutcome", "FetchIsolation", "Partition", "PartitionRead", "append_origin_error"]
