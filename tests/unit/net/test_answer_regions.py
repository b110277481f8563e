"""A Fetch answer's file region read after its segment changed: never misframed bytes."""

import os

import pytest

from tierlog.net.answer_order import AnswerOrder
from tierlog.storage.results import FileRegion
from tierlog.storage.shared_fd import SharedFd


class _Transport:
    def __init__(self):
        self.written: list[bytes] = []

    def writelines(self, parts):
        self.written += [bytes(p) for p in parts]

    def get_write_buffer_size(self):
        return 0


def _answers() -> AnswerOrder:
    answers = AnswerOrder()
    answers.transport = _Transport()  # type: ignore[assignment]
    answers._zero_copy = False
    return answers


def _region(tmp_path, data: bytes) -> FileRegion:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    return FileRegion(SharedFd(os.open(path, os.O_RDWR)), 0, len(data))


def test_a_region_goes_out_whole_after_its_size(tmp_path):
    answers, out = _answers(), []
    answers._put_whole(out, [b"head", _region(tmp_path, b"x" * 100)])
    assert out == [(104).to_bytes(4, "big"), b"head", b"x" * 100]


def test_a_region_truncated_since_the_read_raises_rather_than_send_a_short_answer(tmp_path):
    """A leader that became a follower truncated the segment under an answer not yet sent: the
    answer's size was counted from the region, so its bytes falling short would misframe every
    answer after it on the connection; the send raises (the connection ends) instead."""
    answers, out = _answers(), [b"an earlier whole answer"]
    region = _region(tmp_path, b"x" * 100)
    os.ftruncate(region.fd, 40)
    with pytest.raises(OSError, match="truncated"):
        answers._put_whole(out, [b"head", region])
    assert answers.transport.written == [b"an earlier whole answer"]  # type: ignore[union-attr]
