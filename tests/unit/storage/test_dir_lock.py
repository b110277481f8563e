"""DirLock: one holder per directory, its pid in .lock, released with the descriptor."""
import os

import pytest

from tierlog.storage.dir_lock import LOCK_FILE, DirInUseError, DirLock, check_free


def test_second_lock_is_refused_naming_the_dir_and_holder(tmp_path):
    lock = DirLock.acquire(tmp_path / "data")
    assert (tmp_path / "data" / LOCK_FILE).read_text() == f"{os.getpid()}\n"
    with pytest.raises(DirInUseError, match=rf"{tmp_path / 'data'} is in use .*\(pid {os.getpid()}\)"):
        DirLock.acquire(tmp_path / "data")
    with pytest.raises(DirInUseError):
        check_free(tmp_path / "data")
    lock.release()
    check_free(tmp_path / "data")
    DirLock.acquire(tmp_path / "data").release()


def test_a_dir_never_locked_is_free_and_left_untouched(tmp_path):
    check_free(tmp_path / "absent")
    assert not (tmp_path / "absent").exists()
