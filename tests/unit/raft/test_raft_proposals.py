"""ProposalQueue: linger, full batches, batch size, clear."""

import pytest

from tierlog.raft.proposals import ProposalQueue


def test_linger_starts_with_the_first_record():
    q = ProposalQueue(append_linger_ms=25, max_batch_records=4)
    q.add([b"a"], 100)
    q.add([b"b"], 110)
    assert len(q) == 2 and q.due_ms() == 125


def test_a_full_batch_is_due_at_once_and_batches_are_capped():
    q = ProposalQueue(append_linger_ms=25, max_batch_records=2)
    q.add([b"a", b"b", b"c"], 0)
    assert q.due_ms() == 0
    assert q.take_batches() == [[b"a", b"b"], [b"c"]]
    assert len(q) == 0


def test_empty_proposals_are_refused_and_clear_drops_the_queue():
    q = ProposalQueue(append_linger_ms=0, max_batch_records=2)
    with pytest.raises(ValueError):
        q.add([], 0)
    q.add([b"a"], 0)
    q.clear()
    assert len(q) == 0 and q.take_batches() == []
