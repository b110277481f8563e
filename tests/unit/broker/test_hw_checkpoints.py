"""``HighWatermarkCheckpoints``: due every interval; a write hands over only the high watermarks
that moved (of partitions still hosted) and clears them."""
from tierlog.broker.hw_checkpoints import HighWatermarkCheckpoints

NOW = 1_700_000_000_000


class Logs:
    def __init__(self, fail=False):
        self.written, self.fail = [], fail

    def write_high_watermarks(self, hws):
        if self.fail:
            raise OSError("disk gone")
        self.written.append(hws)


def test_a_write_carries_the_moved_hosted_partitions_only():
    logs, hosted = Logs(), {("t", 0): 12}
    checkpoints = HighWatermarkCheckpoints(logs, hosted.get, 5_000, NOW)
    assert not checkpoints.due(NOW + 4_999) and checkpoints.due(NOW + 5_000)
    checkpoints.moved.update({("t", 0), ("t", 1)})          # t-1 is no longer hosted
    checkpoints.write(NOW + 5_000)
    checkpoints.write(NOW + 6_000)
    assert logs.written == [{("t", 0): 12}, {}]
    assert not checkpoints.due(NOW + 10_999) and checkpoints.due(NOW + 11_000)


def test_a_failed_write_is_logged_not_raised():
    checkpoints = HighWatermarkCheckpoints(Logs(fail=True), {("t", 0): 1}.get, 5_000, NOW)
    checkpoints.moved.add(("t", 0))
    checkpoints.write(NOW)
    assert not checkpoints.moved
