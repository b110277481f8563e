"""Early writeback: whole pages behind the tail, every STEP_BYTES of appends, off the caller's thread."""
import os
from itertools import pairwise

import pytest
from storage_helpers import NOW, batch, config

from tierlog.storage import Log, writeback
from tierlog.storage.writeback import PAGE, STEP_BYTES, writeback_end


def test_writeback_is_due_once_a_step_of_whole_pages_is_behind_the_tail():
    assert writeback_end(0, STEP_BYTES - 1) is None
    assert writeback_end(0, STEP_BYTES + 100) == STEP_BYTES
    assert writeback_end(PAGE, PAGE + STEP_BYTES + PAGE + 7) == PAGE + STEP_BYTES + PAGE
    assert writeback_end(STEP_BYTES, STEP_BYTES + 10) is None


def test_appends_schedule_contiguous_page_aligned_ranges_below_the_tail(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(writeback, "schedule", lambda fd, offset, n: calls.append((offset, n)))
    log = Log.open(tmp_path / "t-0", config(internal_segment_bytes=64 << 20), NOW)
    for _ in range(300):
        log.append(batch(count=10, value_size=1000), 0, NOW)
    assert log.segment_count == 1
    size = log.size_in_bytes
    assert len(calls) >= 2
    assert calls[0][0] == 0
    for (off, n), (nxt, _) in pairwise(calls):
        assert off + n == nxt, "ranges follow each other without gaps or overlaps"
    for off, n in calls:
        assert off % PAGE == 0 and n % PAGE == 0 and n >= STEP_BYTES
    assert calls[-1][0] + calls[-1][1] <= size - size % PAGE, "the tail page is never written back early"
    log.close()


@pytest.mark.skipif(writeback._WRITEBACK is None, reason="sync_file_range is Linux's")
def test_the_writeback_thread_starts_writeback_of_a_real_file(tmp_path):
    with open(tmp_path / "f", "wb") as f:
        f.write(os.urandom(2 * STEP_BYTES))
        f.flush()
        assert writeback._WRITEBACK._sync(f.fileno(), 0, STEP_BYTES, 2) == 0
        writeback.schedule(f.fileno(), 0, 2 * STEP_BYTES)
        writeback._WRITEBACK._queue.join()           # the thread took it (and a failure would only be logged)
