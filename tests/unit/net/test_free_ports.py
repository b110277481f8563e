"""tierlog up --listen HOST:0's ports: a free run below the kernel's ephemeral range."""
import socket

import pytest

from tierlog.net import free_ports


def test_a_free_block_lies_below_the_ephemeral_range_and_can_be_bound():
    base = free_ports.free_port_block("127.0.0.1", (0, 1, 100, 201))
    assert base >= free_ports.LOWEST_PORT and base + 201 < free_ports.ephemeral_start()
    for offset in (0, 1, 100, 201):
        with socket.socket() as s:
            s.bind(("127.0.0.1", base + offset))


def test_a_block_with_a_taken_port_is_passed_over(tmp_path, monkeypatch):
    (tmp_path / "range").write_text("20010\t60999\n")
    monkeypatch.setattr(free_ports, "LOCAL_PORT_RANGE", tmp_path / "range")
    taken = {20005, 20006, 20007, 20008}            # base + 5 for every base but 20004
    monkeypatch.setattr(free_ports, "_bindable", lambda host, port: port not in taken)
    assert free_ports.free_port_block("127.0.0.1", (0, 5)) == 20004


def test_no_room_below_the_ephemeral_range_is_an_error(tmp_path, monkeypatch):
    (tmp_path / "range").write_text("20100 60999")
    monkeypatch.setattr(free_ports, "LOCAL_PORT_RANGE", tmp_path / "range")
    with pytest.raises(OSError, match="no room"):
        free_ports.free_port_block("127.0.0.1", (0, 200))


def test_without_the_proc_file_the_linux_default_is_assumed(tmp_path, monkeypatch):
    monkeypatch.setattr(free_ports, "LOCAL_PORT_RANGE", tmp_path / "missing")
    assert free_ports.ephemeral_start() == 32768
