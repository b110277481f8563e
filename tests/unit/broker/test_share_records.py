"""What a share fetch hands out of the batches it read (broker/share_records.py): data batches
only; markers, aborted transactions and missing offsets become gaps to archive."""
from tierlog.broker.share_records import covered_end, select
from tierlog.group.share_partition import Acquired
from tierlog.records.builder import build_batch
from tierlog.records.control import build_marker
from tierlog.records.header import parse_header
from tierlog.records.record import Record
from tierlog.records.stamp import set_base_offset


def batch(first: int, count: int, **kw) -> bytes:
    return build_batch([Record(first + i, 0, None, b"v") for i in range(count)], base_offset=first, **kw)


def marker(offset: int, producer_id: int) -> bytes:
    buf = bytearray(build_marker(producer_id, 0, False, 0, 0))
    set_base_offset(buf, 0, offset)
    return bytes(buf)


def test_data_batches_hold_the_acquired_records():
    buf = batch(0, 5) + batch(5, 5)
    chosen = select(buf, [Acquired(2, 8, 1)])
    assert chosen.acquired == [Acquired(2, 8, 1)] and chosen.gaps == []
    assert chosen.records == buf
    assert covered_end(buf) == 10


def test_only_the_batches_overlapping_what_was_acquired_go_out():
    first, second = batch(0, 5), batch(5, 5)
    chosen = select(first + second, [Acquired(6, 7, 2)])
    assert chosen.records == second and chosen.acquired == [Acquired(6, 7, 2)]


def test_markers_aborted_transactions_and_holes_are_gaps():
    aborted = batch(0, 3, producer_id=7, producer_epoch=0, base_sequence=0, transactional=True)
    committed = batch(4, 2, producer_id=8, producer_epoch=0, base_sequence=0, transactional=True)
    buf = aborted + marker(3, 7) + committed + batch(8, 2)         # offsets 6-7 are in no batch
    assert parse_header(marker(3, 7)).is_control
    chosen = select(buf, [Acquired(0, 9, 1)], aborted=[(7, 0, 3)])
    assert chosen.acquired == [Acquired(4, 5, 1), Acquired(8, 9, 1)]
    assert chosen.gaps == [(0, 3), (6, 7)]
    assert chosen.records == committed + batch(8, 2)


def test_read_uncommitted_keeps_what_read_committed_would_skip():
    aborted = batch(0, 3, producer_id=7, producer_epoch=0, base_sequence=0, transactional=True)
    chosen = select(aborted + marker(3, 7), [Acquired(0, 3, 1)])
    assert chosen.acquired == [Acquired(0, 2, 1)] and chosen.gaps == [(3, 3)]
