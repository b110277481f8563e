"""remoteStorage=table's cut of a range by what the table holds (sans-IO)."""
from tierlog.spark.planning import OffsetRange
from tierlog.spark.table_cover import DataFile, cut_range, group_files


def R(start, end):
    return OffsetRange("t", 0, start, end)


FILES = [DataFile("a", 100, 199, 10), DataFile("b", 200, 299, 10), DataFile("c", 301, 399, 10)]   # 300: a marker


def test_the_table_serves_what_it_covers_and_the_rest_goes_elsewhere():
    cut = cut_range(R(0, 1000), 399, FILES)
    assert cut.table == R(100, 400)
    assert [f.path for f in cut.files] == ["a", "b", "c"]
    assert cut.rest == (R(0, 100), R(400, 1000))       # below the table's first offset, the tail


def test_only_the_files_overlapping_the_range_are_read():
    cut = cut_range(R(250, 320), 399, FILES)
    assert cut.table == R(250, 320) and [f.path for f in cut.files] == ["b", "c"] and cut.rest == ()
    assert [f.path for f in cut_range(R(300, 301), 399, FILES).files] == []     # a marker only: no file, no row


def test_covered_bounds_the_table_not_its_files():
    cut = cut_range(R(150, 500), 250, FILES)            # a file may reach past what a commit recorded: never
    assert cut.table == R(150, 251) and cut.rest == (R(251, 500),)


def test_nothing_covered_or_a_range_outside_goes_elsewhere_whole():
    assert cut_range(R(0, 50), -1, FILES).rest == (R(0, 50),)
    assert cut_range(R(0, 50), 399, []).rest == (R(0, 50),)
    assert cut_range(R(0, 100), 399, FILES).table is None            # wholly below the table
    assert cut_range(R(400, 450), 399, FILES) .rest == (R(400, 450),)
    assert cut_range(R(5, 5), 399, FILES).rest == ()


def test_files_are_grouped_up_to_the_task_bytes():
    files = tuple(DataFile(str(i), i, i, 40) for i in range(5)) + (DataFile("big", 9, 9, 500),)
    assert [[f.path for f in g] for g in group_files(files, most=100)] == [["0", "1"], ["2", "3"], ["4"], ["big"]]
