import pytest

from tierlog.protocol.errors import ErrorCode
from tierlog.records import Record, build_batch, parse_header
from tierlog.storage.producer_state import (
    Duplicate,
    ProducerStateError,
    ProducerStateManager,
)


def header(pid, epoch, seq, n=3, base_offset=0):
    recs = [Record(base_offset + i, 1000 + i, None, b"v", []) for i in range(n)]
    return parse_header(build_batch(recs, base_offset=base_offset, producer_id=pid, producer_epoch=epoch,
                                    base_sequence=seq), 0)


def appended(m, h):
    assert m.check([h]) is None
    m.update([h])


def test_in_order_batches_pass_and_retry_is_a_duplicate():
    m = ProducerStateManager()
    appended(m, header(7, 0, 0, base_offset=0))
    appended(m, header(7, 0, 3, base_offset=3))
    assert m.check([header(7, 0, 0)]) == Duplicate(0, 2)
    assert m.check([header(7, 0, 3)]) == Duplicate(3, 5)


def test_gap_in_sequence_is_out_of_order():
    m = ProducerStateManager()
    appended(m, header(7, 0, 0))
    with pytest.raises(ProducerStateError) as e:
        m.check([header(7, 0, 10)])
    assert e.value.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_old_epoch_is_fenced_and_new_epoch_starts_at_zero():
    m = ProducerStateManager()
    appended(m, header(7, 2, 0))
    with pytest.raises(ProducerStateError) as e:
        m.check([header(7, 1, 3)])
    assert e.value.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    with pytest.raises(ProducerStateError):
        m.check([header(7, 3, 5)])
    appended(m, header(7, 3, 0, base_offset=3))


def test_unknown_producer_accepted_at_any_sequence_and_plain_batches_ignored():
    m = ProducerStateManager()
    appended(m, header(9, 0, 40))
    appended(m, header(-1, -1, -1))
    assert len(m) == 1


def test_only_the_last_five_batches_are_remembered():
    m = ProducerStateManager()
    for i in range(7):
        appended(m, header(1, 0, 3 * i, base_offset=3 * i))
    assert m.check([header(1, 0, 6)]) == Duplicate(6, 8)          # batch 2 is still cached
    assert m.check([header(1, 0, 18)]) == Duplicate(18, 20)
    with pytest.raises(ProducerStateError):                    # batch 0 fell out: not a duplicate, out of order
        m.check([header(1, 0, 0)])


def test_rebuild_replays_headers():
    hs = [header(5, 0, 0, base_offset=0), header(5, 0, 3, base_offset=3)]
    m = ProducerStateManager()
    m.rebuild(hs)
    assert m.check([header(5, 0, 3)]) == Duplicate(3, 5)
    appended(m, header(5, 0, 6, base_offset=6))


def test_log_answers_a_retried_batch_with_its_original_offsets(tmp_path):
    from tierlog.storage import Log, LogConfig
    log = Log.open(tmp_path / "t-0", LogConfig.from_props({}), 0)

    def batch(seq):
        return bytearray(build_batch([Record(i, 1000 + i, None, b"v", []) for i in range(3)],
                                     producer_id=11, producer_epoch=0, base_sequence=seq))

    first = log.append(batch(0), 0, 1)
    retry = log.append(batch(0), 0, 2)
    assert (retry.base_offset, retry.last_offset) == (first.base_offset, first.last_offset) == (0, 2)
    assert log.log_end_offset == 3
    log.append(batch(3), 0, 3)
    log.close()
    reopened = Log.open(tmp_path / "t-0", LogConfig.from_props({}), 4)
    assert reopened.append(batch(3), 0, 5).base_offset == 3          # state rebuilt from the log
    assert reopened.log_end_offset == 6
    with pytest.raises(ProducerStateError):
        reopened.append(batch(9), 0, 6)
    reopened.close()
