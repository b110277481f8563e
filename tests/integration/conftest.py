import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from nodeproc import NodeProcess


@pytest.fixture
def node(tmp_path):
    """A fresh single tierlog node process on a free port; stopped after the test."""
    n = NodeProcess(tmp_path / "node-1").start()
    yield n
    if n.alive():
        n.stop()


@pytest.fixture(scope="module")
def shared_node(tmp_path_factory):
    """One node shared by a module's tests (each test uses its own topics)."""
    n = NodeProcess(tmp_path_factory.mktemp("shared") / "node-1").start()
    yield n
    if n.alive():
        n.stop()
