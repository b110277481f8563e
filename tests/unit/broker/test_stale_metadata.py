"""Which refusals make a broker catch up with the quorum first (``apis.stale_metadata.may_be_stale``)."""
from pathlib import Path

from leaders import lead

from tierlog.broker.apis.stale_metadata import may_be_stale
from tierlog.broker.partition import Partition
from tierlog.protocol.errors import ErrorCode
from tierlog.storage import Log, LogConfig

NOW = 1_700_000_000_000


def _follower(tmp_path: Path, leader_epoch: int, moved_away_epoch: int) -> Partition:
    """Led by this broker (1) until ``moved_away_epoch``, led by broker 2 at ``leader_epoch``."""
    log = Log.open(tmp_path / "t-0", LogConfig.from_props({}), NOW)
    part = Partition("t", 0, b"\x01" * 16, log, leader_id=1, leader_epoch=0)
    if moved_away_epoch >= 0:
        lead(part, replicas=(1, 2), epoch=moved_away_epoch - 1)
        part.become_follower(2, moved_away_epoch)
    part.become_follower(2, leader_epoch)
    return part


def test_the_old_leader_answers_not_leader_at_once(tmp_path):
    assert not may_be_stale(_follower(tmp_path, 7, moved_away_epoch=7), ErrorCode.NOT_LEADER_OR_FOLLOWER)


def test_a_follower_that_never_led_this_epoch_may_be_behind(tmp_path):
    # the new leader that has not applied its election yet: its image still names the old leader
    assert may_be_stale(_follower(tmp_path, 7, moved_away_epoch=6), ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert may_be_stale(_follower(tmp_path, 7, moved_away_epoch=-1), ErrorCode.NOT_LEADER_OR_FOLLOWER)


def test_unknown_partitions_and_epochs_may_be_behind_and_fencing_never(tmp_path):
    assert may_be_stale(None, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    assert may_be_stale(_follower(tmp_path, 7, moved_away_epoch=7), ErrorCode.UNKNOWN_LEADER_EPOCH)
    assert not may_be_stale(_follower(tmp_path, 7, moved_away_epoch=-1), ErrorCode.FENCED_LEADER_EPOCH)
    assert not may_be_stale(None, ErrorCode.NONE)
