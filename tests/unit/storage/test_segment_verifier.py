"""SegmentVerifier: closed segments are CRC-checked in the background, at a bounded rate."""

from storage_helpers import NOW, batch, config

from tierlog.storage import LogManager
from tierlog.storage.segment_verifier import SegmentVerifier


def _log_with_segments(manager, topic, batches=12):
    log = manager.create(topic, 0, None, config(), NOW)      # 4 KiB segments
    for _ in range(batches):
        log.append(batch(count=5, value_size=200), 0, NOW)
    assert len(log.rolled_segments()) >= 3
    return log


def _flip(path, position):
    with open(path, "r+b") as f:
        f.seek(position)
        b = f.read(1)
        f.seek(position)
        f.write(bytes([b[0] ^ 0x40]))


def test_a_flipped_byte_in_a_closed_segment_is_found_with_the_offset_after_the_last_good_batch(tmp_path):
    manager = LogManager([tmp_path], NOW)
    log = _log_with_segments(manager, "t")
    second = log.rolled_segments()[1]
    first_batch_size = 12 + int.from_bytes(second.log_path.read_bytes()[8:12], "big")
    _flip(second.log_path, first_batch_size + 100)                 # inside the segment's second batch
    verifier = SegmentVerifier(bytes_per_second=1024)              # 1 KiB/s: the walk takes several steps
    found, steps = [], 0
    while not found and steps < 100:
        found = verifier.step(manager.logs(), 1000)
        steps += 1
    assert steps > 2, "the budget bounds each step"
    (bad,) = found
    assert bad.key == ("t", 0) and bad.segment_base == second.base_offset
    assert bad.position == first_batch_size and bad.offset == second.base_offset + 5 and "CRC" in bad.error
    manager.close()


def test_the_manager_reports_corruption_once_per_walk_and_a_sound_log_never(tmp_path):
    reported = []
    manager = LogManager([tmp_path], NOW, verify_bytes_per_second=1 << 30, on_corrupt=reported.append)
    _log_with_segments(manager, "sound")
    bad_log = _log_with_segments(manager, "bad")
    _flip(bad_log.rolled_segments()[0].log_path, 70)
    manager.tick(NOW + 1000)
    assert [(c.key, c.offset) for c in reported] == [(("bad", 0), 0)]
    bad_log.truncate_to(0)                                          # what a follower does
    reported.clear()
    for i in range(2, 5):
        manager.tick(NOW + i * 1000)
    assert reported == []
    manager.close()


class _IdleLog:
    """A log with only its active segment, counting how often the verifier asks for its segments."""
    offline = False
    has_rolled_segments = False
    asked = 0

    def rolled_segments(self):
        _IdleLog.asked += 1
        return []


def test_a_step_over_thousands_of_idle_logs_looks_at_a_bounded_number_and_the_round_goes_on(tmp_path):
    from tierlog.storage.segment_verifier import LOGS_LOOKED_AT_PER_STEP
    manager = LogManager([tmp_path], NOW)
    busy = _log_with_segments(manager, "t")
    logs = {(f"idle-{i:05d}", 0): _IdleLog() for i in range(3 * LOGS_LOOKED_AT_PER_STEP)}
    logs[("zz-busy", 0)] = busy                                # sorted last: reached on the 4th step
    verifier = SegmentVerifier(bytes_per_second=10 * 1024 * 1024)
    flipped = busy.rolled_segments()[0]
    _flip(flipped.log_path, 100)
    found = []
    for step in range(4):
        found += verifier.step(logs, elapsed_ms=1000)
        assert verifier._looked <= LOGS_LOOKED_AT_PER_STEP
        assert (found == []) == (step < 3)
    assert _IdleLog.asked == 0 and found[0].key == ("zz-busy", 0)
    manager.close()
