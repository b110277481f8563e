"""``read_ahead``: results in order, errors where they belong, the fetches ahead bounded."""

import threading

import pytest

from tierlog.spark.read_ahead import read_ahead


@pytest.mark.parametrize("ahead", [0, 1, 4])
def test_results_come_in_order(ahead):
    assert list(read_ahead(lambda n: n * n, range(10), ahead)) == [n * n for n in range(10)]


def test_an_error_is_raised_where_its_result_would_be():
    def fetch(n):
        if n == 3:
            raise OSError("gone")
        return n
    it = read_ahead(fetch, range(10), 2)
    assert [next(it), next(it), next(it)] == [0, 1, 2]
    with pytest.raises(OSError, match="gone"):
        next(it)


def test_no_more_than_ahead_fetches_run_before_the_first_result_is_taken():
    started, release = [], threading.Event()

    def fetch(n):
        started.append(n)
        release.wait(5)
        return n
    it = read_ahead(fetch, range(10), 2)
    release.set()
    assert next(it) == 0
    assert max(started) <= 2             # 0 taken; at most 1 and 2 ahead of it
    it.close()


@pytest.mark.parametrize("depth", [0, 1, 3])
def test_a_background_reader_gives_every_item_then_its_error(depth):
    from tierlog.spark.read_ahead import in_background

    def reader():
        yield from range(5)
        raise OSError("broker gone")
    it = in_background(reader, depth)
    assert [next(it) for _ in range(5)] == list(range(5))
    with pytest.raises(OSError, match="broker gone"):
        next(it)


def test_closing_a_background_reader_closes_its_iterator_on_its_thread():
    from tierlog.spark.read_ahead import in_background
    closed = threading.Event()

    def reader():
        try:
            yield from range(1000)
        finally:
            closed.set()
    it = in_background(reader, 2)
    assert next(it) == 0
    it.close()
    assert closed.wait(5)
