"""Make a test's ``Partition`` the leader through its own transition (``become_leader``), as the
replica manager does when the image names this broker."""
from tierlog.broker.partition import Partition, PartitionUpdate
from tierlog.metadata import PartitionInfo
from tierlog.replication import LeaderConfig

NOW = 1_700_000_000_000


def lead(part: Partition, replicas=(1, 2), isr=None, min_isr: int = 1, epoch: int | None = None,
         now_ms: int = NOW) -> PartitionUpdate:
    """``part`` leads at ``epoch`` (default: its leader epoch) on broker ``replicas[0]``."""
    info = PartitionInfo(part.index, replicas[0], part.leader_epoch if epoch is None else epoch, tuple(replicas),
                         tuple(replicas if isr is None else isr))
    return part.become_leader(info, LeaderConfig(min_insync_replicas=min_isr), -1, frozenset(), now_ms)
