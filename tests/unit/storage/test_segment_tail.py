"""``LogSegment.locate`` answers from the last batches appended exactly as a scan from the offset
index does, for every offset: after single-batch appends (a leader's), appends of several
batches at once (a follower's), a truncation, and appends after it."""
from hypothesis import given, settings
from hypothesis import strategies as st
from storage_helpers import NOW, batch, config

from tierlog.storage import Log

PROPS = {"index.interval.bytes": "200"}


def _scanned(segment, offset):
    """What ``locate`` answers without the appended batches at hand."""
    tail, segment._tail = segment._tail, []
    try:
        return segment.locate(offset)
    finally:
        segment._tail = tail


def _check_every_offset(log: Log) -> None:
    segment = log._segments[-1]
    for offset in range(segment.base_offset, log.log_end_offset + 2):
        assert segment.locate(offset) == _scanned(segment, offset), offset


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.integers(1, 4), min_size=1, max_size=6), min_size=1, max_size=8), st.integers(0, 1000))
def test_located_from_the_tail_as_from_the_file(tmp_path_factory, rounds, cut):
    path = tmp_path_factory.mktemp("seg")
    leader, follower = Log.open(path / "t-0", config(**PROPS), NOW), Log.open(path / "f" / "t-0", config(**PROPS), NOW)
    for counts in rounds:
        start = leader.log_end_offset
        for n in counts:
            leader.append(batch(n, NOW, value_size=90), 0, NOW)
            _check_every_offset(leader)
        follower.append_as_follower(bytearray(b"".join(p.read() for p in leader.read(start, 1 << 20).parts)), NOW)
        _check_every_offset(follower)
    for log in (leader, follower):
        log.truncate_to(cut % (log.log_end_offset + 1))
        _check_every_offset(log)
        log.append(batch(2, NOW, value_size=90), 0, NOW)
        _check_every_offset(log)
        log.close()
