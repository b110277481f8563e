"""FsObjectStore specifics: atomic puts, listing by prefix, tidy deletes."""

from __future__ import annotations

import pytest

from tierlog.tiered import (
    FsObjectStore,
    RemoteResourceNotFoundError,
    RemoteStorageError,
)


def test_listing_by_prefix_ignores_temporary_files_and_other_partitions(tmp_path):
    store = FsObjectStore(tmp_path / "r")
    for key in ("orders-0-x/a.log", "orders-0-x/b.log", "orders-1-x/a.log", "clicks-0-y/a.log", "top"):
        store.put_bytes(key, b"1")
    (tmp_path / "r" / "orders-0-x" / "c.log.123.tmp").write_bytes(b"torn")
    assert store.list_keys("orders-0-") == ["orders-0-x/a.log", "orders-0-x/b.log"]
    assert store.list_keys("orders-") == ["orders-0-x/a.log", "orders-0-x/b.log", "orders-1-x/a.log"]
    assert store.list_keys("orders-0-x/b") == ["orders-0-x/b.log"]
    assert len(store.list_keys("")) == 5
    assert FsObjectStore(tmp_path / "missing").list_keys("") == []


def test_put_replaces_and_delete_removes_empty_directories(tmp_path):
    store = FsObjectStore(tmp_path / "r")
    store.put_bytes("p/q/k", b"old")
    store.put_bytes("p/q/k", b"new")
    assert store.get_range("p/q/k", 0) == b"new"
    assert store.checksum("p/q/k").size == 3
    store.delete("p/q/k")
    store.delete("p/q/k")
    assert not (tmp_path / "r" / "p").exists()
    assert (tmp_path / "r").is_dir()
    with pytest.raises(RemoteResourceNotFoundError):
        store.checksum("p/q/k")


@pytest.mark.parametrize("key", ["", "/abs", "a/../b", "a//b", "./a"])
def test_keys_that_escape_the_root_are_programmer_errors(tmp_path, key):
    with pytest.raises(AssertionError):
        FsObjectStore(tmp_path).put_bytes(key, b"x")


def test_check_creates_the_root_or_says_why_it_cannot(tmp_path):
    FsObjectStore(tmp_path / "a" / "b").check()
    assert (tmp_path / "a" / "b").is_dir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(RemoteStorageError, match="cannot create remote storage directory"):
        FsObjectStore(tmp_path / "file" / "root").check()
